"""The embedded SQLite store against the shared store contract, plus SQLite-specific checks."""

from __future__ import annotations

import numpy as np
import pytest

from esrag.errors import NotIndexedError, StoreError
from esrag.stores.base import Filters
from esrag.stores.sqlite import SQLiteStore
from store_suite import FIELDS, StoreContract, make_chunk, meta, unit


@pytest.fixture
def store(tmp_path):
    s = SQLiteStore(tmp_path / "idx" / "esrag.db")
    s.ensure(meta())
    yield s
    s.close()


class TestSQLiteStore(StoreContract):
    pass


def test_search_before_ingest_says_what_to_do(tmp_path):
    s = SQLiteStore(tmp_path / "empty.db")
    assert s.meta() is None
    with pytest.raises(NotIndexedError, match="esrag ingest"):
        s.bm25("x", 3, Filters(), FIELDS)


def test_durable_across_connections(tmp_path):
    path = tmp_path / "d.db"
    s = SQLiteStore(path)
    s.ensure(meta())
    s.write([make_chunk(0, "persisted words")], np.stack([unit(1)]), ["m"])
    s.close()
    again = SQLiteStore(path)
    assert again.bm25("persisted", 3, Filters(), FIELDS)[0][0] == "docs-a.md-0"
    assert again.knn(unit(1), 1, Filters(), 10)[0][0] == "docs-a.md-0"
    again.close()


def test_knn_sees_what_another_connection_wrote_and_deleted(tmp_path):
    """A long-running reader (``esrag serve``) and a later writer (``esrag ingest`` in another
    process) on one file: the reader's kNN must see the new chunks and forget the deleted ones."""
    path = tmp_path / "shared.db"
    server = SQLiteStore(path)
    server.ensure(meta())
    server.write([make_chunk(0, "first")], np.stack([unit(0)]), ["m"])
    assert [i for i, _ in server.knn(unit(0), 5, Filters(), 10)] == ["docs-a.md-0"]  # matrix read
    ingest = SQLiteStore(path)
    ingest.write([make_chunk(1, "second")], np.stack([unit(1)]), ["m"])
    assert server.knn(unit(1), 1, Filters(), 10)[0][0] == "docs-a.md-1"
    ingest.delete(["docs-a.md-0"])
    assert [i for i, _ in server.knn(unit(0), 5, Filters(), 10)] == ["docs-a.md-1"]
    ingest.close()
    server.close()


def test_failed_batch_writes_nothing(tmp_path):
    s = SQLiteStore(tmp_path / "t.db")
    s.ensure(meta())
    good = make_chunk(0, "fine")
    bad = make_chunk(1, "x")
    bad.text = None  # NOT NULL text: the whole transaction must roll back
    with pytest.raises(StoreError, match="could not write 2 chunks: NOT NULL constraint failed"):  # one line, no traceback
        s.write([good, bad], np.stack([unit(0), unit(1)]), ["m", "m"])
    assert s.stats()["chunks"] == 0


def test_fts_index_stays_in_sync_after_updates_and_deletes(tmp_path):
    s = SQLiteStore(tmp_path / "t.db")
    s.ensure(meta())
    s.write([make_chunk(0, "alpha")], np.stack([unit(0)]), ["m"])
    s.write([make_chunk(0, "beta")], np.stack([unit(0)]), ["m"])
    s.delete(["docs-a.md-0"])
    s.write([make_chunk(1, "beta gamma")], np.stack([unit(1)]), ["m"])
    s._db.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('integrity-check', 1)")
    assert [i for i, _ in s.bm25("beta", 5, Filters(), FIELDS)] == ["docs-a.md-1"]
    assert s.bm25("alpha", 5, Filters(), FIELDS) == []


def test_one_store_shared_by_threads_reads_consistently_while_another_writes(tmp_path):
    """``esrag serve`` shares one SQLiteStore between request threads: eight readers running
    BM25, kNN and get at once (while a ninth thread writes other chunks) see exactly what one
    thread sees alone, and nothing raises (sqlite3 cursors of one connection are not shareable)."""
    from concurrent.futures import ThreadPoolExecutor

    s = SQLiteStore(tmp_path / "threads.db")
    s.ensure(meta())
    words = ["queue", "cache", "route", "blade", "mail", "event", "schedule", "session"]
    chunks = [make_chunk(i, f"{words[i % 8]} worker {words[(i * 3) % 8]} text {i}", path=f"p{i % 5}.md") for i in range(200)]
    s.write(chunks, np.stack([unit(i % 8, (i * 3) % 8) for i in range(200)]), ["m"] * 200)

    def read(i: int):
        q = words[i % 8]
        b = s.bm25(q, 10, Filters(corpora=["docs"]), FIELDS)
        k = s.knn(unit(i % 8), 10, Filters(corpora=["docs"]), 10)
        # ids only for BM25: the writer's new chunks change the collection statistics (IDF), not the order
        return q, [cid for cid, _ in b], k, [c.id for c in s.get([cid for cid, _ in b])]

    alone = {q: (b, k, g) for q, b, k, g in map(read, range(8))}

    def write_more(n: int) -> None:
        for j in range(n):
            extra = make_chunk(1000 + j, f"unrelated zzz{j}", corpus="other", path="z.md")
            s.write([extra], np.stack([unit(7)]), ["m"])

    with ThreadPoolExecutor(9) as pool:
        writer = pool.submit(write_more, 30)
        for q, b, k, g in pool.map(read, range(400)):
            assert (b, k, g) == alone[q]
        writer.result()
    assert s.stats()["corpora"]["other"]["chunks"] == 30
    s.close()


def _paragraphs(limit: int) -> list[tuple[str, str]]:
    """(file name, paragraph) of the Laravel docs in the shared data, in file order."""
    from paths import DATA

    out = []
    for path in sorted((DATA / "corpora" / "laravel-docs").glob("*.md")):
        for para in path.read_text(encoding="utf-8").split("\n\n"):
            if len(para.split()) >= 8:
                out.append((path.name, para))
    return out[:limit]


def test_bm25_scored_term_by_term_equals_the_one_statement_or_query(tmp_path):
    """The BM25 leg sums each term's kept FTS5 scores (esrag.stores.sqlite_matrix); it must give
    the ids and scores of the OR query in one statement, which runs inside this thread's own
    write transaction — with and without filters, column weights, repeated and stemmed terms."""
    import random

    paras = _paragraphs(600)
    s = SQLiteStore(tmp_path / "l.db")
    s.ensure(meta())
    chunks = [
        make_chunk(i, text, corpus=("web" if i % 3 else "cli"), path=name, section=text.split("\n")[0][:60])
        for i, (name, text) in enumerate(paras)
    ]
    s.write(chunks, np.stack([unit(i % 8) for i in range(len(chunks))]), ["m"] * len(chunks))
    words = sorted({w.strip(".,:;()`'\"").lower() for _, t in paras for w in t.split() if w.isalpha()})
    rng = random.Random(5)
    queries = [" ".join(rng.sample(words, rng.randint(1, 5))) for _ in range(80)]
    queries += ["how do I use the queue", "queue queues queued", "use"]
    cases = [
        (FIELDS, Filters()),
        ({"text": 1.0, "section_path": 3.0}, Filters(corpora=["web"])),
        (FIELDS, Filters(path_prefix="a", exclude_ids=[chunks[1].id])),
    ]
    compared = 0
    for q in queries:
        for fields, filters in cases:
            kept = s.bm25(q, 20, filters, fields)
            with s._db:  # this thread's transaction: the one-statement path
                one = s.bm25(q, 20, filters, fields)
            assert [round(x, 9) for _, x in kept] == [round(x, 9) for _, x in one], q
            tie = min((x for _, x in one), default=None)
            assert {i for i, x in kept if x != tie} == {i for i, x in one if x != tie}, q
            compared += bool(one)
    assert compared > 150  # most queries match something
    s.close()


def test_bm25_kept_term_scores_follow_another_connections_writes(tmp_path):
    """A serving store keeps a term's scores; another connection (``esrag ingest``) adds and
    deletes chunks holding it: the next search ranks the new rows and drops the deleted ones,
    with IDF taken over the table as it is now."""
    path = tmp_path / "shared.db"
    server = SQLiteStore(path)
    server.ensure(meta())
    server.write([make_chunk(0, "queues run jobs"), make_chunk(1, "routing")], np.stack([unit(0), unit(1)]), ["m", "m"])
    before = server.bm25("queues", 5, Filters(), FIELDS)
    assert [i for i, _ in before] == ["docs-a.md-0"]
    ingest = SQLiteStore(path)
    ingest.write([make_chunk(2, "queues queues everywhere")], np.stack([unit(2)]), ["m"])
    after = server.bm25("queues", 5, Filters(), FIELDS)
    assert [i for i, _ in after] == ["docs-a.md-2", "docs-a.md-0"]
    assert after[1][1] != before[0][1]  # one more row holding the term: its IDF moved
    ingest.delete(["docs-a.md-2"])
    assert [i for i, _ in server.bm25("queues", 5, Filters(), FIELDS)] == ["docs-a.md-0"]
    ingest.close()
    server.close()


def test_bm25_term_cache_stays_within_its_postings_and_still_ranks_alike(tmp_path, monkeypatch):
    """Past ``TERM_CACHE_POSTINGS`` the least recently used terms go; what is evicted is read
    again, with the same ranking as the one-statement query."""
    import esrag.stores.sqlite_matrix as sm

    monkeypatch.setattr(sm, "TERM_CACHE_POSTINGS", 40)
    s = SQLiteStore(tmp_path / "small.db")
    s.ensure(meta())
    texts = [f"queue worker {i} handles jobs and retries" if i % 2 else f"router {i} maps routes to controllers" for i in range(60)]
    s.write([make_chunk(i, t) for i, t in enumerate(texts)], np.stack([unit(i % 8) for i in range(60)]), ["m"] * 60)
    for q in ["queue jobs", "router routes", "controllers retries", "queue router", "jobs"] * 2:
        kept = s.bm25(q, 10, Filters(), FIELDS)
        with s._db:
            one = s.bm25(q, 10, Filters(), FIELDS)
        assert [round(x, 9) for _, x in kept] == [round(x, 9) for _, x in one], q
        matrix = s._vectors()
        assert matrix._postings <= 40 or len(matrix._terms) == 1
    s.close()
