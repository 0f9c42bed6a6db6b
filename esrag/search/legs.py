"""The one leg loop: run the legs of searches (BM25, kNN) on any store, and fuse them by RRF.

Every retrieval in esrag goes through here: the searcher's hybrid search (:func:`hybrid`), the
fan-out over corpora and reformulations (:func:`esrag.search.fanout.run_branches`) and so query
reformulation. A store that runs many legs in one round trip (:class:`~esrag.stores.base.MultiLeg`,
Elasticsearch's ``_msearch``) gets them all at once; any other store answers leg by leg
(``bm25``/``knn``), the searches concurrently. A store that fuses natively
(:class:`~esrag.stores.base.NativeFusion`, Elasticsearch's ``rrf`` retriever) is used for
unweighted hybrid searches where it can; its ranking equals :func:`fuse` on the same legs.
Fusion itself (RRF, leg weights, ``rrf_k``, ``rank_window_size``) lives only in
:mod:`esrag.search.fusion`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from esrag.search.fusion import Fused, fusion
from esrag.stores.base import BranchQuery, Filters, LegHits, MultiLeg, NativeFusion, Ranking, Store, StoreHits


def lexical(query: str, fields: Mapping[str, float]) -> bool:
    """Whether a search has a BM25 leg: query text and a field of weight > 0."""
    return bool(query.strip()) and any(w > 0 for w in fields.values())


def legs_of(store: Store, q: BranchQuery, fields: dict[str, float]) -> dict[str, Ranking]:
    """One search's legs, leg by leg: ``bm25`` (when :func:`lexical`) and ``dense`` (when it
    has a vector; ``num_candidates`` raised to the window), each of ``q.window`` hits."""
    legs: dict[str, Ranking] = {}
    if lexical(q.query, fields):
        legs["bm25"] = store.bm25(q.query, q.window, q.filters, fields)
    if q.vector is not None:
        legs["dense"] = store.knn(q.vector, q.window, q.filters, max(q.num_candidates, q.window))
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


def fuse(legs: Mapping[str, Ranking], rrf_k: int, weights: Mapping[str, float] | None, window: int,
         method: str = "rrf") -> list[Fused]:
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
        legs = ({"bm25": store.bm25(query, window, filters, fields)} if vector is None
                else {"dense": store.knn(vector, window, filters, num_candidates)})
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


def one_round_trip(store: Any) -> bool:
    """Whether ``store`` answers a hybrid search in one round trip (native fusion or all legs
    in one request), so the searcher hands it the whole search."""
    return isinstance(store, (MultiLeg, NativeFusion))
