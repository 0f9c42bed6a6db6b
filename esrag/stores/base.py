"""The store contract every backend implements (SQLite embedded default, Elasticsearch).

A store holds chunks with their vectors, answers BM25 and kNN searches with filters applied
*inside* each search (a filter applied after kNN picked its k would return too few hits), and
reports per-source manifests so that ingest can be incremental. The shared test suite in
``tests/store_suite.py`` is the executable form of this contract.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from esrag import __version__
from esrag.errors import EmbedderMismatch
from esrag.model import Chunk

#: Chunk fields a store can search with BM25 (text fields of the index).
TEXT_FIELDS = ("text", "section_path", "doc_title", "title", "summary", "keywords", "questions", "entities", "context")


#: the ``doc_version`` of a search that reads every indexed version (HTTP/MCP ``doc_version="*"``,
#: ``esrag search --all-versions``; issue 38); never a version's own name (``esrag ingest`` refuses it).
ALL_VERSIONS = "*"


@dataclass(slots=True)
class Filters:
    """Restrictions applied inside both legs of a search.

    Attributes:
        corpora: keep only these corpora (empty = all).
        path_prefix: keep only chunks whose ``source_path`` starts with this string.
        languages: keep only these ``language`` values (empty = all).
        exclude_ids: never return these chunk ids.
        effective_on: an ISO date ``YYYY-MM-DD``: keep only chunks in force on that day, i.e.
            without an ``effective_date`` or with one on or before it (compared by calendar
            day; seed 001's ``effective_date <= today``, resolved to a date by the caller).
        exclude_superseded: drop chunks whose ``superseded_by`` is set (seed 001: superseded
            versions are near-duplicates that differ in metadata only).
        doc_version: keep only chunks of this documentation version (None = any; '' = the
            unversioned ones).
        versions: ``{corpus: version}``: the chunks of a corpus named here are kept only when
            of that version ('' = unversioned); corpora not named are not restricted. One
            clause per corpus, OR-ed: how a search without ``doc_version`` reads each corpus
            in its default version (:meth:`esrag.service.SearchService.search`; issue 38).
        translations: keep the chunks of translated pages (``translation`` set: a page of a
            site's locale other than its default one). False: a search with no ``languages``
            reads each site in its default locale only, not a mix of its translations — what
            :meth:`esrag.service.SearchService.search` (the CLI, HTTP and MCP) asks for; a
            ``languages`` filter always decides by language alone
            (:meth:`excludes_translations`).
    """

    corpora: list[str] = field(default_factory=list)
    path_prefix: str | None = None
    languages: list[str] = field(default_factory=list)
    exclude_ids: list[str] = field(default_factory=list)
    effective_on: str | None = None
    exclude_superseded: bool = False
    doc_version: str | None = None
    versions: dict[str, str] = field(default_factory=dict)
    translations: bool = True

    def excludes_translations(self) -> bool:
        """True when chunks with a ``translation`` are left out: ``translations`` off and no
        ``languages`` asked for."""
        return not (self.translations or self.languages)

    def is_empty(self) -> bool:
        """True when nothing but the default exclusion of translations applies."""
        return not (
            self.corpora
            or self.path_prefix
            or self.languages
            or self.exclude_ids
            or self.effective_on
            or self.exclude_superseded
            or self.doc_version is not None
            or self.versions
        )


#: a ranked list of one leg: ``(chunk_id, score)`` best first (BM25 score, cosine, fused score).
Ranking = list[tuple[str, float]]


@dataclass(slots=True)
class LegHits:
    """What a store answers for a search of legs in one round trip (:class:`MultiLeg`,
    :class:`NativeFusion`), owned by the caller: nothing of it is kept on the store, so
    concurrent searches over one store never see each other's results.

    Attributes:
        legs: one dict per query asked, leg name (``bm25``, ``dense``) -> :data:`Ranking`
            (raw scores: BM25, cosine). Empty when the store fused natively.
        how: the path, for the fusion's description (``one _msearch``, ``native Elasticsearch
            retriever``).
        took_ms: the cluster's own ``took`` (milliseconds), or None.
        round_trip_ms: the HTTP exchange that carried it (milliseconds), or None.
        sources: raw stored records of the hits, by chunk id (asked with ``source``).
        decode: ``(chunk_id, record) -> Chunk`` for :attr:`sources`.
        fused: the store's own fused ranking (native RRF), best first, or None.
    """

    legs: list[dict[str, Ranking]]
    how: str = ""
    took_ms: int | None = None
    round_trip_ms: float | None = None
    sources: dict[str, Any] = field(default_factory=dict)
    decode: Callable[[str, dict[str, Any]], Chunk] | None = None
    fused: Ranking | None = None


@dataclass(slots=True)
class BranchQuery:
    """One search of a fan-out (one corpus branch for one query or reformulation).

    Attributes:
        query: the text of the BM25 leg ('' = no lexical leg).
        vector: the query vector [dims] of the kNN leg (None = no dense leg).
        window: results taken from each leg and fused (``rank_window_size``).
        filters: applied inside both legs (corpus, dates, superseded…).
        num_candidates: kNN candidates (raised to ``window``).
    """

    query: str
    vector: np.ndarray | None
    window: int
    filters: Filters = field(default_factory=Filters)
    num_candidates: int = 100


@dataclass(slots=True)
class IndexMeta:
    """What an index was built with; a mismatch with the configured embedder is an error.

    Attributes:
        embedder: embedder spec (``st:all-MiniLM-L6-v2``); ``dims``: vector dimension.
        embed_fields: fields joined into the embedded passage (fixed per index);
        bm25_fields: the BM25 field weights in force at ingest (informative: a search setting).
        analyzer: BM25 text analysis, ``english`` or ``standard`` (see :mod:`esrag.analysis`);
            fixed per index.
    """

    embedder: str
    dims: int
    embed_fields: list[str] = field(default_factory=lambda: ["text"])
    bm25_fields: dict[str, float] = field(default_factory=lambda: {"text": 1.0})
    esrag_version: str = ""
    created_at: str = ""
    analyzer: str = "english"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IndexMeta:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)

    @classmethod
    def build(cls, embedder: str, dims: int, index_text: IndexedText) -> IndexMeta:
        """The meta an index is built with: embedder spec and ``dims`` plus the indexed-text
        configuration ``index_text`` (anything with ``embed_fields``, ``bm25_fields`` and
        ``analyzer``: :class:`esrag.config.IndexTextSettings`, an evaluation arm), stamped with
        this esrag's version. The one place an ``IndexMeta`` is made from configuration."""
        return cls(embedder, dims, list(index_text.embed_fields), dict(index_text.bm25_fields), __version__, analyzer=index_text.analyzer)


class IndexedText(Protocol):
    """What an index's text configuration says (:class:`esrag.config.IndexTextSettings`, an
    ingester, an evaluation arm): the fields embedded, the BM25 fields and their weights, and
    the BM25 analyzer."""

    @property
    def embed_fields(self) -> Sequence[str]: ...

    @property
    def bm25_fields(self) -> Mapping[str, float]: ...

    @property
    def analyzer(self) -> str: ...


@dataclass(slots=True)
class StoredEntry:
    """A chunk's fingerprints in the store: ``content_hash`` (decides re-embedding) and
    ``meta_hash`` (line span, position and metadata; decides a metadata-only update)."""

    content_hash: str
    meta_hash: str


@dataclass(slots=True)
class WriteReport:
    """Outcome of a write: ids written, and failed ids with their error message."""

    written: int = 0
    failed: dict[str, str] = field(default_factory=dict)


@runtime_checkable
class Store(Protocol):
    """The store interface. Scores are higher-is-better; lists are best first."""

    name: str

    def meta(self) -> IndexMeta | None:
        """The index's meta, or None when nothing has been indexed yet."""
        ...

    def ensure(self, meta: IndexMeta) -> None:
        """Create the index for ``meta`` or check the existing one matches.

        Raises:
            EmbedderMismatch: the index holds vectors of another model or dimension.
        """
        ...

    def write(self, chunks: Sequence[Chunk], vectors: np.ndarray, meta_hashes: Sequence[str]) -> WriteReport:
        """Insert or replace ``chunks`` (by id) with ``vectors`` [len(chunks), dims]."""
        ...

    def update_meta(self, chunks: Sequence[Chunk], meta_hashes: Sequence[str]) -> WriteReport:
        """Replace stored metadata (lines, position, labels) of existing chunks; keeps vectors."""
        ...

    def delete(self, ids: Sequence[str]) -> int:
        """Delete chunks by id; returns how many existed."""
        ...

    def manifest(self, corpus: str, doc_version: str | None = None) -> dict[str, dict[str, StoredEntry]]:
        """``{source_path: {chunk_id: StoredEntry}}`` for every chunk of ``corpus`` (only those of
        ``doc_version`` when given; '' = the unversioned ones)."""
        ...

    def source_chunks(self, source_path: str, corpus: str | None = None, doc_version: str | None = None) -> list[Chunk]:
        """Every chunk of one source file (of ``corpus`` / ``doc_version`` when given), ordered
        by corpus, version and position — what :func:`esrag.pages.get_page` reassembles."""
        ...

    def get(self, ids: Sequence[str]) -> list[Chunk]:
        """Chunks by id, in the order given; unknown ids are left out."""
        ...

    def bm25(self, query: str, k: int, filters: Filters, fields: dict[str, float]) -> list[tuple[str, float]]:
        """Top ``k`` ``(chunk_id, bm25_score)`` for ``query`` over weighted ``fields``."""
        ...

    def knn(self, vector: np.ndarray, k: int, filters: Filters, num_candidates: int) -> list[tuple[str, float]]:
        """Top ``k`` ``(chunk_id, cosine)`` nearest to ``vector`` [dims] among filtered chunks."""
        ...

    def neighbours(self, corpus: str, source_path: str, positions: Sequence[int], doc_version: str = "") -> list[Chunk]:
        """Chunks of one source (of one ``doc_version``; '' = unversioned) at the given 1-based
        positions (for context expansion)."""
        ...

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors by chunk id (``[dims]`` float32 each; unknown ids are left out), for
        MMR selection in fan-out branches."""
        ...

    def refresh(self) -> None:
        """Make every write so far visible to searches (Elasticsearch refresh; SQLite no-op)."""
        ...

    def stats(self) -> dict[str, Any]:
        """Counts for ``esrag status``: chunks, sources and corpora, plus backend details."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


@dataclass(frozen=True, slots=True)
class PageRef:
    """One indexed page of one corpus and documentation version: its ``source_path``, its
    published ``url`` without anchor ('' when unknown) and when its chunks were last written
    (``indexed_at``, ISO 8601 UTC; '' when unknown)."""

    corpus: str
    doc_version: str
    source_path: str
    url: str = ""
    indexed_at: str = ""


@runtime_checkable
class PageListing(Protocol):
    """A store that lists its pages (both built-in stores): what lets ``get_page`` find a page
    by its URL or by a path without the docs root prefix, and name the nearest paths on a miss."""

    def pages(self, corpus: str | None = None) -> list[PageRef]:
        """Every (corpus, version, source path) the store holds (of ``corpus`` when given),
        sorted by corpus, version and path."""
        ...


@runtime_checkable
class Transactional(Protocol):
    """A store whose writes can be grouped into one transaction: the embedded store. Checked
    with ``isinstance`` by :class:`esrag.stores.staged.StagedStore` (a version's sync swaps in
    whole, issue 39 "Fresh while serving")."""

    def transaction(self) -> AbstractContextManager[None]:
        """``with store.transaction():`` the writes this thread makes inside commit together at
        its end, or none of them on an error."""
        ...


@runtime_checkable
class Removable(Protocol):
    """A store that can remove a corpus and drop its whole index (``esrag remove`` / ``drop``);
    both built-in stores are. Checked with ``isinstance`` (:func:`esrag.app.remove_corpus`)."""

    def remove_corpus(self, corpus: str, doc_version: str | None = None) -> int:
        """Delete the chunks of ``corpus`` (of ``doc_version`` only when given; ``""`` = the
        unversioned ones); the number deleted. Other corpora are untouched."""
        ...

    def drop(self) -> dict[str, Any]:
        """Delete everything esrag made for this index; counts and names of what was removed
        (at least ``"store"`` and ``"chunks"``). The next ingest or setup starts afresh."""
        ...


def check_compatible(current: IndexMeta, wanted: IndexMeta, where: str) -> None:
    """Raise :class:`EmbedderMismatch` naming both sides if ``wanted`` cannot use ``current``."""
    if current.embedder != wanted.embedder or current.dims != wanted.dims:
        raise EmbedderMismatch(
            f"the index at {where} was built with {current.embedder} ({current.dims} dims), but the configured "
            f"embedder is {wanted.embedder} ({wanted.dims} dims); vectors of two models never meet in one index. "
            "Use the index's embedder (--embedder), or re-ingest into a new index (ESRAG_DB / ESRAG_INDEX)."
        )
    if current.analyzer != wanted.analyzer:
        raise EmbedderMismatch(
            f"the index at {where} analyzes text with the {current.analyzer!r} analyzer, but the configuration asks "
            f"for {wanted.analyzer!r} (index_text.analyzer); use {current.analyzer!r}, or re-ingest into a new index "
            "(ESRAG_DB / ESRAG_INDEX) to change it."
        )
    if current.embed_fields != wanted.embed_fields:
        raise EmbedderMismatch(
            f"the index at {where} embeds the fields {current.embed_fields}, but the configuration asks for "
            f"{wanted.embed_fields} (index_text.embed_fields); re-ingest into a new index (ESRAG_DB / ESRAG_INDEX) "
            "to change them. (BM25 field weights are a search setting and can change at any time.)"
        )


@runtime_checkable
class Installable(Protocol):
    """A store that installs its own server-side assets (``esrag setup``): the Elasticsearch
    store (templates, pipeline, first versioned index and alias). Checked with ``isinstance``;
    other stores are set up by creating their index (``ensure``). The use case
    (:func:`esrag.app.setup_index`) makes the :class:`IndexMeta` (embedder spec and dims,
    indexed text); no store loads a model."""

    def install(self, meta: IndexMeta) -> dict[str, Any]:
        """Install or refresh everything for an index described by ``meta``; a report of what
        was done (``store``, ``embedder``, ``dims``, ``status``…).

        Raises:
            EmbedderMismatch: the existing index was built with another embedder.
            StoreError: the server refused or cannot be reached.
        """
        ...


@runtime_checkable
class Rebuildable(Protocol):
    """A store that can fill a new versioned index beside the live one and swap to it
    (``esrag ingest --rebuild``): the Elasticsearch store. Checked with ``isinstance``."""

    def begin_rebuild(self, meta: IndexMeta | None = None) -> str | None:
        """Route writes to a new versioned index; its name (None when resuming is not needed)."""
        ...

    def finish_rebuild(self, force: bool = False, delete_old: bool = True) -> dict[str, Any]:
        """Swap the alias to the rebuilt index; a report (``swapped``, ``missing_corpora``…)."""
        ...

    def settle_rebuild(self) -> None:
        """Record that a run into the rebuild index ended (it is resumed by the next
        :meth:`begin_rebuild`; an index whose run never ended is deleted there as half-built)."""
        ...

    @property
    def rebuilding(self) -> bool:
        """True between :meth:`begin_rebuild` and a successful :meth:`finish_rebuild`."""
        ...


@runtime_checkable
class NativeRerank(Protocol):
    """A store whose server reranks (Elasticsearch ``text_similarity_reranker`` through an
    inference endpoint). Checked with ``isinstance`` by the ``elastic:`` reranker."""

    def rerank_ids(self, query: str, ids: Sequence[str], inference_id: str, field: str = "text") -> dict[str, float]:
        """Relevance score per chunk id of ``ids`` for ``query`` (higher is better)."""
        ...

    def inference_rerank(self, inference_id: str, query: str, texts: Sequence[str]) -> list[float]:
        """One relevance score per text of ``texts`` for ``query``, in input order (the
        ``_inference/rerank`` API)."""
        ...


@runtime_checkable
class MultiLeg(Protocol):
    """A store that runs every leg of several searches in one round trip (Elasticsearch: one
    ``_msearch``). Checked with ``isinstance`` by :mod:`esrag.search.legs`; other stores answer
    leg by leg (``bm25``/``knn``) and the searches run concurrently."""

    def search_legs(self, queries: Sequence[BranchQuery], fields: dict[str, float], source: bool = False) -> LegHits:
        """Per query of ``queries`` its BM25 leg (when it has text and a field of weight > 0)
        and its kNN leg (when it has a vector), each of ``window`` hits with the query's filters
        inside; with ``source`` the hits' stored records too.

        Raises:
            StoreError: unreachable store, or a failed leg (named). NotIndexedError: empty index.
        """
        ...


@runtime_checkable
class NativeFusion(Protocol):
    """A store whose server can fuse BM25 + kNN by RRF itself (Elasticsearch's ``rrf``
    retriever, where the licence and version allow). It must rank as
    :func:`esrag.search.fusion.rrf` ranks the same legs with unit weights. Checked with
    ``isinstance`` by :func:`esrag.search.legs.hybrid`."""

    def native_rrf_support(self) -> tuple[bool, str]:
        """``(available, reason)``, from what the store learned (no request once learned)."""
        ...

    def native_rrf(self, query: BranchQuery, fields: dict[str, float], k: int, rrf_k: int) -> LegHits | None:
        """The fused top ``k`` (``LegHits.fused``) of ``query``'s two legs (``rank_window_size`` =
        ``query.window``, ``rank_constant`` = ``rrf_k``), or None when the server refused (the
        store then reports unavailable and the caller fuses the legs itself)."""
        ...
