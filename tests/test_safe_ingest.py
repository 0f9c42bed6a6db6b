"""Safe by default (issue 26): the deletion guard, on the embedded store and on both
Elasticsearch test nodes (9.2.8, 8.15.5), with real Laravel docs."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import uuid
import warnings
from pathlib import Path

import pytest

from conftest import es_params
from esrag.chunking.header import HeaderChunker
from esrag.errors import StoreError
from esrag.ingest import Ingester
from esrag.stores.base import Filters
from fault_helpers import HashEmbedder
from paths import LARAVEL

FILES = ["scheduling.md", "queues.md", "cache.md", "routing.md", "blade.md", "mail.md"]
EMBED = ["section_path", "text"]
BM25 = {"text": 1.0, "section_path": 1.0}


@pytest.fixture(params=["sqlite", *es_params()])
def store(request, tmp_path):
    """Each store under test: the embedded one, then each Elasticsearch node (dropped after)."""
    if request.param == "sqlite":
        from esrag.stores.sqlite import SQLiteStore

        s = SQLiteStore(tmp_path / "db" / "esrag.db")
        yield s
        s.close()
        return
    request.getfixturevalue("es_nodes")
    from esrag.stores.elastic import ElasticStore

    s = ElasticStore(request.param, f"esrag-t-{uuid.uuid4().hex[:12]}")
    yield s
    s.drop()
    s.close()


def make_tree(root: Path, names: list[str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(LARAVEL / name, root / name)
    return root


def run(store, root: Path, emb: HashEmbedder, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the test nodes have no ingest processors (a ClusterWarning)
        ingester = Ingester(store, emb.spec, lambda: emb, HeaderChunker(), EMBED, BM25, **kw)
        return ingester.run(root, "laravel", ["*.md"], [])


def snapshot(store) -> dict:
    """Every stored chunk of the corpus: {path: {id: (content hash, meta hash)}}."""
    return {p: {i: (e.content_hash, e.meta_hash) for i, e in entries.items()} for p, entries in store.manifest("laravel").items()}


def test_an_empty_folder_over_a_corpus_is_refused_then_allowed(store, tmp_path):
    emb = HashEmbedder()
    tree = make_tree(tmp_path / "docs", FILES)
    first = run(store, tree, emb)
    assert first.chunks_new > 50 and not first.failures
    assert first.deletion_guard.chunks_stored == 0 and not first.deletion_guard.refused
    before = snapshot(store)

    empty = tmp_path / "empty"
    empty.mkdir()
    refused = run(store, empty, emb)
    guard = refused.deletion_guard
    assert guard.refused and guard.checked and guard.would_delete == guard.chunks_stored == first.chunks_new
    assert guard.files == len(FILES) and len(guard.examples) == 5 and {e["why"] for e in guard.examples} == {"gone"}
    assert refused.chunks_deleted == 0 and len(refused.failures) == 1
    message = refused.failures[0].error
    assert f"refused to delete {first.chunks_new} of the {first.chunks_new} chunks (100%)" in message
    assert "no file at all" in message and "--allow-delete" in message and "and 1 more" in message
    assert guard.examples[0]["path"] in message
    store.refresh()
    assert snapshot(store) == before  # every chunk in place

    # the setting cannot allow an empty tree; --allow-delete can
    still = run(store, empty, emb, max_delete_fraction=1.0)
    assert still.deletion_guard.refused and snapshot(store) == before
    allowed = run(store, empty, emb, allow_delete=True)
    assert not allowed.failures and allowed.chunks_deleted == first.chunks_new
    assert allowed.deletion_guard.allow_delete and not allowed.deletion_guard.checked
    assert snapshot(store) == {}


def test_a_tree_that_lost_two_thirds_of_its_files_is_refused_and_nothing_is_written(store, tmp_path):
    emb = HashEmbedder()
    tree = make_tree(tmp_path / "docs", FILES)
    first = run(store, tree, emb)
    before = snapshot(store)
    for name in FILES[2:]:
        (tree / name).unlink()
    shutil.copy(LARAVEL / "validation.md", tree / "validation.md")  # a new file: not written either
    calls = emb.calls
    refused = run(store, tree, emb)
    guard = refused.deletion_guard
    gone = sum(len(before[n]) for n in FILES[2:])
    assert guard.refused and guard.would_delete == gone and guard.files == 4
    assert guard.fraction == pytest.approx(gone / first.chunks_new) and guard.fraction > 0.5
    assert emb.calls == calls and refused.chunks_new == 0  # nothing embedded, nothing written
    store.refresh()
    assert snapshot(store) == before

    allowed = run(store, tree, emb, allow_delete=True)
    assert not allowed.failures and allowed.chunks_deleted == gone and allowed.chunks_new > 0
    store.refresh()
    after = snapshot(store)
    assert set(after) == {"scheduling.md", "queues.md", "validation.md"}
    assert after["scheduling.md"] == before["scheduling.md"]


def test_a_tree_that_lost_two_of_its_three_files_is_refused_however_few_chunks_they_held(store, tmp_path):
    """Issue 39: the guard counts files as well as chunks. Two small files of three go (a few
    per cent of the chunks): refused, exit non-zero, every chunk kept."""
    emb = HashEmbedder()
    tree = make_tree(tmp_path / "docs", ["billing.md", "concurrency.md", "redirects.md"])
    first = run(store, tree, emb)
    before = snapshot(store)
    (tree / "concurrency.md").unlink()
    (tree / "redirects.md").unlink()
    refused = run(store, tree, emb)
    guard = refused.deletion_guard
    gone = len(before["concurrency.md"]) + len(before["redirects.md"])
    assert guard.would_delete == gone and guard.fraction == pytest.approx(gone / first.chunks_new) and guard.fraction < 0.2
    assert guard.files_stored == 3 and guard.files_gone == 2 and guard.file_fraction == pytest.approx(2 / 3)
    assert guard.refused and len(refused.failures) == 1 and refused.chunks_deleted == 0
    message = refused.failures[0].error
    assert "2 of its 3 files (67%) would go" in message and "max_delete_fraction = 0.5 of its chunks or files" in message
    assert guard.to_dict()["file_fraction"] == pytest.approx(0.6667)
    store.refresh()
    assert snapshot(store) == before

    # one file of three (33%) is within the limit
    shutil.copy(LARAVEL / "concurrency.md", tree / "concurrency.md")
    fine = run(store, tree, emb)
    assert not fine.failures and fine.deletion_guard.files_gone == 1 and fine.chunks_deleted == len(before["redirects.md"])


def test_deletions_within_the_limit_go_through_and_are_counted(store, tmp_path):
    emb = HashEmbedder()
    tree = make_tree(tmp_path / "docs", FILES)
    run(store, tree, emb)
    before = snapshot(store)
    (tree / "mail.md").unlink()
    text = (tree / "cache.md").read_text()
    (tree / "cache.md").write_text(text[: len(text) // 2])  # an edit drops the second half's chunks
    done = run(store, tree, emb)
    guard = done.deletion_guard
    assert guard.checked and not guard.refused and not done.failures
    assert guard.would_delete == done.chunks_deleted > len(before["mail.md"])
    assert {e["path"]: e["why"] for e in guard.examples} == {"mail.md": "gone", "cache.md": "edited"}
    assert guard.files == 2


def test_an_edit_that_empties_most_of_a_single_file_corpus_is_refused(store, tmp_path):
    emb = HashEmbedder()
    tree = make_tree(tmp_path / "docs", ["scheduling.md"])
    run(store, tree, emb)
    before = snapshot(store)
    (tree / "scheduling.md").write_text("# Task Scheduling\n\nGone for now.\n")
    refused = run(store, tree / "scheduling.md", emb)  # a single file as the root
    assert refused.deletion_guard.refused and refused.deletion_guard.examples[0]["why"] == "edited"
    assert "max_delete_fraction = 0.5" in refused.failures[0].error
    store.refresh()
    assert snapshot(store) == before
    fine = run(store, tree / "scheduling.md", emb, max_delete_fraction=1.0)
    assert not fine.failures and fine.chunks_deleted > 0 and not fine.deletion_guard.checked


@pytest.mark.integration
def test_cli_refuses_an_empty_folder_with_exit_1_and_allow_delete_works(tmp_path):
    from click.testing import CliRunner

    from esrag.cli import main

    tree = make_tree(tmp_path / "docs", ["scheduling.md", "cache.md"])
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {
        "ESRAG_DB": str(tmp_path / "db" / "esrag.db"),
        "ESRAG_ES_URL": None,
        "ESRAG_EMBEDDING_CACHE": str(tmp_path / "embedding_cache.db"),
    }
    runner = CliRunner()
    first = runner.invoke(main, ["ingest", str(tree), "--corpus", "lv", "--json"], env=env)
    assert first.exit_code == 0, first.output
    n = json.loads(first.stdout)["chunks_new"]
    assert json.loads(first.stdout)["deletion_guard"]["refused"] is False

    refused = runner.invoke(main, ["ingest", str(empty), "--corpus", "lv", "--json"], env=env)
    assert refused.exit_code == 1
    report = json.loads(refused.stdout)
    assert report["deletion_guard"]["refused"] is True and report["deletion_guard"]["would_delete"] == n
    assert report["chunks_deleted"] == 0 and "--allow-delete" in report["failures"][0]["error"]
    table = runner.invoke(main, ["ingest", str(empty), "--corpus", "lv"], env=env)
    assert table.exit_code == 1 and "REFUSED" in table.stderr and f"refused to delete {n} of the {n}" in table.stderr
    status = runner.invoke(main, ["status", "--json"], env=env)
    assert json.loads(status.stdout)["chunks"] == n

    allowed = runner.invoke(main, ["ingest", str(empty), "--corpus", "lv", "--allow-delete", "--json"], env=env)
    assert allowed.exit_code == 0, allowed.output
    assert json.loads(allowed.stdout)["chunks_deleted"] == n


# -- faults end in a clear state -------------------------------------------------------------
def _es_store(url: str, alias: str | None = None):
    from esrag.stores.elastic import ElasticStore

    return ElasticStore(url, alias or f"esrag-t-{uuid.uuid4().hex[:12]}")


def _count(store, index: str) -> int:
    store._es.indices.refresh(index=index)
    return store._es.count(index=index).body["count"]


@pytest.mark.integration
def test_a_read_only_index_stops_the_ingest_with_one_line_and_a_rerun_completes(es_url, tmp_path):
    emb = HashEmbedder()
    tree = make_tree(tmp_path / "docs", FILES[:3])
    s = _es_store(es_url)
    try:
        first = run(s, tree, emb)
        concrete = s._alias_index()
        before = snapshot(s)
        s._es.indices.put_settings(index=s.alias, settings={"index.blocks.read_only_allow_delete": True})
        make_tree(tree, FILES[3:])  # new files: the next ingest has chunks to write

        blocked = _es_store(es_url, s.alias)  # a new process's store: the block is found before the first bulk
        with pytest.raises(StoreError) as err:
            run(blocked, tree, emb)
        message = str(err.value)
        clear = f'PUT {concrete}/_settings {{"index.blocks.read_only_allow_delete": null}}'
        assert "\n" not in message and "index.blocks.read_only_allow_delete = true" in message and clear in message
        assert "flood-stage watermark" in message

        midway = _es_store(es_url, s.alias)  # a block set while the ingest runs: found in the bulk answer
        midway.max_retries = 0  # the block's 429 items are not retried for seconds first
        midway._writable.add(s.alias)
        with pytest.raises(StoreError) as err2:
            run(midway, tree, emb)
        assert "\n" not in str(err2.value) and clear in str(err2.value)
        assert snapshot(s) == before and _count(s, s.alias) == first.chunks_new

        # the way out, exactly as the message says, then the same ingest again
        s._es.indices.put_settings(index=concrete, settings={"index.blocks.read_only_allow_delete": None})
        again = run(_es_store(es_url, s.alias), tree, emb)
        assert not again.failures and again.chunks_unchanged == first.chunks_new and again.chunks_new > 0
        total = again.chunks_new + again.chunks_unchanged
        stored = snapshot(s)
        assert _count(s, s.alias) == total == sum(len(v) for v in stored.values())  # every chunk exactly once
        assert set(stored) == set(FILES)
    finally:
        s._es.indices.put_settings(index=f"{s.alias}-*", settings={"index.blocks.read_only_allow_delete": None})
        s.drop()
        s.close()


def _fault_run(es_url: str, alias: str, tree: Path, point: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "ESRAG_ES_URL": es_url,
        "ESRAG_INDEX": alias,
        "ESRAG_EMBEDDER": "st:test-hash-16",
        "ESRAG_EMBEDDING_CACHE": str(tmp_path / "cache.db"),
        "PYTHONPATH": str(Path(__file__).parent),
    }
    env.pop("ESRAG_DB", None)
    return subprocess.run(
        [sys.executable, str(Path(__file__).parent / "fault_helpers.py"), str(tree), "laravel", point],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.integration
@pytest.mark.parametrize("point", ["before-copy", "mid-copy", "before-swap"])
def test_a_killed_rebuild_leaves_the_alias_on_the_old_index_and_the_next_one_completes(es_url, tmp_path, point):
    tree = make_tree(tmp_path / "docs", FILES[:4])
    alias = f"esrag-t-{uuid.uuid4().hex[:12]}"
    reader = _es_store(es_url, alias)
    try:
        first = _fault_run(es_url, alias, tree, "ingest", tmp_path)
        assert first.returncode == 0, first.stderr
        n = json.loads(first.stdout)["chunks_new"]
        old = reader.names.index(1)
        ids = {i for entries in reader.manifest("laravel").values() for i in entries}
        assert len(ids) == n

        killed = _fault_run(es_url, alias, tree, point, tmp_path)
        assert killed.returncode == -9, killed.stderr  # SIGKILL: no cleanup ran
        half = reader._pending_rebuild()
        assert half == reader.names.index(2)
        copied = _count(reader, half)
        assert {"before-copy": copied == 0, "mid-copy": 0 < copied < n, "before-swap": copied == n}[point], copied
        # the alias is still on the old index, and searches answer from it
        fresh = _es_store(es_url, alias)
        assert fresh._alias_index() == old and fresh.stats()["chunks"] == n
        hits = fresh.bm25("schedule a task every minute", 5, Filters(), {"text": 1.0})
        assert hits and {i for i, _ in hits} <= ids
        fresh.close()

        done = _fault_run(es_url, alias, tree, "rebuild", tmp_path)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        new = reader.names.index(2)  # resumed when its run had ended, else deleted and made afresh
        assert report["rebuild"] == {"swapped": True, "index": new, "previous": old, "deleted_previous": True}
        assert ("half-built" in done.stderr) == (point != "before-swap")
        left = set(reader._es.indices.get(index=f"{alias}-*").body)
        assert left == {new}  # the old and the half-built index are gone
        after = _es_store(es_url, alias)
        assert after._alias_index() == new and _count(after, alias) == n  # every chunk exactly once
        assert {i for entries in after.manifest("laravel").values() for i in entries} == ids
        after.close()
    finally:
        reader.drop()
        reader.close()


def test_a_full_disk_under_the_embedded_store_fails_in_one_line_and_keeps_the_store(tmp_path):
    from esrag.stores.sqlite import SQLiteStore

    emb = HashEmbedder()
    tree = make_tree(tmp_path / "docs", FILES[:2])
    path = tmp_path / "db" / "esrag.db"
    s = SQLiteStore(path)
    first = run(s, tree, emb)
    before = snapshot(s)
    s._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pages = s._db.execute("PRAGMA page_count").fetchone()[0]
    s._db.execute(f"PRAGMA max_page_count = {pages}")  # the disk is full: the file cannot grow by a page
    make_tree(tree, FILES[2:])
    with pytest.raises(StoreError) as err:
        run(s, tree, emb)
    message = str(err.value)
    assert "\n" not in message and str(path) in message and "full" in message and "run the ingest again" in message
    s.close()

    reopened = SQLiteStore(path)  # the store still opens and answers with its previous content
    assert snapshot(reopened) == before and reopened.stats()["chunks"] == first.chunks_new
    assert reopened.bm25("schedule a task every minute", 3, Filters(), {"text": 1.0})
    assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    again = run(reopened, tree, emb)  # with space again
    assert not again.failures and again.chunks_unchanged == first.chunks_new
    total = again.chunks_new + again.chunks_unchanged
    assert reopened.stats()["chunks"] == total and set(snapshot(reopened)) == set(FILES)
    reopened.close()


# -- records: bad records are reported and skipped, the rest indexed ------------------------
def _ingest_records(store, root: Path, emb: HashEmbedder):
    from esrag.chunking.records import RecordsChunker

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ingester = Ingester(store, emb.spec, lambda: emb, RecordsChunker(), ["text"], {"text": 1.0})
        return ingester.run(root, "tickets", ["*.jsonl", "*.csv"], [])


def test_bad_records_are_reported_by_line_and_skipped_and_duplicates_keep_the_last(tmp_path, sqlite_store):
    from paths import PROJECT

    lines = (PROJECT / "tests" / "data" / "laravel_tickets.jsonl").read_text().splitlines()
    dup = json.loads(lines[4]) | {"id": json.loads(lines[1])["id"], "text": "The later record of this id wins."}
    bad = [*lines[:3], "{not json", "[1, 2]", json.dumps({"id": "T-no-text", "title": "no text"}), *lines[3:10], json.dumps(dup)]
    root = tmp_path / "tickets"
    root.mkdir()
    (root / "t.jsonl").write_text("\n".join(bad) + "\n")
    (root / "t.csv").write_text(
        'id,text,area\nA-1,first,queues\nA-2,too,many,fields\nA-3,"quoted\nacross lines",cache\nA-4\nA-1,second wins,queues\n'
    )
    summary = _ingest_records(sqlite_store, root, HashEmbedder())
    assert not summary.failures
    warned = {(w.path, w.error.split(":")[0]) for w in summary.warnings}
    assert warned == {
        ("t.jsonl", "line 4"),
        ("t.jsonl", "line 5"),
        ("t.jsonl", "line 6"),
        ("t.jsonl", "line 14"),
        ("t.csv", "row 2 (line 3)"),
        ("t.csv", "row 4 (line 6)"),
        ("t.csv", "line 7"),
    }
    texts = {w.error for w in summary.warnings}
    assert any("not JSON" in t for t in texts) and any("a JSON list, not an object" in t for t in texts)
    assert any("'T-no-text' has no 'text' field" in t for t in texts)
    assert any("4 fields, the header has 3" in t for t in texts) and any("1 fields, the header has 3" in t for t in texts)
    assert any(f"duplicate id {dup['id']!r} (also on line 2)" in t for t in texts)
    stored = sqlite_store.manifest("tickets")
    assert len(stored["t.jsonl"]) == 10  # 10 good records + 1 whose id repeats one of them (it replaces it)
    assert len(stored["t.csv"]) == 2  # A-1 (the later row), A-3
    chunks = {c.section_path: c for c in sqlite_store.source_chunks("t.jsonl", "tickets")}
    assert chunks[dup["id"]].text.endswith("The later record of this id wins.") and chunks[dup["id"]].start_line == 14
    csv_chunks = {c.section_path: c for c in sqlite_store.source_chunks("t.csv", "tickets")}
    assert csv_chunks["A-1"].text == "second wins" and (csv_chunks["A-3"].start_line, csv_chunks["A-3"].end_line) == (4, 5)


def test_a_record_file_with_no_readable_record_fails_and_keeps_its_chunks(tmp_path, sqlite_store):
    root = tmp_path / "tickets"
    root.mkdir()
    (root / "t.jsonl").write_text('{"id": "a", "text": "one"}\n{"id": "b", "text": "two"}\n')
    _ingest_records(sqlite_store, root, HashEmbedder())
    (root / "t.jsonl").write_text("{broken\n[1]\n")
    summary = _ingest_records(sqlite_store, root, HashEmbedder())
    assert [f.path for f in summary.failures] == ["t.jsonl"] and "no readable record (2 bad" in summary.failures[0].error
    assert len(sqlite_store.manifest("tickets")["t.jsonl"]) == 2


# -- symbolic links ---------------------------------------------------------------------------
def test_symlinks_outside_the_tree_are_skipped_with_a_reason_unless_followed(tmp_path, sqlite_store):
    root = make_tree(tmp_path / "docs", ["scheduling.md"])
    outside = make_tree(tmp_path / "elsewhere", ["cache.md"])
    (root / "sub").mkdir()
    (root / "sub" / "cache.md").symlink_to(outside / "cache.md")
    (root / "inside.md").symlink_to(root / "scheduling.md")  # inside the tree: indexed as before
    (root / "gone.md").symlink_to(tmp_path / "nothing.md")
    emb = HashEmbedder()
    summary = run(sqlite_store, root, emb)
    skipped = {(k.path, k.reason) for k in summary.skipped_files}
    assert skipped == {("sub/cache.md", "external-symlink"), ("gone.md", "broken-symlink")}
    detail = next(k.detail for k in summary.skipped_files if k.reason == "external-symlink")
    assert str((outside / "cache.md").resolve()) in detail and "follow_external_symlinks" in detail
    assert set(sqlite_store.manifest("laravel")) == {"scheduling.md", "inside.md"} and summary.files == 2
    assert summary.file_report["skipped"]["external-symlink"]["examples"] == ["sub/cache.md"]  # issue 25's files block
    as_json = summary.to_dict()["skipped_files"]
    assert {"path": "gone.md", "reason": "broken-symlink"} in [{k: v for k, v in d.items() if k != "detail"} for d in as_json]

    followed = Ingester(sqlite_store, emb.spec, lambda: emb, HeaderChunker(), EMBED, BM25, follow_external_symlinks=True)
    again = followed.run(root, "laravel", ["*.md"], [])
    assert [k.path for k in again.skipped_files] == ["gone.md"]
    assert set(sqlite_store.manifest("laravel")) == {"scheduling.md", "inside.md", "sub/cache.md"}


@pytest.mark.integration
def test_cli_ingest_lists_skipped_symlinks(tmp_path):
    from click.testing import CliRunner

    from esrag.cli import main

    root = make_tree(tmp_path / "docs", ["scheduling.md"])
    (root / "link.md").symlink_to(make_tree(tmp_path / "else", ["cache.md"]) / "cache.md")
    env = {
        "ESRAG_DB": str(tmp_path / "db" / "esrag.db"),
        "ESRAG_ES_URL": None,
        "ESRAG_EMBEDDING_CACHE": str(tmp_path / "embedding_cache.db"),
    }
    done = CliRunner().invoke(main, ["ingest", str(root), "--corpus", "lv"], env=env)
    assert done.exit_code == 0, done.output
    assert "1 external-symlink" in done.stderr and "skipped link.md: symbolic link to" in done.stderr


# -- encodings --------------------------------------------------------------------------------
@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_utf16_and_utf32_with_a_byte_order_mark_are_decoded(tmp_path, encoding):
    import codecs

    from esrag.sources import read_text

    text = (LARAVEL / "scheduling.md").read_text()
    bom = {
        "utf-16-le": codecs.BOM_UTF16_LE,
        "utf-16-be": codecs.BOM_UTF16_BE,
        "utf-32-le": codecs.BOM_UTF32_LE,
        "utf-32-be": codecs.BOM_UTF32_BE,
    }[encoding]
    path = tmp_path / "doc.md"
    path.write_bytes(bom + text.encode(encoding))
    assert read_text(path, "doc.md", 5_000_000) == text


def test_bom_files_are_indexed_like_utf8_and_other_encodings_reported_as_before(tmp_path, sqlite_store):
    text = (LARAVEL / "scheduling.md").read_text()
    root = tmp_path / "docs"
    root.mkdir()
    (root / "utf8.md").write_text(text)
    (root / "utf16.md").write_bytes(text.encode("utf-16"))  # Python writes the platform's BOM first
    (root / "utf32.md").write_bytes(text.encode("utf-32"))
    (root / "nobom16.md").write_bytes(text.encode("utf-16-le"))  # no mark: NUL bytes, binary as before
    (root / "latin1.md").write_bytes("# Caf\xe9\n\nCr\xe8me.\n".encode("latin-1"))
    (root / "bad16.md").write_bytes(b"\xff\xfe" + "# ok".encode("utf-16-le") + b"\x00\xd8")  # a lone surrogate
    summary = run(sqlite_store, root, HashEmbedder())
    reasons = {f.path: f.error for f in summary.failures}
    assert set(reasons) == {"nobom16.md", "latin1.md", "bad16.md"}
    assert "binary file" in reasons["nobom16.md"] and "not valid UTF-8 at line 1" in reasons["latin1.md"]
    assert "UTF-16 byte-order mark but is not valid UTF-16" in reasons["bad16.md"]
    stored = sqlite_store.manifest("laravel")
    texts = {p: sorted(e.content_hash for e in stored[p].values()) for p in ("utf8.md", "utf16.md", "utf32.md")}
    assert texts["utf8.md"] == texts["utf16.md"] == texts["utf32.md"] and texts["utf8.md"]


def test_block_messages_name_the_setting_and_the_call_that_clears_it():
    from esrag.stores.elastic.connection import block_message, is_block

    # reasons as the 9.2.8 and 8.15.5 test nodes wrote them in _bulk item errors
    flood92 = (
        "index [esrag-a-000001] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, index has "
        "read-only-allow-delete block; for more information, see https://www.elastic.co/docs/troubleshoot/x];"
    )
    flood815 = "index [esrag-a-000001] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, index has read-only-allow-delete block];"
    for reason in (flood92, flood815):
        text = block_message(reason)
        assert text and "\n" not in text
        assert 'PUT esrag-a-000001/_settings {"index.blocks.read_only_allow_delete": null}' in text
    write = block_message("index [esrag-a-000002] blocked by: [FORBIDDEN/8/index write (api)];")
    assert 'PUT esrag-a-000002/_settings {"index.blocks.write": null}' in write and "flood-stage" not in write
    cluster = block_message("blocked by: [FORBIDDEN/6/cluster read-only (api)];")
    assert 'PUT _cluster/settings {"persistent": {"cluster.blocks.read_only": null}}' in cluster
    assert block_message("mapper_parsing_exception: failed to parse") is None
    assert is_block({"error": {"type": "cluster_block_exception", "reason": flood815}})
