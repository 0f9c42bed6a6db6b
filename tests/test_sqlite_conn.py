"""The embedded store's connections (:mod:`esrag.stores.sqlite_conn`): reads on per-thread
connections beside one locked writer (issue 39, "many agents at once")."""

from __future__ import annotations

import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from esrag.stores.base import Filters
from esrag.stores.sqlite import SQLiteStore
from esrag.stores.sqlite_conn import Connections
from store_suite import FIELDS, make_chunk, meta, unit


def connections(tmp_path) -> Connections:
    path = tmp_path / "c.db"
    db = sqlite3.connect(str(path), check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    conns = Connections(db, path)
    with conns:
        conns.execute("CREATE TABLE t (x INTEGER)")
        conns.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(10)])
    return conns


def test_reads_answer_during_another_threads_open_write_transaction_and_see_it_only_once_committed(tmp_path):
    """A thread holding a write transaction open (a sync writing a version) neither blocks nor
    leaks into eight reading threads: they answer at once with the committed rows; the writing
    thread reads its own uncommitted rows; after the commit every reader sees them all."""
    conns = connections(tmp_path)
    opened, release, inside = threading.Event(), threading.Event(), []

    def write() -> None:
        with conns:
            conns.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(100, 105)])
            inside.append(conns.read("SELECT count(*) FROM t").fetchone()[0])
            opened.set()
            assert release.wait(30)

    writer = threading.Thread(target=write)
    writer.start()
    assert opened.wait(30)

    def count(_: int) -> tuple[int, float]:
        t0 = time.perf_counter()
        n = conns.read("SELECT count(*) FROM t").fetchone()[0]
        return n, time.perf_counter() - t0

    timer = threading.Timer(6, release.set)  # a design where reads wait for the writer fails, not hangs
    timer.start()
    try:
        with ThreadPoolExecutor(8) as pool:
            during = list(pool.map(count, range(64)))
    finally:
        timer.cancel()
        release.set()
        writer.join(30)
    assert inside == [15]  # the writer sees its own rows inside its transaction
    assert {n for n, _ in during} == {10}  # nobody else sees them before the commit...
    assert max(s for _, s in during) < 5  # ...and nobody waited for the writer's lock (held until release)
    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(lambda _: count(0)[0], range(16))) == {15}
    conns.close()


def test_readers_cannot_write_and_those_of_ended_threads_are_closed(tmp_path):
    conns = connections(tmp_path)
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        conns.read("INSERT INTO t VALUES (1)")
    for _ in range(5):  # five short-lived threads, one reader each; each new one closes the ended ones'
        t = threading.Thread(target=lambda: conns.read("SELECT 1"))
        t.start()
        t.join()
    assert conns.readers() <= 2  # this thread's and the last ended thread's, not six
    conns.close()
    assert conns.readers() == 0
    with pytest.raises(sqlite3.ProgrammingError):
        conns.read("SELECT 1")


def test_searching_threads_see_each_write_of_another_thread_whole(tmp_path):
    """The shared vector matrix follows the writes of another thread of the same store: while
    one thread writes batches of 5 chunks (one transaction each), eight threads searching BM25
    and kNN only ever see whole batches (a multiple of 5 new chunks), and at the end all of them."""
    s = SQLiteStore(tmp_path / "m.db")
    s.ensure(meta())
    base = [make_chunk(i, f"queue worker text {i}", path="a.md") for i in range(20)]
    s.write(base, np.stack([unit(i % 8) for i in range(20)]), ["m"] * 20)
    done = threading.Event()

    def write() -> None:
        for b in range(12):
            batch = [make_chunk(100 + b * 5 + j, f"zebra stripes {b} {j}", corpus="new", path=f"z{b}.md") for j in range(5)]
            s.write(batch, np.stack([unit(3)] * 5), ["m"] * 5)
        done.set()

    def search(i: int) -> tuple[int, int]:
        k = s.knn(unit(3), 200, Filters(corpora=["new"]), 0)
        b = s.bm25("zebra", 200, Filters(corpora=["new"]), FIELDS) if i % 2 else s.bm25("zebra", 200, Filters(), FIELDS)
        return len(k), len(b)

    with ThreadPoolExecutor(9) as pool:
        w = pool.submit(write)
        seen = []
        while not done.is_set():
            seen += list(pool.map(search, range(16)))
        w.result()
    assert all(nk % 5 == 0 and nb % 5 == 0 for nk, nb in seen), seen
    assert search(0) == (60, 60) and search(1) == (60, 60)
    s.close()


def test_bm25_leaves_out_a_translation_written_later_by_another_connection(tmp_path):
    """With no translated chunk the default exclusion of translations is skipped (BM25 ranks in
    FTS5 alone, the same hits and scores as the filtered query); a translated chunk another
    connection (another process's ingest) commits later is excluded at the next search."""
    path = tmp_path / "t.db"
    s = SQLiteStore(path)
    s.ensure(meta())
    s.write([make_chunk(i, f"configure the formatter {i}", path=f"g{i}.md") for i in range(3)], np.stack([unit(0)] * 3), ["m"] * 3)
    default = Filters(translations=False)
    fast = s.bm25("formatter", 10, default, FIELDS)
    assert len(fast) == 3 and fast == s.bm25("formatter", 10, Filters(translations=False, corpora=["docs"]), FIELDS)  # join path
    other = SQLiteStore(path)
    ja = make_chunk(9, "configure the formatter formatter", path="ja/g.md", metadata={"language": "ja", "translation": "ja"})
    other.write([ja], np.stack([unit(0)]), ["m"])
    other.close()
    assert "docs-ja/g.md-9" not in {i for i, _ in s.bm25("formatter", 10, default, FIELDS)}
    assert "docs-ja/g.md-9" in {i for i, _ in s.bm25("formatter", 10, Filters(translations=True), FIELDS)}
    s.close()
