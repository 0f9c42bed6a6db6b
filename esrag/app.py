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
from esrag.embedding import Embedder, embedder_factory, normalize_spec
from esrag.errors import ConfigError, EmbedderMismatch, PluginError
from esrag.ingest import Ingester, IngestSummary, Observer
from esrag.model import Chunk, Document
from esrag.search.pipeline import Pipeline
from esrag.search.searcher import Searcher
from esrag.sites import Site
from esrag.stores.base import ALL_VERSIONS, IndexMeta, Installable, Rebuildable, Removable, Store


def site_names() -> tuple[str, ...]:
    """The ``--site`` values: every registered documentation generator and its variants
    (:func:`esrag.sites.registry.site_names`, in detection order)."""
    from esrag.sites.registry import site_names as names

    return names()


def connect(settings: Settings, read_only: bool = False) -> Store:
    """The configured store, open; the caller closes it (:func:`open_store` does that for you).
    Elasticsearch when ``ESRAG_ES_URL`` is set, else the SQLite file. ``read_only``: for the
    commands that only read (search, ask, page, status, doctor, serve, mcp): the store creates
    no file or folder (the store class's ``from_settings(settings, read_only=True)``; a store
    plugin without that argument is opened as usual).

    Raises:
        PluginError: ``store`` names no installed store.
        StoreError: the store cannot be opened (unreachable cluster, unwritable file).
    """
    options = {"read_only": True} if read_only and plugins.accepts("esrag.stores", settings.store_name, "read_only") else {}
    store: Store = plugins.create("esrag.stores", settings.store_name, settings, **options)
    return store


def nothing_indexed(settings: Settings) -> str:
    """What a read-only command says when the configured store holds no index: where it looked
    (the SQLite file, absolute, and ``ESRAG_DB``; or the alias on the cluster, its URL redacted)
    and the command that creates it."""
    from esrag.urls import redact_url

    if settings.store_name == "sqlite":
        where = f"{settings.db_path.absolute()} (ESRAG_DB)"
    else:
        where = f"the alias {settings.index!r} (ESRAG_INDEX) on Elasticsearch at {redact_url(settings.es_url or '')}"
    return f"nothing is indexed in {where} yet; `esrag ingest PATH` creates it"


def require_index(settings: Settings, store: Store) -> IndexMeta:
    """The index's meta, or NotIndexedError saying :func:`nothing_indexed` (where esrag looked
    and the command that creates the index)."""
    from esrag.errors import NotIndexedError

    meta = store.meta()
    if meta is None:
        raise NotIndexedError(nothing_indexed(settings))
    return meta


@contextmanager
def open_store(settings: Settings, read_only: bool = False) -> Iterator[Store]:
    """``with open_store(settings) as store:`` the configured store (:func:`connect`, with
    ``read_only`` as there), closed when the block ends, also on an error.

    Raises:
        PluginError, StoreError: as :func:`connect`.
    """
    store = connect(settings, read_only)
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
    the corpus's ``authority`` when it has one (:class:`esrag.chunking.records.LabelledChunker`).

    Raises:
        PluginError: unknown chunker.
    """
    from esrag.chunking.records import LabelledChunker, RecordsChunker

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


def make_site(
    settings: Settings,
    root: Path,
    corpus: str,
    site: str | None = None,
    base_url: str | None = None,
    url_template: str | None = None,
    doc_version: str | None = None,
    include_root: Path | None = None,
    built_site: Path | None = None,
    sitemap: str | None = None,
) -> Site:
    """Where the tree at ``root`` is published: flags first, then ``[corpora.NAME] site /
    base_url / url_template / doc_version``, then the generator's config found in the tree
    (:func:`esrag.sites.resolve_site`). ``include_root`` (``--root``): the folder include
    directives may read from; ``built_site`` / ``sitemap`` (``--built-site``, ``--sitemap``): the
    published site whose page URLs and heading ids win over the generator's rules.

    Raises:
        ConfigError: unknown site, a base URL that is not absolute http(s) or a ``url_template``
            that does not format (checked here, once, not per file); the message names the flag
            (``--site``, ``--base-url``, ``--url-template``) or the setting (``[corpora.NAME] site``);
            the version ``*`` (:data:`esrag.stores.base.ALL_VERSIONS`, reserved for searches).
    """
    from esrag.sites import check_base_url, check_site, check_url_template, resolve_site

    cs = settings.corpora.get(corpus)
    if url_template:
        check_url_template(url_template)
    if site is None and cs is not None and cs.site:
        site = check_site(cs.site, f"[corpora.{corpus}] site")
    if base_url is None and cs is not None and cs.base_url:
        base_url = check_base_url(cs.base_url, f"[corpora.{corpus}] base_url")
    if url_template is None and cs is not None:
        url_template = cs.url_template and check_url_template(cs.url_template, f"[corpora.{corpus}] url_template")
    version = doc_version if doc_version is not None else (cs.doc_version if cs is not None and cs.doc_version else "")
    if version == ALL_VERSIONS:
        flag = "--doc-version" if doc_version is not None else f"[corpora.{corpus}] doc_version"
        raise ConfigError(
            f"{flag} {ALL_VERSIONS!r} is reserved: a search with doc_version {ALL_VERSIONS!r} reads every version; name the version"
        )
    where = resolve_site(root, site, base_url, url_template, version, include_root=include_root)
    where.notebook_outputs = settings.ingest.notebook_outputs
    if built_site is not None or sitemap:
        where.attach_built(built_site, sitemap)
    return where


def make_ingester(
    settings: Settings,
    store: Store,
    chunker: Chunker,
    observer: Observer | None = None,
    corpus: str | None = None,
    site: Site | None = None,
    doc_version: str = "",
    allow_delete: bool = False,
) -> Ingester:
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
    ``doc_version`` is stored on every chunk and scopes the manifest. The deletion guard uses
    ``ingest.max_delete_fraction`` unless ``allow_delete`` (:class:`esrag.ingest.DeletionGuard`).

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
        max_delete_fraction=settings.ingest.max_delete_fraction,
        allow_delete=allow_delete,
        id_chunker=chunker,
        follow_external_symlinks=settings.ingest.follow_external_symlinks,
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
    emb = embedder_factory(settings)()
    meta = IndexMeta.build(emb.spec, emb.dims, settings.index_text)
    if isinstance(store, Installable):
        return store.install(meta)
    store.ensure(meta)
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


def ingest_tree(
    settings: Settings,
    store: Store,
    path: Path,
    *,
    corpus: str | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    chunker: str | None = None,
    records: bool = False,
    rebuild: bool = False,
    site: Site | None = None,
    observer: Observer | None = None,
    allow_delete: bool = False,
) -> IngestResult:
    """Ingest the tree (or file) ``path`` into ``store`` as ``corpus`` (default: the folder's
    name, :func:`default_corpus`), incrementally (:class:`esrag.ingest.Ingester`).

    ``include`` replaces ``ingest.include`` (records: ``*.jsonl``, ``*.ndjson``, ``*.csv``,
    ``*.tsv`` by default); ``exclude`` adds to ``ingest.exclude``. ``chunker`` / ``records`` pick
    the chunker (:func:`corpus_chunker`); ``site`` (:func:`make_site`, default: resolved from
    settings and the tree) gives page URLs and the documentation version (ignored for records).
    With ``rebuild`` the chunks go into a new versioned index whose alias swap happens once the
    ingest had no failure (:class:`~esrag.stores.base.Rebuildable`). An ingest that would delete
    more than ``ingest.max_delete_fraction`` of the corpus's chunks writes nothing and reports a
    failure, unless ``allow_delete`` (:class:`esrag.ingest.DeletionGuard`).

    Raises:
        ConfigError: ``rebuild`` on a store that cannot rebuild; a bad site setting.
        EmbedderMismatch: the index was built with another embedder (on a store that can
            rebuild, the message names ``esrag ingest --rebuild``). PluginError, StoreError.
    """
    corpus = corpus or default_corpus(path)
    where = site if site is not None else make_site(settings, path, corpus)
    includes = list(include) or (
        ["*.jsonl", "*.ndjson", "*.csv", "*.tsv"] if records else [*settings.ingest.include, *where.include]
    )  # the generator's own suffixes
    excludes = settings.ingest.exclude + list(exclude)
    if rebuild:
        rebuildable(store).begin_rebuild()
    ingester = make_ingester(
        settings,
        store,
        corpus_chunker(settings, corpus, chunker, records),
        observer,
        corpus=corpus,
        site=None if records else where,
        doc_version=where.doc_version,
        allow_delete=allow_delete,
    )
    try:
        summary = ingester.run(path, corpus, includes, excludes)
    except EmbedderMismatch as exc:
        if isinstance(store, Rebuildable) and "--rebuild" not in str(exc):
            raise EmbedderMismatch(
                f"{exc} On Elasticsearch, `esrag ingest --rebuild PATH` builds a new versioned index with "
                "the configured embedder and swaps the alias to it when complete."
            ) from exc
        raise
    swap = None
    if rebuild and isinstance(store, Rebuildable):
        if summary.failures:
            store.settle_rebuild()  # the run ended: the next --rebuild resumes it
            swap = {"swapped": False, "reason": "failures: fix them and run again"}
        else:
            swap = store.finish_rebuild()
    return IngestResult(summary, swap)


def chunk_file(settings: Settings, file: Path, chunker: str | None = None, root: Path | None = None) -> tuple[Document, list[Chunk]]:
    """The document read from ``file`` and its chunks (``esrag chunk``): the chunker ``chunker``
    (default ``chunking.chunker``), include directives resolved inside ``root`` (``--root``;
    default the file's project: the nearest folder with book.toml, mkdocs.yml, conf.py or .git,
    as :func:`esrag.sources.project_root`); ``doc.problems`` lists what the chunker could not
    resolve. The site (how the generator reads the file) is always the file's project's.

    Raises:
        SourceError: unreadable, binary or too large a file. PluginError: unknown chunker.
        ConfigError: ``root`` is not a folder holding ``file``.
    """
    from esrag.sites import resolve_site
    from esrag.sources import project_root, read_text

    project = project_root(file)
    tree = root.resolve() if root is not None else project
    if root is not None and (not tree.is_dir() or not file.resolve().is_relative_to(tree)):
        raise ConfigError(f"--root {root}: not a folder holding {file}")
    doc = Document(
        path=file.resolve().relative_to(tree).as_posix(),
        text=read_text(file, str(file), settings.ingest.max_file_bytes),
        source=str(file.resolve()),
        root=str(tree),
    )
    resolve_site(project).read_as(doc)  # as the generator reads it (Sphinx source_suffix = ".txt": reStructuredText)
    doc.path = file.name
    return doc, make_chunker(settings, chunker).chunk(doc)


def list_corpora(store: Store) -> dict[str, dict[str, Any]]:
    """The corpora ``store`` holds: ``{name: {"chunks": int, "sources": int, "versions": {version:
    {"chunks", "sources", "indexed_at"}}}}`` in name order (``esrag status``'s ``corpora``
    without ``default_version``, which :func:`corpora_status` adds; ``{}`` for an empty or new index).

    Raises:
        StoreError: the store cannot be read.
    """
    return dict(store.stats().get("corpora", {}))


def default_version(settings: Settings, corpus: str, versions: dict[str, dict[str, Any]]) -> str | None:
    """The documentation version of ``corpus`` that pages are read from when none is asked
    for: ``[corpora.NAME] default_version`` when the corpus holds it, else the most recently
    ingested version (greatest ``indexed_at`` of its chunks; on a tie the greatest name).
    ``versions`` is the corpus's ``{version: {"chunks", "sources", "indexed_at"}}`` from
    ``store.stats()`` ('' = unversioned). None when the corpus holds no chunk."""
    cs = settings.corpora.get(corpus)
    if cs is not None and cs.default_version is not None and cs.default_version in versions:
        return cs.default_version
    if not versions:
        return None
    return max(versions, key=lambda v: (versions[v].get("indexed_at") or "", v))


def corpora_status(settings: Settings, store: Store) -> dict[str, Any]:
    """``store.stats()`` with each corpus's ``default_version`` added (:func:`default_version`;
    ``null`` for unversioned chunks) next to its ``versions`` — what ``esrag status``,
    ``GET /corpora`` and MCP ``list_corpora`` show.

    Raises:
        StoreError: the store is unreachable.
    """
    stats = store.stats()
    for name, row in stats.get("corpora", {}).items():
        versions = row.setdefault("versions", {})
        row["default_version"] = default_version(settings, name, versions)
    return stats


def read_page(settings: Settings, store: Store, path: str, corpus: str | None = None, doc_version: str | None = None) -> Any:
    """The page ``path`` (a source path, with or without the docs root prefix, or the page's
    URL) of ``doc_version``, else of its corpus's default version (:func:`default_version`):
    :func:`esrag.pages.get_page` — what ``esrag page`` prints.

    Raises:
        PageNotFound: no such page (names the nearest paths). StoreError: store unreachable.
    """
    from esrag.pages import get_page

    return get_page(store, path, corpus, doc_version, default_versions=default_versions(settings, store))


def default_versions(settings: Settings, store: Store) -> dict[str, str]:
    """``{corpus: default version}`` of every corpus holding chunks (:func:`default_version`).

    Raises:
        StoreError: the store is unreachable.
    """
    corpora = corpora_status(settings, store).get("corpora", {})
    return {name: row["default_version"] for name, row in corpora.items() if row.get("default_version") is not None}


def llms_site(settings: Settings, store: Store, corpus: str, doc_version: str | None = None, defaults: dict[str, str] | None = None) -> Any:
    """``corpus`` as ``llms.txt`` describes it (:func:`esrag.llms_txt.read_site`): the pages of
    ``doc_version``, else of the corpus's default version (``defaults``, else
    :func:`default_versions`), summarised by ``[corpora.NAME] intent`` when set, else by the
    site's own description; headed by the site's own title when its configuration gives one
    (a synced source: :func:`esrag.sync_state.site_titles`) — what ``esrag export llms-txt``
    writes and ``esrag serve`` serves.

    Raises:
        PageNotFound: unknown corpus or version (names the indexed ones). StoreError: store unreachable.
    """
    from esrag.llms_txt import read_site
    from esrag.sync_state import site_titles

    cs = settings.corpora.get(corpus)
    defaults = defaults if defaults is not None else default_versions(settings, store)
    wanted = {corpus: doc_version} if doc_version is not None else defaults
    said = site_titles(settings, wanted).get(corpus, {})
    summary = (cs.intent if cs else "") or said.get("description", "")
    return read_site(store, corpus, doc_version=doc_version, default_versions=defaults, summary=summary, title=said.get("title", ""))


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
