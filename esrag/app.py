"""Builds the configured parts (store, chunker, embedder, searcher, ingester) from settings.

The CLI and library users share this wiring, so a setting means the same thing everywhere.
Every part is found by name in its plugin registry (:mod:`esrag.plugins`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from esrag import plugins
from esrag.chunking.base import Chunker
from esrag.config import Settings
from esrag.errors import ConfigError, PluginError
from esrag.embedding import Embedder, make_embedder, normalize_spec
from esrag.ingest import Ingester, Observer
from esrag.search.searcher import Searcher
from esrag.sites import Site
from esrag.stores.base import Removable, Store


def open_store(settings: Settings) -> Store:
    """The configured store: Elasticsearch when ``ESRAG_ES_URL`` is set, else the SQLite file.

    Raises:
        PluginError: ``store`` names no installed store.
        StoreError: the store cannot be opened (unreachable cluster, unwritable file).
    """
    cls = plugins.load("esrag.stores", settings.store_name)
    return cls.from_settings(settings)


def make_chunker(settings: Settings, name: str | None = None) -> Chunker:
    """The chunker ``name`` (default: ``settings.chunking.chunker``), configured from settings
    when the class offers ``from_settings``."""
    cls = plugins.load("esrag.chunkers", name or settings.chunking.chunker)
    if hasattr(cls, "from_settings"):
        return cls.from_settings(settings.chunking)
    return cls()


def embedder_factory(settings: Settings, spec: str | None = None, corpus: str | None = None) -> Callable[[], Embedder]:
    """A zero-argument function building the embedder ``spec`` (default: settings.embedder),
    with ``[corpora.NAME] query_prefix / passage_prefix`` of ``corpus`` when set (else the model
    table's prefixes)."""
    chosen = spec or settings.embedder
    cs = settings.corpora.get(corpus) if corpus else None
    prefixes = {"query_prefix": cs.query_prefix, "passage_prefix": cs.passage_prefix} if cs else {}

    def build() -> Embedder:
        return make_embedder(chosen, settings, **prefixes)

    return build


def _cached(build: Callable[[], Embedder], path: Path) -> Callable[[], Embedder]:
    """``build`` wrapped so that its embedder reads and fills the embedding cache at ``path``."""
    from esrag.embedding import CachedEmbedder, EmbeddingCache

    return lambda: CachedEmbedder(build(), EmbeddingCache(path))


def prepare_chunker(settings: Settings, chunker: Chunker) -> Chunker:
    """``chunker`` with the chunk labels of seed 002 added: each chunk's detected language
    (``[language] detect``, :class:`esrag.language.LanguageChunker`) and its entities
    (``settings.entities``, :class:`esrag.entities.EntityChunker`).

    Raises:
        PluginError: unknown entity extractor. ModelLoadError: its model cannot be loaded.
    """
    if settings.language.detect:
        from esrag.language import LanguageChunker

        chunker = LanguageChunker(chunker, settings.language.candidates, settings.language.min_chars)
    if settings.entities:
        from esrag.entities import EntityChunker, make_extractor

        chunker = EntityChunker(chunker, make_extractor(settings.entities))
    return chunker


def make_searcher(settings: Settings, store: Store, embedder_spec: str | None = None, corpus: str | None = None) -> Searcher:
    """A searcher over ``store``. Queries are embedded with the model the index was built with
    unless ``embedder_spec`` overrides it (with ``corpus``'s query prefix when it sets one)."""
    meta = store.meta()
    spec = embedder_spec or (meta.embedder if meta else settings.embedder)
    bm25 = settings.index_text.bm25_fields
    if meta is not None and "bm25_fields" not in settings.index_text.model_fields_set:
        bm25 = meta.bm25_fields  # the index's own (e.g. an enriched arm's fields) unless configured
    return Searcher(store, embedder_factory(settings, spec, corpus), settings.search, bm25)


def make_site(settings: Settings, root: Path, corpus: str, site: str | None = None, base_url: str | None = None,
              url_template: str | None = None, doc_version: str | None = None) -> Site:
    """Where the tree at ``root`` is published: flags first, then ``[corpora.NAME] site /
    base_url / url_template / doc_version``, then the generator's config found in the tree
    (:func:`esrag.sites.resolve_site`).

    Raises:
        ConfigError: unknown site or a base URL that is not absolute http(s); the message names
            the flag (``--site``, ``--base-url``) or the setting (``[corpora.NAME] site``).
    """
    from esrag.sites import check_base_url, check_site, resolve_site

    cs = settings.corpora.get(corpus)
    if site is None and cs is not None and cs.site:
        site = check_site(cs.site, f"[corpora.{corpus}] site")
    if base_url is None and cs is not None and cs.base_url:
        base_url = check_base_url(cs.base_url, f"[corpora.{corpus}] base_url")
    if url_template is None and cs is not None:
        url_template = cs.url_template
    version = doc_version if doc_version is not None else (cs.doc_version if cs is not None and cs.doc_version else "")
    return resolve_site(root, site, base_url, url_template, version)


def make_ingester(settings: Settings, store: Store, chunker: Chunker, observer: Observer | None = None,
                  corpus: str | None = None, site: Site | None = None, doc_version: str = "") -> Ingester:
    """An ingester writing into ``store`` with the configured embedder and indexed text.

    With ``settings.enrich`` (``--enrich e|e-k|cr|pf``) it enriches chunks with the configured
    LLM (``settings.llm``) through the persistent cache; unless ``index_text.embed_fields`` /
    ``bm25_fields`` were configured, the index then uses that arm's configuration from seed 000
    (generated fields before the text; context before the text for CR), recorded in the index
    meta like any other.

    Chunks are labelled with their language and entities (:func:`prepare_chunker`); ``corpus``
    picks ``[corpora.NAME]`` embedder prefixes. With ``ingest.cache_embeddings`` (the default)
    passages go through the embedding cache at ``settings.embedding_cache_path``. ``site``
    (:func:`make_site`) gives Markdown pages their front matter, anchors and URLs;
    ``doc_version`` is stored on every chunk and scopes the manifest.

    Raises:
        ConfigError: unknown enrichment mode. PluginError: unknown LLM provider or extractor.
    """
    embed_fields, bm25_fields = settings.index_text.embed_fields, settings.index_text.bm25_fields
    enricher = None
    if settings.enrich:
        from esrag.enrich import make_enricher

        enricher = make_enricher(settings, settings.enrich)
        arm_embed, arm_bm25 = enricher.index_text
        chosen = settings.index_text.model_fields_set
        embed_fields = embed_fields if "embed_fields" in chosen else arm_embed
        bm25_fields = bm25_fields if "bm25_fields" in chosen else arm_bm25
    build = embedder_factory(settings, corpus=corpus)
    if settings.ingest.cache_embeddings:
        build = _cached(build, settings.embedding_cache_path)
    return Ingester(
        store,
        normalize_spec(settings.embedder),
        build,
        prepare_chunker(settings, chunker),
        embed_fields,
        bm25_fields,
        max_file_bytes=settings.ingest.max_file_bytes,
        observer=observer,
        enricher=enricher,
        analyzer=settings.index_text.analyzer,
        section_context=settings.index_text.section_context,
        section_context_depth=settings.index_text.section_context_depth,
        site=site,
        doc_version=doc_version,
    )


def _removable(store: Store) -> Removable:
    if not isinstance(store, Removable):
        raise PluginError(f"the {getattr(store, 'name', type(store).__name__)} store cannot remove corpora or drop its index")
    return store


def remove_corpus(store: Store, corpus: str, doc_version: str | None = None) -> int:
    """Delete every chunk of ``corpus`` from ``store`` (only those of ``doc_version`` when
    given; ``""`` = the chunks ingested without one); other corpora stay searchable and
    untouched, and a later ``esrag ingest`` of the corpus indexes it afresh. Returns the number
    of chunks deleted (>= 1).

    Raises:
        ConfigError: the store holds no such corpus (message names ``--corpus`` and the corpora
            it does hold) or no chunk of that version (names ``--doc-version``).
        PluginError: the store cannot remove corpora. StoreError: the store fails.
    """
    target = _removable(store)
    corpora = store.stats().get("corpora", {})
    if corpus not in corpora:
        held = ", ".join(sorted(corpora)) or "none"
        raise ConfigError(f"--corpus {corpus!r}: the index holds no such corpus (corpora: {held})")
    removed = target.remove_corpus(corpus, doc_version)
    if removed == 0 and doc_version is not None:
        raise ConfigError(f"--doc-version {doc_version!r}: corpus {corpus!r} holds no chunk of that version")
    return removed


def drop_index(store: Store) -> dict:
    """Delete the whole index of ``store``: the SQLite file's tables, or on Elasticsearch the
    alias, every versioned index, the templates and the ingest pipeline esrag installed. The
    next ``esrag setup`` / ``ingest`` starts from nothing. Returns what was removed:
    ``{"store", "chunks", ...}`` (SQLite adds ``path``, ``corpora``, ``tables``; Elasticsearch
    ``url``, ``alias``, ``indices``, ``templates``, ``pipelines``).

    Raises:
        PluginError: the store cannot drop its index. StoreError: the store fails.
    """
    return _removable(store).drop()
