"""The async book (mdBook with {{#include}} anchors and line ranges) ingested into the real SQLite
store and into both Elasticsearch nodes: a line that exists only in an included example file is
found by search, in the including chapter; editing the example re-indexes that chapter."""

from __future__ import annotations

import shutil
import uuid

import pytest

from esrag.chunking.header import HeaderChunker
from esrag.config import SearchSettings, Settings
from esrag.embedding import SentenceTransformerEmbedder
from esrag.ingest import Ingester
from esrag.search.searcher import Searcher

from paths import DATA

ASYNC_BOOK = DATA / "corpora" / "async-book"
EMBED = ["section_path", "text"]
BM25 = {"text": 1.0, "section_path": 1.0}
CHAPTER = "src/01_getting_started/04_async_await_primer.md"
EXAMPLE = "examples/01_04_async_await_primer/src/lib.rs"
ONLY_IN_EXAMPLE = 'block_on(future); // `future` is run and "hello, world!" is printed'


@pytest.fixture(scope="module")
def embedder():
    return SentenceTransformerEmbedder("all-MiniLM-L6-v2")


@pytest.fixture(params=["sqlite", "es"])
def store(request, tmp_path):
    if request.param == "sqlite":
        from esrag.stores.sqlite import SQLiteStore

        s = SQLiteStore(tmp_path / "esrag.db")
        yield s
        s.close()
        return
    urls = request.getfixturevalue("es_nodes")
    made = []
    for url in urls:  # every node under test: 9.2.8 and 8.15.5
        from esrag.stores.elastic import ElasticStore

        made.append(ElasticStore(url, f"esrag-t-{uuid.uuid4().hex[:12]}"))
    yield made
    for s in made:
        s.drop()
        s.close()


def _ingest(store, root, emb):
    chunker = HeaderChunker.from_settings(Settings().chunking)
    ingester = Ingester(store, emb.spec, lambda: emb, chunker, EMBED, BM25, analyzer="standard")
    return ingester.run(root, "async-book", Settings().ingest.include, Settings().ingest.exclude)


def _check_store(store, root, emb):
    summary = _ingest(store, root, emb)
    assert summary.failures == [] and summary.warnings == [] and summary.files == 48
    searcher = Searcher(store, lambda: emb, SearchSettings(), BM25)
    for mode in ("bm25", "hybrid"):
        hits = searcher.search("future is run and hello world is printed block_on", k=5, mode=mode).hits
        found = [h for h in hits if ONLY_IN_EXAMPLE in h.chunk.text]
        assert found, mode
        c = found[0].chunk
        assert c.source_path == CHAPTER and c.section_path == "async/.await Primer"
        assert c.start_line <= 26 <= c.end_line  # the span of the {{#include …:hello_world}} line
    texts = [h.chunk.text for h in searcher.search("include anchor example", k=50, mode="bm25").hits]
    assert not any("{{#include" in t for t in texts)
    return summary


def test_async_book_includes_are_searchable_in_their_chapter(store, tmp_path, embedder):
    root = tmp_path / "async-book"
    shutil.copytree(ASYNC_BOOK, root)
    stores = store if isinstance(store, list) else [store]
    for s in stores:
        first = _check_store(s, root, embedder)
        assert first.chunks_new > 400
    # an edit to the included example re-indexes the chapter that includes it, and only that
    example = root / EXAMPLE
    example.write_text(example.read_text().replace('"hello, world!" is printed', '"hello, world!" is printed on stdout'))
    for s in stores:
        again = _ingest(s, root, embedder)
        assert again.chunks_changed == 1 and again.chunks_new == 0 and again.chunks_deleted == 0
        hits = Searcher(s, lambda: embedder, SearchSettings(), BM25).search("printed on stdout block_on", k=3, mode="bm25").hits
        assert hits[0].chunk.source_path == CHAPTER and "is printed on stdout" in hits[0].chunk.text
