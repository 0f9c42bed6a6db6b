"""Incremental ingest and search on the embedded store, with the real default embedder and real
Laravel docs (copied into a temporary tree so that the tests can edit them)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from esrag.chunking.header import HeaderChunker
from esrag.config import SearchSettings
from esrag.embedding import SentenceTransformerEmbedder
from esrag.errors import EmbedderMismatch
from esrag.ingest import Ingester
from esrag.model import Document
from esrag.search.searcher import Searcher
from esrag.stores.base import Filters
from paths import LARAVEL

# needs a service, a model or a subprocess (see tests/conftest.py)
pytestmark = pytest.mark.integration

FILES = ["scheduling.md", "queues.md", "cache.md", "routing.md", "blade.md"]
EMBED = ["section_path", "text"]
BM25 = {"text": 1.0, "section_path": 1.0}


@pytest.fixture(scope="session")
def embedder():
    return SentenceTransformerEmbedder("all-MiniLM-L6-v2")


class CountingEmbedder:
    """The real embedder, counting texts; optionally failing on the n-th call (a crash)."""

    def __init__(self, inner, fail_on_call: int | None = None) -> None:
        self.inner, self.spec, self.dims = inner, inner.spec, inner.dims
        self.texts = 0
        self.calls = 0
        self.fail_on_call = fail_on_call

    def embed_documents(self, texts, progress=None):
        self.calls += 1
        if self.fail_on_call == self.calls:
            raise KeyboardInterrupt("simulated crash mid-ingest")
        self.texts += len(texts)
        return self.inner.embed_documents(texts, progress)

    def embed_query(self, text):
        return self.inner.embed_query(text)


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    for name in FILES:
        shutil.copy(LARAVEL / name, root / name)
    return root


@pytest.fixture
def store(sqlite_store):
    return sqlite_store


def ingester(store, emb, window=1024):
    return Ingester(store, emb.spec, lambda: emb, HeaderChunker(), EMBED, BM25, window=window)


def expected_chunks(root: Path, names: list[str] | None = None) -> int:
    paths = [root / n for n in names] if names else sorted(root.glob("*.md"))
    return sum(len(HeaderChunker().chunk(Document(p.name, p.read_text()))) for p in paths)


def test_first_ingest_then_unchanged_reingest_embeds_nothing(tree, store, embedder):
    emb = CountingEmbedder(embedder)
    first = ingester(store, emb).run(tree, "laravel", ["*.md"], [])
    n = expected_chunks(tree)
    assert (first.files, first.chunks_new, first.chunks_unchanged, first.failures) == (5, n, 0, [])
    assert first.embeddings_computed == emb.texts > 0
    emb2 = CountingEmbedder(embedder)
    second = ingester(store, emb2).run(tree, "laravel", ["*.md"], [])
    assert (second.chunks_new, second.chunks_changed, second.chunks_unchanged, second.chunks_deleted) == (0, 0, n, 0)
    assert second.embeddings_computed == 0 and emb2.calls == 0
    assert first.files_changed == sorted(FILES) and second.files_changed == []
    assert store.stats()["chunks"] == n


def test_editing_one_section_reembeds_only_that_chunk_and_moves_the_rest(tree, store, embedder):
    ingester(store, CountingEmbedder(embedder)).run(tree, "laravel", ["*.md"], [])
    path = tree / "cache.md"
    text = path.read_text()
    old = "Laravel provides an expressive, unified API"
    assert old in text
    # two blank lines on top shift every chunk without changing its text; one sentence changes
    path.write_text("\n\n" + text.replace(old, "Laravel offers a fast and unified API", 1))
    emb = CountingEmbedder(embedder)
    s = ingester(store, emb).run(tree, "laravel", ["*.md"], [])
    assert s.chunks_changed == 1 and s.chunks_new == 0 and s.chunks_deleted == 0
    assert s.embeddings_computed == 1 == emb.texts
    assert s.chunks_moved > 0  # every later chunk of cache.md shifted by two lines
    assert s.files_changed == ["cache.md"]  # line spans moved elsewhere change no file
    # the stored line spans follow the edit
    hit = store.bm25("fast unified API", 1, Filters(), BM25)[0][0]
    [chunk] = store.get([hit])
    lines = path.read_text().split("\n")
    assert "Laravel offers a fast and unified API" in "\n".join(lines[chunk.start_line - 1 : chunk.end_line])


def test_removed_section_and_vanished_file_are_deleted(tree, store, embedder):
    ingester(store, CountingEmbedder(embedder)).run(tree, "laravel", ["*.md"], [])
    before = store.stats()["chunks"]
    blade = store.manifest("laravel")["blade.md"]
    (tree / "blade.md").unlink()
    text = (tree / "routing.md").read_text()
    cut = text.index('<a name="redirect-routes">')
    end = text.index('<a name="view-routes">')
    (tree / "routing.md").write_text(text[:cut] + text[end:])
    s = ingester(store, CountingEmbedder(embedder)).run(tree, "laravel", ["*.md"], [])
    assert s.chunks_deleted >= len(blade) + 1
    assert s.files_changed == ["blade.md", "routing.md"]  # gone, and a section removed
    assert "blade.md" not in store.manifest("laravel")
    assert store.stats()["chunks"] == before - s.chunks_deleted + s.chunks_new
    assert store.stats()["chunks"] == expected_chunks(tree)
    assert all("Redirect Routes" not in c.section_path for c in store.get(list(store.manifest("laravel")["routing.md"])))


def test_single_file_ingest_leaves_other_files_alone(tree, store, embedder):
    ingester(store, CountingEmbedder(embedder)).run(tree, "laravel", ["*.md"], [])
    n = store.stats()["chunks"]
    s = ingester(store, CountingEmbedder(embedder)).run(tree / "cache.md", "laravel", ["*.md"], [])
    assert s.chunks_deleted == 0 and s.chunks_new == 0 and store.stats()["chunks"] == n


def test_bad_files_are_reported_and_the_rest_is_indexed(tree, store, embedder):
    (tree / "latin1.md").write_bytes("# Caf\xe9\n\nline two\nna\xefve\n".encode("latin-1"))
    (tree / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (tree / "empty.md").write_text("")
    (tree / "bom.md").write_bytes(b"\xef\xbb\xbf\n  \n")  # blank but for a UTF-8 byte-order mark
    (tree / "huge.md").write_text("# Big\n\n" + "word " * 1_100_000)  # 5.5 MB > the 5 MB default
    ing = ingester(store, CountingEmbedder(embedder))
    s = ing.run(tree, "laravel", ["*.md"], [])
    reasons = {f.path: f.error for f in s.failures}
    assert set(reasons) == {"latin1.md", "binary.md", "huge.md"}
    assert "not valid UTF-8 at line 1" in reasons["latin1.md"]
    assert "binary" in reasons["binary.md"] and "too large" in reasons["huge.md"]
    # a blank page shows nothing: skipped and said so, not a failure
    assert [(k.path, k.reason) for k in s.skipped_files] == [("bom.md", "empty"), ("empty.md", "empty")] and s.skipped == []
    assert s.file_report["skipped"]["empty"]["examples"] == ["bom.md", "empty.md"]
    assert s.files == 10 and s.chunks_new == expected_chunks(tree, FILES)
    assert set(store.manifest("laravel")) == set(FILES)


def test_a_file_whose_lines_only_moved_is_named_changed(tree, store, embedder):
    """Blank lines on top of a page re-embed nothing but rewrite its chunks' line spans: the
    file is among ``files_changed``, the others are not."""
    ingester(store, CountingEmbedder(embedder)).run(tree, "laravel", ["*.md"], [])
    path = tree / "routing.md"
    path.write_text("\n\n\n" + path.read_text())
    s = ingester(store, CountingEmbedder(embedder)).run(tree, "laravel", ["*.md"], [])
    assert (s.chunks_new, s.chunks_changed, s.chunks_deleted, s.embeddings_computed) == (0, 0, 0, 0)
    assert s.chunks_moved > 0 and s.files_changed == ["routing.md"]


def test_a_blank_records_file_is_a_failure_and_keeps_its_records(tmp_path, store, embedder):
    """A records file (JSONL) emptied by a failed export is data gone missing, not a page
    that shows nothing: a failure naming it, its records kept."""
    from esrag.chunking.records import RecordsChunker

    root = tmp_path / "tickets"
    root.mkdir()
    rows = [{"id": f"T-{i}", "text": f"Ticket {i}: the queue worker stops after a deploy."} for i in range(3)]
    (root / "may.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (root / "june.jsonl").write_text(json.dumps({"id": "T-9", "text": "Cache tags are not supported by the file driver."}) + "\n")

    def records(emb):
        return Ingester(store, emb.spec, lambda: emb, RecordsChunker(), EMBED, BM25)

    records(CountingEmbedder(embedder)).run(root, "tickets", ["*.jsonl"], [])
    before = store.manifest("tickets")
    (root / "may.jsonl").write_text("")
    s = records(CountingEmbedder(embedder)).run(root, "tickets", ["*.jsonl"], [])
    assert [f.path for f in s.failures] == ["may.jsonl"] and "empty file" in s.failures[0].error
    assert s.skipped_files == [] and store.manifest("tickets") == before and s.chunks_deleted == 0


def test_a_page_made_blank_loses_its_chunks_and_two_of_three_blanked_are_refused(tree, store, embedder):
    """A page emptied on purpose is skipped (``empty``) and what it held is removed; blanking
    most of the files is what the deletion guard stops, counted as files that lose every chunk,
    however few chunks they held."""
    ingester(store, CountingEmbedder(embedder)).run(tree, "laravel", ["*.md"], [])
    (tree / "blade.md").write_text("\n  \n")
    s = ingester(store, CountingEmbedder(embedder)).run(tree, "laravel", ["*.md"], [])
    assert not s.failures and [(k.path, k.reason) for k in s.skipped_files] == [("blade.md", "empty")]
    assert "blade.md" not in store.manifest("laravel") and s.files_changed == ["blade.md"]
    assert s.deletion_guard.files_gone == 1 and s.deletion_guard.examples[0]["why"] == "emptied"
    small = sorted(FILES[:4], key=lambda n: len(store.manifest("laravel")[n]))[:3]  # the three with fewest chunks
    for name in small:
        (tree / name).write_text("")
    before = store.stats()["chunks"]
    s = ingester(store, CountingEmbedder(embedder)).run(tree, "laravel", ["*.md"], [])
    assert s.deletion_guard.refused and s.deletion_guard.files_gone == 3 and s.deletion_guard.files_stored == 4
    assert store.stats()["chunks"] == before and set(small) <= set(store.manifest("laravel"))


def test_a_file_that_turns_bad_keeps_its_old_chunks(tree, store, embedder):
    ingester(store, CountingEmbedder(embedder)).run(tree, "laravel", ["*.md"], [])
    old = store.manifest("laravel")["cache.md"]
    (tree / "cache.md").write_bytes(b"\xff\xfe broken")
    s = ingester(store, CountingEmbedder(embedder)).run(tree, "laravel", ["*.md"], [])
    assert [f.path for f in s.failures] == ["cache.md"]
    assert store.manifest("laravel")["cache.md"] == old and s.chunks_deleted == 0


def test_crash_mid_ingest_resumes_without_duplicates(tree, store, embedder):
    crashing = CountingEmbedder(embedder, fail_on_call=3)
    with pytest.raises(KeyboardInterrupt):
        ingester(store, crashing, window=40).run(tree, "laravel", ["*.md"], [])
    partial = store.stats()["chunks"]
    assert 0 < partial < expected_chunks(tree)
    emb = CountingEmbedder(embedder)
    s = ingester(store, emb, window=40).run(tree, "laravel", ["*.md"], [])
    assert s.chunks_unchanged == partial  # what was written before the crash is not redone
    assert store.stats()["chunks"] == expected_chunks(tree) == s.chunks
    assert emb.texts == s.chunks_new


def test_changed_embedder_is_refused_before_any_work(tree, store, embedder):
    ingester(store, CountingEmbedder(embedder)).run(tree, "laravel", ["*.md"], [])

    class Other(CountingEmbedder):
        spec = "st:some-other-model"

    other = Other(embedder)
    other.spec = "st:some-other-model"
    with pytest.raises(EmbedderMismatch, match=r"all-MiniLM-L6-v2 \(384 dims\).*st:some-other-model"):
        Ingester(store, other.spec, lambda: other, HeaderChunker(), EMBED, BM25).run(tree, "laravel", ["*.md"], [])


def test_hybrid_search_finds_the_scheduling_chunk(tree, store, embedder):
    ingester(store, CountingEmbedder(embedder)).run(tree, "laravel", ["*.md"], [])
    searcher = Searcher(store, lambda: embedder, SearchSettings(), BM25)
    result = searcher.search("how do I schedule a task to run every minute", k=5)
    top = result.hits[0]
    assert top.chunk.source_path == "scheduling.md"
    assert top.chunk.section_path.startswith("Task Scheduling")
    assert set(top.legs) <= {"bm25", "dense"} and top.legs
    assert {"embed", "bm25", "knn", "fuse", "fetch", "total"} <= set(result.timings_ms)
    for mode in ("bm25", "dense"):
        r = searcher.search("schedule a task every minute", k=3, mode=mode)
        assert [set(h.legs) for h in r.hits] == [{mode}] * 3
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True)


def test_search_filters_reach_both_legs(tree, store, embedder):
    ingester(store, CountingEmbedder(embedder)).run(tree, "laravel", ["*.md"], [])
    searcher = Searcher(store, lambda: embedder, SearchSettings(), BM25)
    hits = searcher.search("schedule a task every minute", k=10, filters=Filters(path_prefix="queues")).hits
    assert len(hits) == 10 and {h.chunk.source_path for h in hits} == {"queues.md"}
    assert searcher.search("anything", k=3, filters=Filters(corpora=["nope"])).hits == []


def test_vectors_are_normalised_and_deduplicated(embedder):
    v = embedder.embed_documents(["same text", "other text", "same text"])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(v[0], v[2])
