"""What the framework retrievers share: the options of a retriever call, one search service per
retriever object, and a hit's metadata.

Every retriever runs the search ``esrag search`` runs (:meth:`esrag.service.SearchService.search`
with a :class:`~esrag.service.SearchRequest`), so it returns the same hits in the same order as
``esrag search --json`` for the same query, options and index.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, fields, replace
from typing import Any

from esrag.app import connect
from esrag.config import Settings, load_settings
from esrag.errors import ConfigError
from esrag.model import Hit
from esrag.service import SearchRequest, SearchService, hit_json

#: the metadata every retriever puts on a document, from the hit's ``--json`` form (missing
#: values are None, as there): where the chunk is in its source and on the published site
METADATA_FIELDS = (
    "source_path",
    "section_path",
    "url",
    "anchor",
    "start_line",
    "end_line",
    "corpus",
    "doc_version",
    "doc_title",
    "tokens",
    "authority",
    "score",
)

SEARCH_MODES = ("hybrid", "bm25", "dense")


@dataclass
class RetrievalOptions:
    """The options of a retriever call: the :class:`~esrag.service.SearchRequest` fields a
    framework user sets (None / empty = the settings' defaults, as with ``esrag search``).

    Attributes:
        k: hits (>= 1; None: ``search.k``, 10 by default). Ignored when ``budget`` packs the hits.
        corpora: only these corpora (two or more fan out, as ``--corpus`` repeated).
        doc_version: only chunks of this documentation version ('' = the unversioned ones; None =
            each corpus's default version; ``"*"`` = every version, as ``esrag search``).
        path_prefix: only sources whose path starts with this (``--path``).
        budget: pack hits up to this many cl100k tokens of source text (``--budget``).
        mode: ``hybrid`` (default), ``bm25`` or ``dense``.
        languages: only chunks in these languages (``--lang``; ``auto`` = the query's).
    """

    k: int | None = None
    corpora: list[str] = field(default_factory=list)
    doc_version: str | None = None
    path_prefix: str | None = None
    budget: int | None = None
    mode: str | None = None
    languages: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if isinstance(self.corpora, str):
            self.corpora = [self.corpora]
        if isinstance(self.languages, str):
            self.languages = [self.languages]
        for name in ("k", "budget"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ConfigError(f"{name}={value!r}: give a whole number >= 1 (or None for the default)")
        if self.mode is not None and self.mode not in SEARCH_MODES:
            raise ConfigError(f"mode={self.mode!r}: use one of {', '.join(SEARCH_MODES)}")

    def merged(self, **overrides: Any) -> RetrievalOptions:
        """These options with ``overrides`` (None values ignored) applied, validated again.

        Raises:
            ConfigError: an unknown option (the message lists the known ones) or a bad value.
        """
        known = {f.name for f in fields(self)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ConfigError(f"unknown retriever option {unknown[0]!r}; use {', '.join(sorted(known))}")
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})

    def request(self, query: str) -> SearchRequest:
        """The :class:`~esrag.service.SearchRequest` for ``query`` with these options."""
        return SearchRequest(
            query,
            k=self.k,
            mode=self.mode,
            corpora=list(self.corpora),
            path_prefix=self.path_prefix,
            languages=list(self.languages),
            doc_version=self.doc_version,
            budget=self.budget,
        )


class EsragSearch:
    """One :class:`~esrag.service.SearchService` for one retriever object: opened on the first
    search (not at construction, so a retriever can be built, copied and serialised without a
    store), then shared by every call — one store connection and one query-model load, safe to
    call from many threads and from ``asyncio.to_thread`` at once, as the HTTP server shares one.

    Args:
        settings: the settings (None: :func:`esrag.config.load_settings`, i.e. ``esrag.toml``
            and ``ESRAG_*`` variables, as the CLI reads them).
        embedder: embed queries with this spec instead of the index's own.
        service: share this open service instead (e.g. one a server already holds); the
            retriever then never closes it.
    """

    def __init__(self, settings: Settings | None = None, embedder: str | None = None, service: SearchService | None = None) -> None:
        self._settings = settings
        self._embedder = embedder
        self._service = service
        self._owned = service is None
        self._lock = threading.Lock()

    @property
    def settings(self) -> Settings:
        """The settings searches use (loaded on first use when none were given)."""
        if self._settings is None:
            self._settings = self._service.settings if self._service is not None else load_settings()
        return self._settings

    def service(self) -> SearchService:
        """The shared service, opened on first use.

        Raises:
            PluginError, StoreError: the store cannot be opened (:func:`esrag.app.connect`).
        """
        with self._lock:
            if self._service is None:
                settings = self.settings
                self._service = SearchService(settings, connect(settings), self._embedder)
            return self._service

    def warm(self) -> None:
        """Open the store and load the query model now (a framework's ``warm_up``)."""
        self.service().warm()

    def search(self, request: SearchRequest) -> list[Hit]:
        """The hits of ``request``, best first (:meth:`esrag.service.SearchService.search`; an
        unknown corpus name raises instead of returning nothing).

        Raises:
            ConfigError: empty query, bad option, unknown corpus (lists the indexed ones).
            StoreError: the store is unreachable. NotIndexedError: nothing was ingested yet.
        """
        return self.service().search(request, check_corpora=True).hits

    def close(self) -> None:
        """Close the store connection this object opened (a shared service stays open); a
        later search opens it again."""
        with self._lock:
            if self._service is not None and self._owned:
                self._service.close()
                self._service = None


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """A hit's metadata for a framework document: :data:`METADATA_FIELDS` from the hit's
    ``esrag search --json`` form (``url``, ``anchor``, ``doc_version``, ``authority``: None when
    unknown; ``score``: the fused score), plus ``truncated`` / ``chunk_ids`` when the budget cut
    the hit or expansion merged chunks into it. Values are str, int, float, bool, list or None."""
    d = hit_json(hit)
    out = {name: d.get(name) for name in METADATA_FIELDS}
    for extra in ("truncated", "chunk_ids", "expanded_from"):
        if extra in d:
            out[extra] = d[extra]
    return out
