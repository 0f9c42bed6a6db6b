"""The search use case shared by ``esrag search``, ``esrag serve`` (HTTP) and ``esrag mcp``.

One :class:`SearchService` holds one store connection and one warm query embedder for the life
of a process and is safe to call from many threads at once: every call builds its own result
(nothing a search finds is kept on the service, the pipeline or the store), the store serialises
what its connections cannot share (the embedded store reads on a connection per thread and writes
through one locked connection: :mod:`esrag.stores.sqlite_conn`), and the searcher runs the model
one query at a time (:meth:`esrag.search.searcher.Searcher.embed_query`). So the CLI, the HTTP
API and the MCP tools give the same hits for the same request.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from esrag.app import connect, corpora_status, llms_site, make_pipeline
from esrag.config import Settings
from esrag.errors import ConfigError, EsragError
from esrag.model import Hit
from esrag.search.pipeline import Pipeline, PipelineResult
from esrag.stores.base import ALL_VERSIONS, Filters, Store
from esrag.stores.staged import SwapGate

CORPORA_TTL_S = 5.0
"""Seconds between two re-reads of the corpus list caused by unknown corpus names."""


class UnknownCorpus(ConfigError):
    """A request names a corpus the index does not hold."""


@dataclass
class SearchRequest:
    """One search, as the CLI flags, the HTTP fields and the MCP arguments give it.

    Attributes:
        query: the question or keywords (non-empty).
        k: hits (None: ``search.k``). mode: ``hybrid``, ``bm25`` or ``dense`` (None: ``search.mode``).
        corpora: only these corpora (two or more fan out; one uses its ``[corpora.NAME]`` query prefix).
        path_prefix: only sources whose path starts with it. languages: ``--lang`` codes (``auto``
            = the query's language; empty = ``[language] filter``).
        doc_version: only chunks of this documentation version (:class:`Filters`; '' = the
            unversioned ones); None = each corpus's default version
            (:meth:`SearchService.default_search_versions`); :data:`ALL_VERSIONS` (``"*"``) = every version.
        budget: cl100k tokens of source text to pack (:func:`esrag.search.pipeline.pack`).
        expand, rerank, rerank_top_n, reformulate: the pipeline's stages (None = settings).
        embedder: embed the query with this spec instead of the index's own.
    """

    query: str
    k: int | None = None
    mode: str | None = None
    corpora: list[str] = field(default_factory=list)
    path_prefix: str | None = None
    languages: list[str] = field(default_factory=list)
    doc_version: str | None = None
    budget: int | None = None
    expand: str | None = None
    rerank: str | None = None
    rerank_top_n: int | None = None
    reformulate: int | None = None
    embedder: str | None = None


def hit_json(hit: Hit) -> dict[str, Any]:
    """A hit's ``--json`` form (also the HTTP API's and the MCP tool's): :meth:`esrag.model.Hit.to_dict`
    plus ``truncated`` (cut by the budget) and ``chunk_ids`` (members of an expanded hit) when they apply."""
    d = hit.to_dict()
    md = hit.chunk.metadata
    if md.get("truncated"):
        d["truncated"] = True
    if md.get("chunks"):
        d["chunk_ids"] = [m[0] for m in md["chunks"]]
    return d


def result_json(result: PipelineResult, explain: bool = False) -> dict[str, Any]:
    """``{"hits": [hit_json...], "timings_ms": {...}}``, plus ``versions`` (``{corpus: version}``:
    the corpora of several versions that were searched in their default one) when any was; with ``explain`` also ``fusion`` and,
    when present, ``diagnostics``, ``reformulations`` and ``notes`` (the shape of ``esrag search
    --explain --json``; each hit's ``legs`` always carries its leg ranks and scores)."""
    out: dict[str, Any] = {"hits": [hit_json(h) for h in result.hits], "timings_ms": result.timings_ms}
    if result.versions:
        out["versions"] = result.versions
    if explain:
        out["fusion"] = result.fusion
        out.update(
            {
                key: value
                for key, value in (("diagnostics", result.diagnostics), ("reformulations", result.reformulations), ("notes", result.notes))
                if value
            }
        )
    return out


def versions_note(versions: dict[str, str], all_versions: str) -> str:
    """One line saying which version of each corpus of several versions a search read
    (``versions``: ``{corpus: version}``, :attr:`PipelineResult.versions`) and how to read them
    all (``all_versions``: the flag or argument, e.g. ``--all-versions``)."""
    which = ", ".join(f"{v or '(unversioned)'} of {c}" for c, v in versions.items())
    return f"Searched the default version only: {which}; {all_versions} searches every version."


class SearchService:
    """Search, ask, pages and corpora over one open store.

    Args:
        settings: all settings. store: the open store (the service closes it in :meth:`close`).
        embedder: embed queries with this spec instead of the index's own (``--embedder``).
    """

    def __init__(self, settings: Settings, store: Store, embedder: str | None = None) -> None:
        self.settings = settings
        self.store = store
        self.embedder_spec = embedder
        self._lock = threading.Lock()
        self._pipelines: dict[tuple[str | None, str | None], Pipeline] = {}
        self._corpora: tuple[float, dict[str, Any]] | None = None
        self._answerer: Any = None
        #: held shared by each search and page read, alone by a sync swapping a version in
        #: (:class:`esrag.stores.staged.SwapGate`; ``esrag serve``'s syncs, issue 39)
        self.swap_gate = SwapGate()
        #: searches run at once, the others wait their turn (:func:`search_concurrency`; 0: no limit)
        self.search_slots = search_concurrency(settings, store, embedder)
        self._search_slots = threading.BoundedSemaphore(self.search_slots) if self.search_slots else None

    # -- parts ---------------------------------------------------------------------------------
    def pipeline(self, corpus: str | None = None, embedder: str | None = None) -> Pipeline:
        """The pipeline for a search (built once, then shared): a single ``corpus`` with its own
        ``[corpora.NAME]`` query or passage prefix gets a searcher with that prefix, every other
        search shares the default one (one model load)."""
        spec = embedder or self.embedder_spec
        cs = self.settings.corpora.get(corpus) if corpus else None
        key = (corpus if cs is not None and (cs.query_prefix or cs.passage_prefix) else None, spec)
        with self._lock:
            if key not in self._pipelines:
                self._pipelines[key] = make_pipeline(self.settings, self.store, spec, key[0])
            return self._pipelines[key]

    def warm(self) -> None:
        """Load the default query embedder now (a server does this before it listens)."""
        _ = self.pipeline().searcher.embedder

    @property
    def model_loaded(self) -> bool:
        """Whether the default pipeline's query embedder is in memory."""
        p = self._pipelines.get((None, self.embedder_spec))
        return bool(p and p.searcher.embedder_loaded)

    def corpora(self, fresh: bool = False, within: Collection[str] | None = None) -> dict[str, Any]:
        """``{name: {"chunks", "sources", "versions", "default_version"}}`` of the index
        (:func:`esrag.app.corpora_status`): read once, then again with ``fresh``; only the
        corpora in ``within`` when given (a key per corpus, :class:`esrag.serve.security.Access`)."""
        cached = self._corpora
        if fresh or cached is None:
            cached = (time.monotonic(), dict(corpora_status(self.settings, self.store).get("corpora", {})))
            self._corpora = cached
        if within is None:
            return cached[1]
        return {name: row for name, row in cached[1].items() if name in within}

    def libraries(self, name: str, within: Collection[str] | None = None) -> list[dict[str, Any]]:
        """The corpora a library ``name`` ("django", "react router v6") may mean, best first, of
        those ``within`` (every corpus when None): :func:`esrag.libraries.resolve_library`.

        Raises:
            StoreError: the store is unreachable.
        """
        from esrag.libraries import resolve_library
        from esrag.sync_state import site_titles

        # a site's title names the library in any of its versions: the most recent one that says something
        return resolve_library(self.settings, self.corpora(fresh=True, within=within), name, sites=site_titles(self.settings))

    def recent_corpora(self) -> dict[str, Any]:
        """:meth:`corpora`, read again when older than :data:`CORPORA_TTL_S` seconds (so a
        version ingested or removed meanwhile is seen within that time)."""
        if self._corpora is None or time.monotonic() - self._corpora[0] > CORPORA_TTL_S:
            return self.corpora(fresh=True)
        return self._corpora[1]

    def default_versions(self) -> dict[str, str]:
        """``{corpus: default version}`` (read at most every :data:`CORPORA_TTL_S` seconds)."""
        return {name: row["default_version"] for name, row in self.recent_corpora().items() if row.get("default_version") is not None}

    def default_search_versions(self, corpora: list[str] | None = None) -> dict[str, str]:
        """``{corpus: version}`` a search without ``doc_version`` is restricted to
        (:attr:`Filters.versions`): each corpus of ``corpora`` (empty: every corpus) that holds
        two or more versions, to its default one (:func:`esrag.app.default_version`). A corpus
        with one version (unversioned ones included) is not named, so its search is unchanged.
        Read from :meth:`recent_corpora`: no store round trip on most searches of a server.

        Raises:
            StoreError: the store is unreachable.
        """
        rows = self.recent_corpora()
        wanted = corpora or list(rows)
        return {
            name: rows[name]["default_version"]
            for name in wanted
            if name in rows and len(rows[name].get("versions") or {}) > 1 and rows[name].get("default_version") is not None
        }

    def search_filters(self, req: SearchRequest, languages: list[str], corpora: list[str] | None = None) -> Filters:
        """The :class:`Filters` of ``req``: its corpora (or ``corpora``, e.g. a key's, when
        given), path prefix, ``languages``, translations left out, and its version —
        ``doc_version`` when given, every version for :data:`ALL_VERSIONS`, else each corpus's
        default (:meth:`default_search_versions`)."""
        names = list(req.corpora) if corpora is None else corpora
        versions: dict[str, str]
        if req.doc_version == ALL_VERSIONS:
            doc_version, versions = None, {}
        elif req.doc_version is not None:
            doc_version, versions = req.doc_version, {}
        else:
            doc_version, versions = None, self.default_search_versions(names)
        # no language asked for: each site in its default locale, not a mix of its translations
        return Filters(
            corpora=names,
            path_prefix=req.path_prefix,
            languages=languages,
            doc_version=doc_version,
            versions=versions,
            translations=False,
        )

    def check_corpora(self, names: list[str], within: Collection[str] | None = None) -> None:
        """Raise :class:`UnknownCorpus` (listing the indexed ones) for a name the index lacks.
        Known names cost nothing; an unknown name re-reads the list (at most every
        :data:`CORPORA_TTL_S` seconds), so a corpus ingested meanwhile is found. With
        ``within`` (a key's corpora) a name outside it is unknown in the same words and at the
        same cost, and only the corpora within it are listed.

        Raises:
            UnknownCorpus: a name the index does not hold. StoreError: the store is unreachable.
        """
        if not names:
            return
        known = self.corpora(within=within)
        if any(n not in known for n in names) and time.monotonic() - (self._corpora or (0.0,))[0] > CORPORA_TTL_S:
            known = self.corpora(fresh=True, within=within)
        missing = [n for n in names if n not in known]
        if missing:
            raise UnknownCorpus(f"unknown corpus {missing[0]!r}; indexed: {', '.join(sorted(known)) or '(none)'}")

    @contextmanager
    def _turn(self, while_waiting: Callable[[], object] | None = None) -> Iterator[None]:
        """``with self._turn():`` one of the search slots (:func:`search_concurrency`), waited
        for; when every slot is taken, ``while_waiting()`` runs before the wait (a search that
        finds a free slot never calls it)."""
        slots = self._search_slots
        if slots is None:
            yield
            return
        if not slots.acquire(blocking=False):
            if while_waiting is not None:
                while_waiting()
            slots.acquire()
        try:
            yield
        finally:
            slots.release()

    def embed_ahead(self, req: SearchRequest, within: Collection[str] | None = None) -> None:
        """Embed ``req``'s query now, so that its search finds the vector kept: what a search
        does while it waits for a slot (:meth:`_turn`; ``esrag serve`` before its limiter), so
        that the searches waiting together embed their queries in one forward pass
        (:meth:`esrag.search.searcher.Searcher.embed_query`). Does nothing for a BM25 search,
        before the model is loaded (a first search times its load apart), or for a request its
        search will refuse (an unknown corpus, or one outside ``within``: the search says so).

        Raises:
            whatever the embedder raises (the search would raise it too).
        """
        if (req.mode or self.settings.search.mode) == "bm25" or not req.query.strip():
            return
        try:
            self.check_corpora(req.corpora, within)
        except EsragError:
            return
        searcher = self.pipeline(req.corpora[0] if len(req.corpora) == 1 else None, req.embedder).searcher
        if searcher.embedder_loaded:
            searcher.embed_query(req.query)

    # -- use cases -----------------------------------------------------------------------------
    def search(self, req: SearchRequest, *, check_corpora: bool = False, within: Collection[str] | None = None) -> PipelineResult:
        """Run ``req`` through the pipeline (language filter resolved from the query, one corpus
        searched with its own query prefix). ``within`` (a key's corpora, never empty): a
        request naming no corpus searches all of them at once (one filter, no fan-out); one
        naming a corpus outside them is an :class:`UnknownCorpus` (with ``check_corpora``).

        Raises:
            ConfigError: empty query, bad k, mode, budget or stage spec; UnknownCorpus (with
            ``check_corpora``). StoreError: the store is unreachable. NotIndexedError: empty index.
        """
        from esrag.language import language_filter

        if not req.query or not req.query.strip():
            raise ConfigError("the query is empty; give a question or keywords")
        if check_corpora:
            self.check_corpora(req.corpora, within)
        scoped = within is not None and not req.corpora
        s = self.settings
        languages = language_filter(list(req.languages) or s.language.filter, req.query, s.language.candidates)
        filters = self.search_filters(req, languages, sorted(within or ()) if scoped else None)
        pipeline = self.pipeline(req.corpora[0] if len(req.corpora) == 1 else None, req.embedder)
        with (
            self._turn(lambda: self.embed_ahead(req, within)),
            self.swap_gate.reading(),
        ):  # every leg sees one state of the store (a sync swaps a version in at once)
            result = pipeline.search(
                req.query,
                corpora=[] if scoped else None,
                k=req.k,
                mode=req.mode,
                filters=filters,
                budget=req.budget,
                expand=req.expand,
                rerank=req.rerank,
                rerank_top_n=req.rerank_top_n,
                reformulate=req.reformulate,
            )
        result.versions = dict(filters.versions)
        if not result.hits and req.doc_version and req.doc_version != ALL_VERSIONS:
            note = self._missing_version(req.doc_version, req.corpora, within)
            if note:
                result.notes.append(note)
        return result

    def _missing_version(self, version: str, names: list[str], within: Collection[str] | None) -> str:
        """For a search that found nothing in ``version``: a note naming the versions the
        searched corpora (``names``, else all those ``within``) do hold, when none holds
        ``version`` ('' when one does: the search simply matched nothing). Read fresh: it runs
        only for empty results, and a version ingested a moment ago must not be called missing."""
        known = self.corpora(fresh=True, within=within)
        rows = {n: known[n] for n in (names or known) if n in known}
        if not rows or any(version in row.get("versions", {}) for row in rows.values()):
            return ""
        held = "; ".join(
            f"{n}: {', '.join(sorted(v for v in row.get('versions', {}) if v)) or '(unversioned)'}" for n, row in sorted(rows.items())
        )
        return f"no corpus searched holds version {version!r} ({held})"

    def ask(
        self,
        question: str,
        corpora: list[str] | None = None,
        budget: int | None = None,
        *,
        check_corpora: bool = False,
        within: Collection[str] | None = None,
        **stages: Any,
    ) -> Any:
        """The grounded answer (:class:`esrag.answer.Answer`) to ``question``: retrieve up to
        ``budget`` (default ``[answer] budget``) tokens, fitted to the LLM's window
        (:func:`esrag.answer.fit_budget`), from each corpus's default version
        (:meth:`search_filters`), then generate.

        Raises:
            ConfigError, StoreError as :meth:`search`; LLMError, AnswerError from the LLM.
        """
        from esrag.answer import make_answerer

        if not question or not question.strip():
            raise ConfigError("the question is empty")
        if check_corpora:
            self.check_corpora(list(corpora or []), within)
        with self._lock:
            if self._answerer is None:
                self._answerer = make_answerer(self.settings)
            answerer = self._answerer
        want = budget or self.settings.answer.budget
        fitted = answerer.fit_budget(want)
        scoped = within is not None and not corpora
        with self._turn(), self.swap_gate.reading():
            result = self.pipeline(None).search(
                question,
                filters=self.search_filters(
                    SearchRequest(question, corpora=list(corpora or [])), [], sorted(within or ()) if scoped else None
                ),
                corpora=[] if scoped else None,
                budget=fitted,
                **stages,
            )
        return answerer.answer(question, result.hits)

    def page(self, path: str, corpus: str | None = None, doc_version: str | None = None, within: Collection[str] | None = None) -> Any:
        """The page at ``path`` (:func:`esrag.pages.get_page`: a source path with or without
        the docs root prefix, or the page's URL), of ``doc_version`` or else its corpus's
        default version (:meth:`default_versions`), or None; only pages of the corpora
        ``within`` when given.

        Raises:
            PageNotFound: no such page (names the nearest paths). StoreError: store unreachable.
        """
        from esrag.pages import get_page

        with self.swap_gate.reading():
            return get_page(self.store, path, corpus, doc_version, default_versions=self.default_versions(), within=within)

    def llms_site(self, corpus: str, doc_version: str | None = None, within: Collection[str] | None = None) -> Any:
        """``corpus`` as ``llms.txt`` describes it (:func:`esrag.app.llms_site`, with the
        cached default versions): what the ``llms.txt`` routes of ``esrag serve`` render.
        ``within`` (a key's corpora): a corpus outside it is unknown in the same words as one
        the index lacks, and only the corpora within it are named.

        Raises:
            PageNotFound: unknown corpus or version. UnknownCorpus: a corpus outside ``within``
            (:meth:`check_corpora`). StoreError: store unreachable.
        """
        if within is not None:
            self.check_corpora([corpus], within)
        with self.swap_gate.reading():
            return llms_site(self.settings, self.store, corpus, doc_version, self.default_versions())

    def page_windows(
        self,
        path: str,
        corpus: str | None = None,
        doc_version: str | None = None,
        *,
        section: str | None = None,
        offset: int | None = None,
        within: Collection[str] | None = None,
    ) -> tuple[Callable[[int | None], Any], str | None]:
        """The page at ``path`` (:meth:`page`, read once) as a function of a text budget, and
        the section it is scoped to: ``fit(n)`` is :func:`esrag.pages.page_window` of ``n`` cl100k tokens (None: no limit)
        over one ``section`` (anchor or section path; by default the ``#anchor`` of a URL
        ``path`` when it names a section of the page) from line ``offset``. What the servers
        call to fit a page into a response. ``within``: as :meth:`page`.

        Raises:
            PageNotFound: as :meth:`page`. ConfigError (from ``fit``): unknown section, offset
            outside the page or section.
        """
        from esrag.pages import PageNotFound, find_section, page_window

        page = self.page(path, corpus, doc_version, within)
        if page is None:
            raise PageNotFound(f"no indexed page {path!r}")
        if section is None and offset is None and "#" in path:
            anchor = path.split("#", 1)[1]
            try:
                find_section(page, anchor)
                section = anchor
            except ConfigError:  # a URL's anchor may point at any element of the page
                pass
        return (lambda n: page_window(page, n, section=section, offset=offset)), section

    def health(self) -> dict[str, Any]:
        """``{"ok", "store", "store_reachable", "model_loaded", "chunks", "error"?}``; never raises."""
        out: dict[str, Any] = {"store": self.store.name, "model_loaded": self.model_loaded}
        try:
            stats = self.store.stats()
            out.update(store_reachable=True, chunks=stats.get("chunks", 0))
        except EsragError as exc:
            out.update(store_reachable=False, error=str(exc).splitlines()[0][:300])
        out["ok"] = bool(out["store_reachable"] and out["model_loaded"])
        return out

    def close(self) -> None:
        """Close the store."""
        self.store.close()


def search_concurrency(settings: Settings, store: Store, embedder: str | None = None) -> int:
    """How many searches one process runs at once (0: no limit): ``[serve] search_concurrency``
    when set, else the CPUs this process may use (``os.sched_getaffinity``) when ``store`` is the
    embedded SQLite store and the query embedder (``embedder`` or ``settings.embedder``) runs
    here (``st:``) and no search waits on a server ([search] ``reformulate`` asks an LLM;
    a ``rerank`` other than ``cross-encoder:…``), else no limit.

    Why: on the embedded store a search is CPU work in this process (the query embedding, the
    two legs, fusion, sections), and searches beyond the cores only take turns at the
    interpreter lock and the cores: with 8 concurrent HTTP clients on 2 cores (Laravel docs) the
    server switched threads 166 times per search and ran 200 searches/s at p95 68 ms; at 2 at
    once 31 times, 239/s at p95 40 ms (issue 39; benchmarks/README.md "Many clients at once").
    A search on Elasticsearch, or one whose query a remote embedder embeds, mostly waits on the
    network, so it is not limited.
    """
    from esrag.embedding import parse_spec
    from esrag.search.rerank import parse_spec as rerank_spec

    if settings.serve.search_concurrency:
        return settings.serve.search_concurrency
    if store.name != "sqlite":
        return 0
    if parse_spec(embedder or settings.embedder)[0] != "st":
        return 0
    if settings.search.reformulate:  # each search asks an LLM
        return 0
    if settings.search.rerank:
        try:
            if rerank_spec(settings.search.rerank)[0] != "cross-encoder":  # a reranker server
                return 0
        except ConfigError:  # a bad spec: each search reports it
            return 0
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@contextmanager
def open_service(settings: Settings, embedder: str | None = None) -> Iterator[SearchService]:
    """``with open_service(settings) as service:`` a :class:`SearchService` over the configured
    store (:func:`esrag.app.connect`: Elasticsearch when ``es_url`` is set, else the SQLite
    file), closed when the block ends, also on an error. Keep one for many searches: it loads
    the query model once and is safe to share between threads.

    Raises:
        PluginError, StoreError: the store cannot be opened (as :func:`esrag.app.connect`).
    """
    service = SearchService(settings, connect(settings), embedder)
    try:
        yield service
    finally:
        service.close()
