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

# needs a service, a model or a subprocess (see tests/conftest.py)
pytestmark = pytest.mark.integration

ASYNC_BOOK = DATA / "corpora" / "async-book"
EMBED = ["section_path", "text"]
BM25 = {"text": 1.0, "section_path": 1.0}
CHAPTER = "src/01_getting_started/04_async_await_primer.md"
EXAMPLE = "examples/01_04_async_await_primer/src/lib.rs"
ONLY_IN_EXAMPLE = 'block_on(future); // `future` is run and "hello, world!" is printed'


@pytest.fixture(scope="module")
def embedder():
    return SentenceTransformerEmbedder("all-MiniLM-L6-v2")


@pytest.fixture(params=["sqlite", pytest.param("es", marks=pytest.mark.integration)])
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


FASTAPI = DATA / "corpora" / "fastapi-docs"
FASTAPI_PAGES = ["docs/en/docs/advanced/response-cookies.md", "docs/en/docs/how-to/configure-swagger-ui.md"]


def test_fastapi_examples_are_indexed_and_the_unresolved_include_is_named(tmp_path, embedder):
    """Two real FastAPI pages with their mkdocs.yml and docs_src/: the cookie page's example
    (``{* ../../docs_src/response_cookies/tutorial002_py310.py hl[1, 8:9] *}``) is searchable in
    its chunk; the include of FastAPI's own source (not in the corpus) is named in the summary."""
    from esrag.stores.sqlite import SQLiteStore

    root = tmp_path / "fastapi-docs"
    shutil.copytree(FASTAPI / "docs_src", root / "docs_src")
    (root / "docs" / "en").mkdir(parents=True)
    shutil.copy(FASTAPI / "docs/en/mkdocs.yml", root / "docs/en/mkdocs.yml")
    for page in FASTAPI_PAGES:
        (root / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FASTAPI / page, root / page)
    store = SQLiteStore(tmp_path / "esrag.db")
    chunker = HeaderChunker.from_settings(Settings().chunking)
    summary = Ingester(store, embedder.spec, lambda: embedder, chunker, EMBED, BM25, analyzer="standard").run(
        root, "fastapi", ["*.md"], Settings().ingest.exclude
    )
    assert summary.failures == [] and summary.files == 2 and summary.includes_unresolved == 1
    [w] = summary.warnings
    assert w.path == "docs/en/docs/how-to/configure-swagger-ui.md" and w.error.startswith(
        "line 43: {* ../../fastapi/openapi/docs.py ln[9:24] hl[18:24] *}: no such file"
    )
    assert summary.to_dict()["includes_unresolved"] == 1
    hits = Searcher(store, lambda: embedder, SearchSettings(), BM25).search("set_cookie response cookie", k=5, mode="bm25").hits
    top = hits[0].chunk
    assert top.source_path == FASTAPI_PAGES[0] and "response.set_cookie(key=" in top.text and "```python" in top.text
    texts = [
        h.chunk.text
        for h in Searcher(store, lambda: embedder, SearchSettings(), BM25).search("docs_src tutorial py310", k=50, mode="bm25").hits
    ]
    assert not any("{*" in t or "docs_src" in t for t in texts)
    store.close()
