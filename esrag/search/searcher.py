"""The searcher: query -> legs (BM25, kNN) -> RRF -> (feedback, parents) -> hits with per-leg
ranks and timings.

Modes: ``hybrid`` (both legs fused by :func:`esrag.search.fusion.rrf`, or by the ``linear``
fusion when ``search.fusion`` says so), ``bm25``, ``dense``. Optional second-pass signals
(:mod:`esrag.search.feedback`, off by default): pseudo-relevance feedback from the first
``search.prf_docs`` fused hits — RM3 expansion terms searched as a ``bm25_prf`` leg and a
Rocchio query vector as a ``dense_prf`` leg, fused with the first legs — and parent signals
(``search.parent_section`` / ``parent_page``) that add the best score of a chunk's section and
page to its own.
The searcher owns the query embedder (:meth:`Searcher.embed_query`) and never calls a store's
``bm25``/``knn`` itself: every leg goes through :mod:`esrag.search.legs`. A store that answers a
hybrid search in one round trip (Elasticsearch: native ``rrf`` or one ``_msearch``;
:func:`esrag.search.legs.one_round_trip`) gets the whole search through
:func:`esrag.search.legs.hybrid`; on any other store
:func:`esrag.search.legs.legs_while_embedding` runs the BM25 leg while the query is embedded,
then the kNN leg, and the searcher fuses them client-side with
:func:`esrag.search.legs.fuse`. The feedback legs are :func:`esrag.search.legs.bm25_leg` and
:func:`esrag.search.legs.knn_leg`. Timings (ms) are keyed ``model_load`` (first dense search
only), ``embed``, ``bm25``, ``knn``, ``fuse`` or, on a one-round-trip store, ``search``
(``cluster_took``, ``round_trip`` when known), then ``feedback``, ``parents``, ``fetch``, ``total``.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from esrag.config import SEARCH_MODES, SearchSettings, Settings
from esrag.embedding import Embedder, batches_queries, embedder_factory, query_batch
from esrag.errors import ConfigError
from esrag.model import Chunk, Hit, LegResult
from esrag.search.feedback import parent_boost, rm3_terms, rocchio
from esrag.search.fusion import Fused
from esrag.search.legs import bm25_leg, elapsed_ms, embed_timed, fuse, hybrid, knn_leg, legs_while_embedding, one_round_trip
from esrag.stores.base import Filters, Store

if TYPE_CHECKING:
    import numpy as np

#: distinct query texts whose vectors a :class:`Searcher` keeps (384 float32 each with the
#: default model: 1.5 KiB; 1,024 of them 1.5 MiB)
QUERY_VECTORS = 1024

#: the most queries :meth:`Searcher.embed_query` embeds in one forward pass (queries waiting
#: for the model at once: a server's concurrent searches)
QUERY_BATCH = 32


@dataclass
class SearchResult:
    """Hits best first, the mode used, per-stage timings in milliseconds, the fusion's
    description, and the query vector the search used ([dims] float32; None in BM25 mode), so
    a caller searching the same query again (a budget asking for more hits) embeds it once."""

    hits: list[Hit]
    mode: str
    timings_ms: dict[str, float] = field(default_factory=dict)
    fusion: str = ""
    vector: np.ndarray | None = field(default=None, repr=False, compare=False, kw_only=True)


class Searcher:
    """Runs searches against one store.

    Args:
        store: where chunks live.
        embedder_factory: builds the query embedder (called once, only for dense/hybrid).
        settings: search defaults (k, mode, RRF constant, windows, leg weights).
        bm25_fields: field -> weight for the BM25 leg.
    """

    @classmethod
    def from_settings(cls, settings: Settings, store: Store, embedder_spec: str | None = None, corpus: str | None = None) -> Searcher:
        """A searcher over ``store`` configured by ``settings``: queries are embedded with the
        model the index was built with (its meta) unless ``embedder_spec`` overrides it, with
        ``[corpora.NAME] query_prefix`` of ``corpus`` when set; BM25 field weights are the
        index's own unless ``[index_text] bm25_fields`` is configured."""
        meta = store.meta()
        spec = embedder_spec or (meta.embedder if meta else settings.embedder)
        bm25 = settings.index_text.bm25_fields
        if meta is not None and "bm25_fields" not in settings.index_text.model_fields_set:
            bm25 = meta.bm25_fields  # the index's own (e.g. an enriched arm's fields) unless configured
        return cls(store, embedder_factory(settings, spec, corpus), settings.search, bm25)

    def __init__(
        self,
        store: Store,
        embedder_factory: Callable[[], Embedder],
        settings: SearchSettings,
        bm25_fields: dict[str, float],
    ) -> None:
        self.store = store
        self._embedder_factory = embedder_factory
        self._embedder: Embedder | None = None
        self._lock = threading.Lock()  # the embedder: built once, then one batch at a time
        self._state = threading.Lock()  # _vectors, _waiting and _running
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._waiting: dict[str, Future[np.ndarray]] = {}  # queries waiting for the next pass
        self._running: dict[str, Future[np.ndarray]] = {}  # queries of the pass under way
        self.settings = settings
        self.bm25_fields = bm25_fields

    @property
    def embedder(self) -> Embedder:
        """The query embedder, built on first use (once, even when threads race for it)."""
        if self._embedder is None:
            with self._lock:
                if self._embedder is None:
                    self._embedder = self._embedder_factory()
        return self._embedder

    @property
    def embedder_loaded(self) -> bool:
        """Whether the query embedder has been built (so a search pays no model load)."""
        return self._embedder is not None

    def load_embedder(self) -> float:
        """Build the query embedder now if it is not yet built; the milliseconds that took
        (0.0 when it was already loaded).

        Raises:
            ModelLoadError: the model cannot be loaded.
        """
        if self._embedder is not None:
            return 0.0
        t0 = time.perf_counter()
        _ = self.embedder
        return elapsed_ms(t0)

    def embed_query(self, query: str) -> np.ndarray:
        """``query``'s vector [dims] (float32, read-only).

        The model runs one pass at a time: a sentence-transformers model and its fast
        tokenizer are not safe for concurrent calls (the Rust tokenizer raises "Already
        borrowed"), and on a few cores parallel forward passes only contend. With an embedder
        that embeds several queries in one pass (:func:`esrag.embedding.batches_queries`: the
        local models), queries that arrive while a pass runs wait together, and the first of
        them to get the model embeds them all in one pass (at most :data:`QUERY_BATCH`), each
        vector as it would be alone: under 8 concurrent searches a batch of 4 costs about half
        the CPU of 4 passes (issue 39). Other embedders (a remote API) embed each query alone,
        as before. The last :data:`QUERY_VECTORS` distinct queries' vectors are kept (least
        recently used out): a query asked again — an agent's retry, a page's refresh, the same
        question from many users — costs no forward pass, and threads asking the same query
        while it waits or is being embedded share one pass.

        Raises:
            whatever the embedder raises for this query (a pass of several queries that fails
            is tried again query by query, so one query's error is never another's).
        """
        emb = self.embedder
        with self._state:
            vector = self._vectors.get(query)
            if vector is not None:
                self._vectors.move_to_end(query)
                return vector
            waiting = self._waiting.get(query) or self._running.get(query)
            if waiting is None:
                waiting = self._waiting[query] = Future()
        with self._lock:
            if not waiting.done():  # not embedded by the pass before: this thread leads the next one
                most = QUERY_BATCH if batches_queries(emb) else 1
                with self._state:
                    texts = [query] + [t for t in self._waiting if t != query][: most - 1]
                    batch = {t: self._waiting.pop(t) for t in texts}
                    self._running.update(batch)
                try:
                    self._embed_batch(emb, batch)
                finally:
                    with self._state:
                        for text, future in batch.items():
                            self._running.pop(text, None)
                            if not future.done():  # interrupted (KeyboardInterrupt…): no thread waits forever
                                future.set_exception(RuntimeError("the query's embedding was interrupted"))
        return waiting.result()

    def _embed_batch(self, emb: Embedder, batch: dict[str, Future[np.ndarray]]) -> None:
        """Embed ``batch``'s queries in one pass, keep their vectors and resolve their futures;
        when a pass of several fails, each query alone, so that only the failing query's
        future gets the error."""
        texts = list(batch)
        try:
            vectors = query_batch(emb, texts)
            if len(vectors) != len(texts):
                raise RuntimeError(f"the embedder returned {len(vectors)} vectors for {len(texts)} queries")
        except Exception as exc:
            if len(texts) == 1:
                batch[texts[0]].set_exception(exc)
            else:
                for text in texts:
                    self._embed_batch(emb, {text: batch[text]})
            return
        with self._state:
            for (text, future), vector in zip(batch.items(), vectors, strict=True):
                vector = vector.copy()
                vector.flags.writeable = False
                self._vectors[text] = vector
                future.set_result(vector)
            while len(self._vectors) > QUERY_VECTORS:
                self._vectors.popitem(last=False)

    def cached_vector(self, query: str) -> np.ndarray | None:
        """``query``'s vector when :meth:`embed_query` keeps it (no forward pass), else None."""
        with self._state:
            vector = self._vectors.get(query)
            if vector is not None:
                self._vectors.move_to_end(query)
            return vector

    def search(
        self, query: str, k: int | None = None, mode: str | None = None, filters: Filters | None = None, *, vector: np.ndarray | None = None
    ) -> SearchResult:
        """Search ``query``; returns up to ``k`` hits. ``vector`` is ``query``'s vector when the
        caller has it (:attr:`SearchResult.vector` of an earlier search): not embedded again.

        Raises:
            ConfigError: unknown mode (lists the valid ones) or k < 1.
            NotIndexedError: nothing has been ingested yet.
        """
        k = k or self.settings.k
        mode = mode or self.settings.mode
        if mode not in SEARCH_MODES:
            raise ConfigError(f"unknown search mode {mode!r}; valid: {', '.join(SEARCH_MODES)}")
        if k < 1:
            raise ConfigError(f"k must be >= 1, got {k}")
        filters = filters or Filters()
        timings: dict[str, float] = {}
        started = time.perf_counter()
        window = max(self.settings.rank_window_size, k)
        fused, fusion_name, prefetched, used = self._fused(query, k, mode, filters, window, timings, vector)
        t0 = time.perf_counter()
        top = fused[:k]
        chunks = prefetched([f.id for f in top])
        missing = [f.id for f in top if f.id not in chunks]
        if missing:
            chunks.update({c.id: c for c in self.store.get(missing)})
        hits = [Hit(chunks[f.id], f.score, f.legs) for f in top if f.id in chunks]
        timings["fetch"] = elapsed_ms(t0)
        timings["total"] = elapsed_ms(started)
        return SearchResult(hits, mode, timings, fusion_name, vector=used)

    def _fused(
        self, query: str, k: int, mode: str, filters: Filters, window: int, timings: dict[str, float], given: np.ndarray | None = None
    ) -> tuple[list[Fused], str, Callable[[list[str]], dict[str, Chunk]], np.ndarray | None]:
        """The fused list, the fusion's description, a function giving the chunks the store's
        response already held (by id), and the query vector: the first pass, then the
        second-pass signals that are switched on (see the module docstring)."""
        s = self.settings
        fused, how, fetched, legs, vector = self._first_pass(query, k, mode, filters, window, timings, given)
        if s.prf_docs and fused:
            fused, how, fetched = self._feedback(query, mode, filters, window, fused, how, fetched, legs, vector, timings)
        if (s.parent_section or s.parent_page) and fused:
            t0 = time.perf_counter()
            chunks = self._chunks([f.id for f in fused[:window]], fetched)
            fused = parent_boost(fused[:window], chunks, s.parent_section, s.parent_page, s.parent_depth) + fused[window:]
            fetched = _known(chunks, fetched)
            how += f"; parent signals (section {s.parent_section:g}, page {s.parent_page:g})"
            timings["parents"] = elapsed_ms(t0)
        return fused, how, fetched, vector

    def _chunks(self, ids: list[str], fetched: Callable[[list[str]], dict[str, Chunk]]) -> dict[str, Chunk]:
        """The chunks of ``ids``: those the store's response held, the rest read from the store."""
        chunks = fetched(ids)
        missing = [i for i in ids if i not in chunks]
        if missing:
            chunks.update({c.id: c for c in self.store.get(missing)})
        return chunks

    def _feedback(
        self,
        query: str,
        mode: str,
        filters: Filters,
        window: int,
        fused: list[Fused],
        how: str,
        fetched: Callable[[list[str]], dict[str, Chunk]],
        legs: dict[str, list[tuple[str, float]]] | None,
        vector: np.ndarray | None,
        timings: dict[str, float],
    ) -> tuple[list[Fused], str, Callable[[list[str]], dict[str, Chunk]]]:
        """Pseudo-relevance feedback from the first ``prf_docs`` fused hits: a ``bm25_prf`` leg
        (the query plus its RM3 terms) when the search has a BM25 leg and ``prf_terms`` > 0, a
        ``dense_prf`` leg (the Rocchio vector) when it has a vector and ``rocchio_beta`` > 0,
        fused with the first legs (or, when the store fused natively, with the first fused list
        as one leg ``first`` weighing as the legs it fused). New legs weigh ``weights[leg]``,
        default ``prf_weight``."""
        s = self.settings
        t0 = time.perf_counter()
        top = fused[: s.prf_docs]
        chunks = self._chunks([f.id for f in top], fetched)
        top = [f for f in top if f.id in chunks]
        extra: dict[str, list[tuple[str, float]]] = {}
        if mode in ("bm25", "hybrid") and s.prf_terms:
            terms = rm3_terms(query, [chunks[f.id].text for f in top], [f.score for f in top], s.prf_terms)
            if terms:
                extra["bm25_prf"] = bm25_leg(self.store, f"{query} {' '.join(terms)}", window, filters, self.bm25_fields)
        if vector is not None and s.rocchio_beta:
            got = self.store.vectors([f.id for f in top])
            moved = rocchio(vector, [got[f.id] for f in top if f.id in got], s.rocchio_beta)
            extra["dense_prf"] = knn_leg(self.store, moved, window, filters, max(s.num_candidates, window))
        if not extra:
            return fused, how, fetched
        weights = dict(s.weights)
        base = legs if legs is not None else {"first": [(f.id, f.score) for f in fused[:window]]}
        if legs is None:
            weights["first"] = sum(weights.get(leg, 1.0) for leg in (("bm25", "dense") if mode == "hybrid" else (mode,)))
        for leg in extra:
            weights.setdefault(leg, s.prf_weight)
        out = fuse({**base, **extra}, s.rrf_k, weights, window, s.fusion)
        timings["feedback"] = elapsed_ms(t0)
        return out, f"{how}; feedback from the first {len(top)} hits ({', '.join(extra)})", _known(chunks, fetched)

    def _first_pass(
        self, query: str, k: int, mode: str, filters: Filters, window: int, timings: dict[str, float], given: np.ndarray | None = None
    ) -> tuple[list[Fused], str, Callable[[list[str]], dict[str, Chunk]], dict[str, list[tuple[str, float]]] | None, np.ndarray | None]:
        """The first ranking: fused list, description, prefetched chunks, the legs (None when
        the store fused them natively) and the query vector (None in BM25 mode; ``given`` when
        the caller had it)."""
        s = self.settings
        if given is None and mode != "bm25":
            given = self.cached_vector(query)  # asked before, or embedded while the search waited for a slot
            if given is not None:
                timings["embed"] = 0.0
        load = (lambda: self.embedder) if self._embedder is None and given is None else None  # timed apart as model_load
        if mode == "hybrid" and one_round_trip(self.store):
            qvec = given if given is not None else embed_timed(lambda: self.embed_query(query), load, timings)
            t0 = time.perf_counter()
            answer = hybrid(
                self.store,
                query,
                qvec,
                k=k,
                filters=filters,
                fields=self.bm25_fields,
                rank_window_size=window,
                num_candidates=max(s.num_candidates, window),
                rrf_k=s.rrf_k,
                weights=s.weights,
                method=s.fusion,
            )
            timings["search"] = elapsed_ms(t0)
            if answer.took_ms is not None:
                timings["cluster_took"] = float(answer.took_ms)
            if answer.round_trip_ms is not None:
                timings["round_trip"] = float(answer.round_trip_ms)
            return answer.fused, answer.how, answer.chunks, None, qvec
        embed = None if mode == "bm25" else (lambda: self.embed_query(query))
        legs, vector = legs_while_embedding(
            self.store,
            query,
            embed,
            load,
            mode in ("bm25", "hybrid"),
            window if mode == "hybrid" else k,
            filters,
            self.bm25_fields,
            max(s.num_candidates, window),
            timings,
            given if embed is not None else None,
        )
        t0 = time.perf_counter()
        if mode == "hybrid":
            fused = fuse(legs, s.rrf_k, s.weights, window, s.fusion)
            how = f"{s.fusion} (client-side)"
        else:
            fused = [Fused(cid, score, {mode: LegResult(rank, score)}) for rank, (cid, score) in enumerate(legs[mode], 1)]
            how = mode
        timings["fuse"] = elapsed_ms(t0)
        return fused, how, _nothing, legs, vector


def _nothing(ids: list[str]) -> dict[str, Chunk]:
    return {}


def _known(chunks: dict[str, Chunk], fetched: Callable[[list[str]], dict[str, Chunk]]) -> Callable[[list[str]], dict[str, Chunk]]:
    """A prefetch function answering from ``chunks`` first, then from ``fetched``."""

    def get(ids: list[str]) -> dict[str, Chunk]:
        out = {i: chunks[i] for i in ids if i in chunks}
        rest = [i for i in ids if i not in out]
        return {**fetched(rest), **out} if rest else out

    return get
