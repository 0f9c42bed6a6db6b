"""The one leg loop: run the legs of searches (BM25, kNN) on any store, and fuse them by RRF.

Every retrieval in esrag goes through here, and only here does ``esrag.search`` call a store's
``bm25``/``knn`` (:func:`bm25_leg`, :func:`knn_leg`; tests/test_one_road.py checks it): the
searcher's first pass (:func:`hybrid` on a one-round-trip store, :func:`legs_while_embedding` on
any other) and its feedback legs, the fan-out over corpora and reformulations
(:func:`esrag.search.fanout.run_branches`) and so query reformulation. A store that runs many
legs in one round trip (:class:`~esrag.stores.base.MultiLeg`, Elasticsearch's ``_msearch``) gets
them all at once; any other store answers leg by leg (``bm25``/``knn``), the searches
concurrently. A store that fuses natively (:class:`~esrag.stores.base.NativeFusion`,
Elasticsearch's ``rrf`` retriever) is used for unweighted hybrid searches where it can; its
ranking equals :func:`fuse` on the same legs.

The overlap (:func:`legs_while_embedding`): the BM25 leg does not need the query vector, so when
a search has both legs and the embedder is already loaded, the BM25 leg runs on a small
process-wide thread pool while the caller's ``embed`` computes the vector in the calling thread;
the kNN leg follows once the vector is there. SQLite and torch both release the GIL, so the
first pass takes about max(bm25, embed) + knn rather than their sum. While the model still has
to load, everything runs in turn.
Fusion itself (RRF, leg weights, ``rrf_k``, ``rank_window_size``) lives only in
:mod:`esrag.search.fusion`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from esrag.model import Chunk
from esrag.search.fusion import Fused, fusion
from esrag.stores.base import BranchQuery, Filters, LegHits, MultiLeg, NativeFusion, Ranking, Store


class StoreHits(tuple):
    """What a one-round-trip hybrid search returns (built by :func:`hybrid` from a store's
    :class:`~esrag.stores.base.LegHits`), owned by the caller.

    Unpacks as ``(fused, how)``: the fused hits best first (:class:`~esrag.search.fusion.Fused`) and a
    description of the path taken. Also carries:

    Attributes:
        took_ms: the cluster's own ``took`` (milliseconds) of the request, or None (one-leg
            searches, stores without a cluster).
        round_trip_ms: the HTTP exchange that carried it (milliseconds: request sent to response
            read), or None.
        sources: raw stored documents of the hits the request returned, by chunk id, so that
            the chunks of the top hits need no second round trip (:meth:`chunks`).
    """

    took_ms: int | None
    round_trip_ms: float | None
    sources: dict[str, Any]
    _decode: Callable[[str, dict[str, Any]], Chunk] | None

    def __new__(
        cls,
        fused: list[Fused],
        how: str,
        took_ms: int | None = None,
        round_trip_ms: float | None = None,
        sources: dict[str, Any] | None = None,
        decode: Callable[[str, dict[str, Any]], Chunk] | None = None,
    ) -> StoreHits:
        self = super().__new__(cls, (fused, how))
        self.took_ms, self.round_trip_ms = took_ms, round_trip_ms
        self.sources = sources or {}
        self._decode = decode
        return self

    @property
    def fused(self) -> list[Fused]:
        return self[0]

    @property
    def how(self) -> str:
        return self[1]

    def chunks(self, ids: Sequence[str]) -> dict[str, Chunk]:
        """The chunks of ``ids`` that the response already held (decoded from :attr:`sources`);
        ids it did not hold are left out (fetch those with ``store.get``)."""
        if self._decode is None:
            return {}
        return {i: self._decode(i, self.sources[i]) for i in ids if i in self.sources}


def lexical(query: str, fields: Mapping[str, float]) -> bool:
    """Whether a search has a BM25 leg: query text and a field of weight > 0."""
    return bool(query.strip()) and any(w > 0 for w in fields.values())


def bm25_leg(store: Store, query: str, window: int, filters: Filters, fields: dict[str, float]) -> Ranking:
    """The BM25 leg: up to ``window`` ``(chunk_id, score)`` pairs of ``query`` over ``fields``
    (field -> weight), best first, through ``filters``.

    Raises:
        StoreError: the store failed. NotIndexedError: nothing indexed yet.
    """
    return store.bm25(query, window, filters, fields)


def knn_leg(store: Store, vector: np.ndarray, window: int, filters: Filters, num_candidates: int) -> Ranking:
    """The kNN (``dense``) leg: up to ``window`` ``(chunk_id, cosine)`` pairs nearest to
    ``vector`` ([dims] float32, L2-normalised), best first, through ``filters``, of
    ``num_candidates`` candidates per shard (passed as given; callers raise it to the window).

    Raises:
        StoreError: the store failed. NotIndexedError: nothing indexed yet.
    """
    return store.knn(vector, window, filters, num_candidates)


def legs_while_embedding(
    store: Store,
    query: str,
    embed: Callable[[], np.ndarray] | None,
    load: Callable[[], object] | None,
    with_bm25: bool,
    window: int,
    filters: Filters,
    fields: dict[str, float],
    num_candidates: int,
    timings: dict[str, float],
    vector: np.ndarray | None = None,
) -> tuple[dict[str, Ranking], np.ndarray | None]:
    """One search's legs leg by leg on any store, the BM25 leg overlapping the query embedding.

    Args:
        embed: computes the query vector ([dims] float32) in the calling thread; None for a
            search without a ``dense`` leg.
        load: builds the embedder when it is not loaded yet (timed apart, before ``embed``);
            None when it is loaded. The BM25 leg overlaps ``embed`` only when ``load`` is None
            and the search has both legs (see the module docstring).
        with_bm25: whether the search has a ``bm25`` leg (of ``query`` over ``fields``).
        window: hits per leg (a single-leg search passes its ``k``).
        num_candidates: the kNN leg's candidates, passed to :func:`knn_leg` as given.
        timings: filled in place, in milliseconds: ``model_load`` (when ``load`` ran),
            ``embed``, ``bm25``, ``knn`` for the steps that ran.
        vector: the query vector when the caller already has it: nothing is embedded (``embed``
            and ``load`` are not called) and the legs run in turn.

    Returns:
        ``(legs, vector)``: ``{"bm25": ..., "dense": ...}`` (those the search has, in that
        order) and the query vector (None without ``embed``).

    Raises:
        StoreError, NotIndexedError: from the store; whatever ``load``/``embed`` raise.
    """
    early = None
    if vector is None and with_bm25 and embed is not None and load is None:
        early = _pool().submit(_timed_bm25, store, query, window, filters, fields)
    if vector is None and embed is not None:
        vector = embed_timed(embed, load, timings)
    legs: dict[str, Ranking] = {}
    if with_bm25 and early is None:
        legs["bm25"], timings["bm25"] = _timed_bm25(store, query, window, filters, fields)
    if vector is not None:
        t0 = time.perf_counter()
        legs["dense"] = knn_leg(store, vector, window, filters, num_candidates)
        timings["knn"] = elapsed_ms(t0)
    if early is not None:
        legs["bm25"], timings["bm25"] = early.result()
        legs = {"bm25": legs["bm25"], "dense": legs["dense"]}
    return legs, vector


def embed_timed(embed: Callable[[], np.ndarray], load: Callable[[], object] | None, timings: dict[str, float]) -> np.ndarray:
    """``embed()`` after ``load()`` when given, timed into ``timings`` (ms) as ``embed`` and
    ``model_load``; the vector ([dims] float32). Raises whatever they raise."""
    if load is not None:
        t0 = time.perf_counter()
        load()
        timings["model_load"] = elapsed_ms(t0)
    t0 = time.perf_counter()
    vector = embed()
    timings["embed"] = elapsed_ms(t0)
    return vector


def _timed_bm25(store: Store, query: str, window: int, filters: Filters, fields: dict[str, float]) -> tuple[Ranking, float]:
    """:func:`bm25_leg` and its time (ms)."""
    t0 = time.perf_counter()
    return bm25_leg(store, query, window, filters, fields), elapsed_ms(t0)


def legs_of(store: Store, q: BranchQuery, fields: dict[str, float]) -> dict[str, Ranking]:
    """One search's legs, leg by leg: ``bm25`` (when :func:`lexical`) and ``dense`` (when it
    has a vector; ``num_candidates`` raised to the window), each of ``q.window`` hits."""
    legs: dict[str, Ranking] = {}
    if lexical(q.query, fields):
        legs["bm25"] = bm25_leg(store, q.query, q.window, q.filters, fields)
    if q.vector is not None:
        legs["dense"] = knn_leg(store, q.vector, q.window, q.filters, max(q.num_candidates, q.window))
    return legs


def run_legs(store: Store, queries: Sequence[BranchQuery], fields: dict[str, float], source: bool = False) -> LegHits:
    """The legs of every search in ``queries``: one round trip on a
    :class:`~esrag.stores.base.MultiLeg` store (hits' records too with ``source``); otherwise
    :func:`legs_of` per search, at most 4 concurrently (``took_ms`` unknown then)."""
    if isinstance(store, MultiLeg):
        return store.search_legs(queries, fields, source)
    if len(queries) <= 1:
        return LegHits([legs_of(store, q, fields) for q in queries], "concurrent branches")
    with ThreadPoolExecutor(max_workers=min(4, len(queries)), thread_name_prefix="esrag-branch") as pool:
        return LegHits(list(pool.map(lambda q: legs_of(store, q, fields), queries)), "concurrent branches")


def fuse(legs: Mapping[str, Ranking], rrf_k: int, weights: Mapping[str, float] | None, window: int, method: str = "rrf") -> list[Fused]:
    """One search's legs fused over their first ``window`` by the fusion ``method``
    (:data:`esrag.search.fusion.FUSIONS`: :func:`~esrag.search.fusion.rrf` by default)."""
    return fusion(method)(legs, k=rrf_k, weights=weights, rank_window_size=window)


def hybrid(
    store: Store,
    query: str,
    vector: np.ndarray | None,
    k: int = 10,
    filters: Filters | None = None,
    fields: dict[str, float] | None = None,
    rank_window_size: int = 50,
    num_candidates: int = 100,
    rrf_k: int = 60,
    weights: dict[str, float] | None = None,
    method: str = "rrf",
) -> StoreHits:
    """BM25 + kNN of ``query`` fused by RRF in one round trip where the store can: the store's
    native fusion where it has it and all leg weights are 1 (:class:`~esrag.stores.base.NativeFusion`),
    else both legs in one request (:func:`run_legs` with the hits' records) fused by :func:`fuse`.
    With only one leg (no vector, or no query text/fields) that leg alone, "fused". A
    ``method`` other than ``rrf`` (:data:`esrag.search.fusion.FUSIONS`) always fuses client-side.

    Returns:
        a :class:`~esrag.stores.base.StoreHits` unpacking as ``(fused, how)``: fused hits best
        first (client-side ones carry each leg's rank and raw score, cosine for ``dense``;
        native ones only the fused score) and a description of the path taken; plus the
        request's ``took_ms``/``round_trip_ms`` and the hits' records (``StoreHits.chunks``), so
        that the top hits need no ``get`` round trip.

    Raises:
        StoreError: the store failed. NotIndexedError: nothing indexed yet.
    """
    filters = filters or Filters()
    fields = fields or {"text": 1.0}
    window = max(int(rank_window_size), int(k))
    if vector is None or not lexical(query, fields):  # one leg only: nothing to fuse natively
        legs = (
            {"bm25": bm25_leg(store, query, window, filters, fields)}
            if vector is None
            else {"dense": knn_leg(store, vector, window, filters, num_candidates)}
        )
        return StoreHits(fuse(legs, rrf_k, weights, window, method), f"{method} (client-side, one leg)")
    search = BranchQuery(query, vector, window, filters, num_candidates)
    unweighted = all(float(w) == 1.0 for w in (weights or {}).values())
    why = ""
    if unweighted and method == "rrf" and isinstance(store, NativeFusion):
        available, why = store.native_rrf_support()
        if available:
            native = store.native_rrf(search, fields, k, rrf_k)
            if native is not None and native.fused is not None:
                fused = [Fused(i, score) for i, score in native.fused]
                return StoreHits(fused, f"rrf ({native.how})", native.took_ms, native.round_trip_ms, native.sources, native.decode)
            why = store.native_rrf_support()[1]
    got = run_legs(store, [search], fields, source=True)
    if method != "rrf":
        how = f"{method} (client-side over {got.how})"
    elif not unweighted:
        how = f"rrf (client-side over {got.how}: per-leg weights {dict(weights or {})} need client-side fusion)"
    elif why:
        how = f"rrf (client-side over {got.how}; native rrf unavailable: {why})"
    else:
        how = f"rrf (client-side over {got.how})"
    return StoreHits(fuse(got.legs[0], rrf_k, weights, window, method), how, got.took_ms, got.round_trip_ms, got.sources, got.decode)


def one_round_trip(store: Store) -> bool:
    """Whether ``store`` answers a hybrid search in one round trip (native fusion or all legs
    in one request), so the searcher hands it the whole search."""
    return isinstance(store, (MultiLeg, NativeFusion))


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """The process's small pool for BM25 legs that run beside the query embedding."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="esrag-leg")
        return _POOL


def elapsed_ms(t0: float) -> float:
    """Milliseconds since ``t0`` (a :func:`time.perf_counter` reading), rounded to 3 places."""
    return round((time.perf_counter() - t0) * 1000, 3)
