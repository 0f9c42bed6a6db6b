"""Use cases and wiring: what the ``esrag`` CLI, the servers and library users call.

The use cases — :func:`setup_index`, :func:`ingest_tree` (with ``rebuild``),
:func:`make_pipeline`, :func:`chunk_file`, :func:`remove_corpus`, :func:`drop_index` — each take
the settings (and an open store where they need one) and return plain results; the CLI only
parses options, calls one of them inside ``with open_store(settings) as store:`` and prints.
The builders below them (:func:`make_chunker`, :func:`make_ingester`, :func:`make_searcher`…)
turn settings into parts, every part found by name in its plugin registry
(:func:`esrag.plugins.create`), so a setting means the same thing everywhere. Optional store
features are asked for by type (:class:`~esrag.stores.base.Installable`,
:class:`~esrag.stores.base.Rebuildable`, :class:`~esrag.stores.base.Removable`).

Library use::

    from esrag import app
    from esrag.config import load_settings

    settings = load_settings()
    with app.open_store(settings) as store:
        result = app.ingest_tree(settings, store, Path("docs"))
        hits = app.make_pipeline(settings, store).search("how do I schedule a task").hits
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from esrag import plugins
from esrag.chunking.base import Chunker
from esrag.config import Settings
from esrag.errors import ConfigError, EmbedderMismatch, PluginError
from esrag.embedding import Embedder, embedder_factory, normalize_spec
from esrag.ingest import Ingester, IngestSummary, Observer
from esrag.model import Chunk, Document
from esrag.search.pipeline import Pipeline
from esrag.search.searcher import Searcher
from esrag.sites import Site
from esrag.stores.base import IndexMeta, Installable, Rebuildable, Removable, Store


def connect(settings: Settings) -> Store:
    """The configured store, open; the caller closes it (:func:`open_store` does that for you).
    Elasticsearch when ``ESRAG_ES_URL`` is set, else the SQLite file.

    Raises:
        PluginError: ``store`` names no installed store.
        StoreError: the store cannot be opened (unreachable cluster, unwritable file).
    """
    store: Store = plugins.create("esrag.stores", settings.store_name, settings)
    return store


@contextmanager
def open_store(settings: Settings) -> Iterator[Store]:
    """``with open_store(settings) as store:`` the configured store (:func:`connect`), closed
    when the block ends, also on an error.

    Raises:
        PluginError, StoreError: as :func:`connect`.
    """
    store = connect(settings)
    try:
        yield store
    finally:
        store.close()


def make_chunker(settings: Settings, name: str | None = None) -> Chunker:
    """The chunker spec ``name`` (default: ``settings.chunking.chunker``), built by
    :func:`esrag.plugins.create` with ``settings.chunking`` (the class's ``from_settings`` when
    it has one).

    Raises:
        PluginError: unknown chunker (lists the installed ones).
    """
    chunker: Chunker = plugins.create("esrag.chunkers", name or settings.chunking.chunker, settings.chunking)
    return chunker


def corpus_chunker(settings: Settings, corpus: str, name: str | None = None, records: bool = False) -> Chunker:
    """The chunker for ``corpus``: the records chunker with the corpus's field names
    (``records``, or ``[corpora.NAME] chunker = "records"`` when no ``name`` is given), else the
    chunker ``name`` or ``[corpora.NAME] chunker`` (default ``chunking.chunker``); labelled with
    the corpus's ``authority`` when it has one (:class:`esrag.records.LabelledChunker`).

    Raises:
        PluginError: unknown chunker.
    """
    from esrag.records import LabelledChunker, RecordsChunker

    cs = settings.corpora.get(corpus)
    inner: Chunker
    if records or (not name and cs is not None and cs.chunker == "records"):
        inner = RecordsChunker(cs.records if cs else None, cs.authority if cs else None)
    else:
        inner = make_chunker(settings, name or (cs.chunker if cs else None))
    return LabelledChunker(inner, {"authority": cs.authority}) if cs is not None and cs.authority else inner


def default_corpus(path: Path) -> str:
    """The corpus name of a tree by default: its folder's name (a file's parent folder)."""
    resolved = path.resolve()
    return (resolved if resolved.is_dir() else resolved.parent).name or "default"


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
    """A searcher over ``store`` (:meth:`esrag.search.searcher.Searcher.from_settings`): queries
    are embedded with the model the index was built with unless ``embedder_spec`` overrides it
    (with ``corpus``'s query prefix when it sets one)."""
    return Searcher.from_settings(settings, store, embedder_spec, corpus)


def make_pipeline(settings: Settings, store: Store, embedder_spec: str | None = None, corpus: str | None = None) -> Pipeline:
    """The search pipeline over ``store`` (:class:`esrag.search.pipeline.Pipeline`: legs, fusion,
    fan-out, rerank, expansion, budget), its searcher from :func:`make_searcher` — queries
    embedded with the index's model unless ``embedder_spec`` overrides it, with ``corpus``'s
    ``[corpora.NAME]`` query prefix when given. What ``esrag search``, the servers and
    ``esrag eval`` run."""
    return Pipeline(settings, store, make_searcher(settings, store, embedder_spec, corpus))


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


# -- use cases -------------------------------------------------------------------------------
def setup_index(settings: Settings, store: Store) -> dict[str, Any]:
    """Create the index of ``store`` for the configured embedder and indexed text: the store's own
    set-up when it has one (:class:`~esrag.stores.base.Installable`: Elasticsearch templates,
    pipeline, the first index behind the alias), else the index meta written by ``ensure`` (the
    embedded store). Loads the embedder to learn its dims. Returns the report ``esrag setup``
    prints: ``{"store", "embedder", "dims", "path"?}`` for the embedded store, the store's own
    report otherwise.

    Raises:
        EmbedderMismatch: the index exists with another embedder. StoreError, ModelLoadError.
    """
    if isinstance(store, Installable):
        return store.setup(settings)
    emb = embedder_factory(settings)()
    store.ensure(IndexMeta.build(emb.spec, emb.dims, settings.index_text))
    return {"store": store.name, "embedder": emb.spec, "dims": emb.dims, **{k: v for k, v in store.stats().items() if k in ("path",)}}


def rebuildable(store: Store) -> Rebuildable:
    """``store`` as a store that can rebuild into a new versioned index (``--rebuild``).

    Raises:
        ConfigError: it cannot (the embedded store); the message names the way out.
    """
    if not isinstance(store, Rebuildable):
        raise ConfigError("--rebuild needs the Elasticsearch store (ESRAG_ES_URL); for the embedded store ingest into a new ESRAG_DB")
    return store


@dataclass
class IngestResult:
    """What :func:`ingest_tree` did: the ingest's ``summary`` and, for a rebuild, the alias swap
    report (``rebuild``: the store's ``finish_rebuild`` report, or ``{"swapped": False,
    "reason"}`` when files failed; None without ``rebuild``)."""

    summary: IngestSummary
    rebuild: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """``esrag ingest --json``: the summary's fields, plus ``rebuild`` for a rebuild."""
        return self.summary.to_dict() | ({"rebuild": self.rebuild} if self.rebuild is not None else {})


def ingest_tree(settings: Settings, store: Store, path: Path, *, corpus: str | None = None,
                include: Sequence[str] = (), exclude: Sequence[str] = (), chunker: str | None = None,
                records: bool = False, rebuild: bool = False, site: Site | None = None,
                observer: Observer | None = None) -> IngestResult:
    """Ingest the tree (or file) ``path`` into ``store`` as ``corpus`` (default: the folder's
    name, :func:`default_corpus`), incrementally (:class:`esrag.ingest.Ingester`).

    ``include`` replaces ``ingest.include`` (records: ``*.jsonl``, ``*.ndjson``, ``*.csv``,
    ``*.tsv`` by default); ``exclude`` adds to ``ingest.exclude``. ``chunker`` / ``records`` pick
    the chunker (:func:`corpus_chunker`); ``site`` (:func:`make_site`, default: resolved from
    settings and the tree) gives page URLs and the documentation version (ignored for records).
    With ``rebuild`` the chunks go into a new versioned index whose alias swap happens once the
    ingest had no failure (:class:`~esrag.stores.base.Rebuildable`).

    Raises:
        ConfigError: ``rebuild`` on a store that cannot rebuild; a bad site setting.
        EmbedderMismatch: the index was built with another embedder (on a store that can
            rebuild, the message names ``esrag ingest --rebuild``). PluginError, StoreError.
    """
    corpus = corpus or default_corpus(path)
    where = site if site is not None else make_site(settings, path, corpus)
    includes = list(include) or (["*.jsonl", "*.ndjson", "*.csv", "*.tsv"] if records else settings.ingest.include)
    excludes = settings.ingest.exclude + list(exclude)
    if rebuild:
        rebuildable(store).begin_rebuild()
    ingester = make_ingester(settings, store, corpus_chunker(settings, corpus, chunker, records), observer,
                             corpus=corpus, site=None if records else where, doc_version=where.doc_version)
    try:
        summary = ingester.run(path, corpus, includes, excludes)
    except EmbedderMismatch as exc:
        if isinstance(store, Rebuildable) and "--rebuild" not in str(exc):
            raise EmbedderMismatch(f"{exc} On Elasticsearch, `esrag ingest --rebuild PATH` builds a new versioned index with "
                                   "the configured embedder and swaps the alias to it when complete.") from exc
        raise
    swap = None
    if rebuild and isinstance(store, Rebuildable):
        swap = store.finish_rebuild() if not summary.failures else {"swapped": False, "reason": "failures: fix them and run again"}
    return IngestResult(summary, swap)


def chunk_file(settings: Settings, file: Path, chunker: str | None = None) -> tuple[Document, list[Chunk]]:
    """The document read from ``file`` and its chunks (``esrag chunk``): the chunker ``chunker``
    (default ``chunking.chunker``), include directives resolved inside the file's project (the
    nearest folder with book.toml, mkdocs.yml, conf.py or .git); ``doc.problems`` lists what
    the chunker could not resolve.

    Raises:
        SourceError: unreadable, binary or too large a file. PluginError: unknown chunker.
    """
    from esrag.sources import project_root, read_text

    doc = Document(path=file.name, text=read_text(file, str(file), settings.ingest.max_file_bytes),
                   source=str(file.resolve()), root=str(project_root(file)))
    return doc, make_chunker(settings, chunker).chunk(doc)


def _removable(store: Store) -> Removable:
    if not isinstance(store, Removable):
        raise PluginError(f"the {store.name} store cannot remove corpora or drop its index")
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
