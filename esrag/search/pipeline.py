"""The retrieval stack of seeds 001 and 002, composed around the :class:`~esrag.search.searcher.Searcher`:

``query -> (reformulate) -> branches: one per corpus (fan-out) x one per query, each BM25 + kNN
fused by RRF -> reformulation lists fused by RRF -> per-corpus selection (MMR, per-source cap)
-> corpora fused by RRF -> (rerank top N) -> (expand) -> budget (cl100k tokens) or top k``

Every stage is off unless asked for; with nothing asked, :meth:`Pipeline.search` returns exactly
what :meth:`Searcher.search` returns. Stages and their settings (``[search]`` and
``[corpora.NAME]`` in esrag.toml, or the flags of ``esrag search``):

* fan-out (``search.corpora`` or two or more ``--corpus``): each corpus branch has its own k
  (``[corpora.NAME] k``, default ``search.k``), filters and selection; all branches (and all
  reformulations) run in one ``_msearch`` on Elasticsearch and concurrently on the embedded
  store; the corpus lists are fused by rank and never truncated, so every corpus keeps its k
  (zero passages from a corpus is impossible unless its branch finds nothing, which the
  diagnostic reports). An optional router (``search.router``) skews the ks by intent.
* reformulation (``--reformulate N``): :mod:`esrag.search.reformulate`.
* rerank (``--rerank SPEC``, top ``search.rerank_top_n`` = 30): :mod:`esrag.search.rerank`,
  applied to leaf chunks before any expansion.
* expansion (``--expand``; per corpus ``[corpora.NAME] expand``): :mod:`esrag.search.expand`.
* sections (``search.merge_sections``, ``search.min_hit_tokens``; on by default):
  :mod:`esrag.search.sections` — a hit too small to stand alone comes with its neighbours, and
  adjacent hits of one section become one hit, so a search returns sections, not fragments.
* budget (``--budget N``): hits in rank order while they fit N cl100k tokens of source text
  (:func:`pack`): a hit that does not fit whole is shortened at a block boundary
  (:func:`esrag.search.budget.fit_text`, the rule every response is cut by) or, when no
  boundary leaves a useful part, left out, and packing goes on
  with the next hits that fit; a hit is never cut mid-line. Without a budget, a single-branch
  search returns ``k`` hits; a fan-out returns every branch's k. (The evaluation packs its own
  way — :func:`esrag.search.budget.take_budget`, the overflowing chunk cut to fit, exactly N
  tokens per arm — over :meth:`Pipeline.ranked_pool`, which applies neither sections nor this
  packing.)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from esrag.config import CorpusSettings, Settings
from esrag.errors import ConfigError
from esrag.model import Chunk, Hit
from esrag.search.budget import fit_text
from esrag.search.demote import apply_demotion
from esrag.search.expand import ExpandSpec, parse_expand
from esrag.search.fanout import Branch, ZeroPassageCounter, corpus_filters, route, run_branches, select
from esrag.search.fusion import rrf
from esrag.search.reformulate import QueryReformulator, as_reformulator, fuse_queries, make_reformulator
from esrag.search.rerank import DEFAULT_TOP_N, Reranker, RerankFn, TextReranker, as_reranker, make_reranker, rerank_hits
from esrag.search.searcher import Searcher, SearchResult
from esrag.search.sections import members_of, shape_hits
from esrag.stores.base import BranchQuery, Filters, MultiLeg, Store

if TYPE_CHECKING:
    import numpy as np

MAX_BUDGET_CANDIDATES = 1000
"""A budgeted single-branch search asks for more hits (x4) while the budget is unfilled, up to this."""
FIRST_POOL_K = 50
"""Hits :meth:`Pipeline.ranked_pool` asks for first (then x4 while the budget is unfilled)."""


@dataclass
class PipelineResult(SearchResult):
    """A :class:`SearchResult` plus what the stack did: ``diagnostics`` (fan-out: passages per
    corpus, corpora without passages, router ks; budget; reformulations) and ``notes`` (stages
    that degraded, e.g. a failed reformulation call), and ``versions``: ``{corpus: version}`` the
    search was restricted to (:attr:`esrag.stores.base.Filters.versions`; set by the service)."""

    diagnostics: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    reformulations: list[str] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


class Pipeline:
    """Runs the stack over one store.

    Args:
        settings: all settings (``search``, ``corpora``, LLM settings for reformulation).
        store: where chunks live.
        searcher: the single-query searcher (its embedder is reused).
        reranker: a ready reranker (a :class:`~esrag.search.rerank.Reranker`, or a plain
            ``rerank(query, texts) -> scores`` callable; else built from the spec on first use).
        reformulator: a ready :class:`~esrag.search.reformulate.QueryReformulator` or
            ``query -> [reformulations]`` callable (else built from settings on first use).

    Raises:
        ConfigError: ``reranker`` is not a reranker.
    """

    def __init__(
        self,
        settings: Settings,
        store: Store,
        searcher: Searcher,
        reranker: Reranker | TextReranker | RerankFn | None = None,
        reformulator: QueryReformulator | Callable[[str], Sequence[str]] | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.searcher = searcher
        self._rerankers: dict[str, Reranker] = {}
        self._reranker = as_reranker(reranker) if reranker is not None else None
        self._reformulator = as_reformulator(reformulator) if reformulator is not None else None
        self.zero_passages = ZeroPassageCounter()

    @classmethod
    def from_settings(cls, settings: Settings, store: Store, embedder_spec: str | None = None) -> Pipeline:
        """The pipeline for ``store`` with the searcher :meth:`Searcher.from_settings` builds
        (what :func:`esrag.app.make_pipeline` returns)."""
        return cls(settings, store, Searcher.from_settings(settings, store, embedder_spec))

    # -- parts ------------------------------------------------------------------------------
    def corpus(self, name: str) -> CorpusSettings:
        """``[corpora.NAME]`` (defaults when the corpus has no table)."""
        return self.settings.corpora.get(name) or CorpusSettings()

    def reranker(self, spec: str) -> Reranker:
        """The ready reranker, or the one ``spec`` names (built once per spec).

        Raises:
            ConfigError, PluginError, RerankError: as :func:`~esrag.search.rerank.make_reranker`.
        """
        if self._reranker is not None:
            return self._reranker
        if spec not in self._rerankers:
            self._rerankers[spec] = make_reranker(spec, self.store)
        return self._rerankers[spec]

    def reformulator(self) -> QueryReformulator:
        """The ready reformulator, or the configured LLM's (built on first use).

        Raises:
            PluginError: unknown LLM provider. EsragError: the LLM cache cannot be opened.
        """
        if self._reformulator is None:
            self._reformulator = make_reformulator(self.settings)
        return self._reformulator

    def branches(self, corpora: list[str], k: int, base: Filters) -> list[Branch]:
        """One branch per corpus (its k, filters and selection), or one branch over ``base``."""
        if not corpora:
            return [Branch(None, k, base)]
        out = []
        for name in corpora:
            cs = self.corpus(name)
            filters = replace(base, corpora=[name], **corpus_filters(cs.filters))
            out.append(Branch(name, cs.k or k, filters, cs.mmr_lambda, cs.mmr_pool, cs.per_source_cap, cs.cap_by))
        return out

    # -- the search -------------------------------------------------------------------------
    def search(
        self,
        query: str,
        k: int | None = None,
        mode: str | None = None,
        filters: Filters | None = None,
        *,
        corpora: list[str] | None = None,
        budget: int | None = None,
        expand: str | None = None,
        rerank: str | None = None,
        rerank_top_n: int | None = None,
        reformulate: int | None = None,
        sections: bool | None = None,
    ) -> PipelineResult:
        """Search ``query`` through the stack; arguments left None take their settings.

        ``sections`` False returns chunks as ranked (no small-hit growth, no merging of adjacent
        hits: :mod:`esrag.search.sections`); None follows ``search.merge_sections`` /
        ``search.min_hit_tokens``.

        ``corpora`` (``--corpus``): two or more fan out; one searches that corpus with its
        ``[corpora.NAME]`` settings; None uses ``filters.corpora`` or else ``search.corpora``;
        ``[]`` searches every corpus at once without fan-out.

        Raises:
            ConfigError: bad k, mode, budget, expansion or reranker spec.
            RerankError, ModelLoadError: the reranker cannot work. NotIndexedError: empty index.
        """
        s = self.settings.search
        started = time.perf_counter()
        k = k or s.k
        mode = mode or s.mode
        filters = filters or Filters()
        corpora = list(dict.fromkeys(corpora if corpora is not None else (filters.corpora or s.corpora)))
        budget = budget if budget is not None else s.budget
        expand_spec = parse_expand(expand if expand is not None else s.expand)
        rerank = rerank if rerank is not None else s.rerank
        top_n = rerank_top_n or s.rerank_top_n
        n_reform = reformulate if reformulate is not None else s.reformulate
        if budget is not None and budget < 1:
            raise ConfigError(f"--budget is in cl100k tokens and must be >= 1, got {budget}")
        corpus_expand = any((self.corpus(c).expand or "none").lower() != "none" for c in (corpora or list(self.settings.corpora)))
        configured = any(c in self.settings.corpora for c in corpora)
        shaping = (s.merge_sections or s.min_hit_tokens > 0) if sections is None else sections
        plain = not (budget or expand_spec or corpus_expand or rerank or n_reform or len(corpora) > 1 or configured)
        if plain:
            r = self.searcher.search(query, k=2 * k, mode=mode, filters=filters)
            hits = self._demote(r.hits)
            if not shaping:
                return PipelineResult(hits[:k], r.mode, r.timings_ms, r.fusion)
            t0 = time.perf_counter()
            shaped = self._sections(hits, k, None)[:k]
            return PipelineResult(shaped, r.mode, {**r.timings_ms, "sections": _ms(t0)}, r.fusion)
        timings: dict[str, float] = {}
        notes: list[str] = []
        diagnostics: dict[str, Any] = {}
        fanout = len(corpora) >= 2
        base = replace(filters, corpora=[]) if corpora else filters
        branches = self.branches(corpora, k, base)
        queries = [query] + self._reformulations(query, n_reform, timings, notes, diagnostics)
        b0 = branches[0]
        direct = not fanout and len(queries) == 1 and b0.mmr_lambda is None and not b0.cap
        # a direct search embeds its query in the searcher (BM25 overlapping the embedding) and
        # hands the vector back for the budget's further asks; the branch road embeds here, once
        vectors: list[np.ndarray | None] = [None] if direct else self._embed(queries, mode, timings)
        if fanout and s.router:
            self._route(branches, query, vectors[0], diagnostics)
        if not fanout:
            b = branches[0]
            want = max(2 * k if shaping else k, top_n if rerank else 0, s.rank_window_size if budget else 0)
            branches[0] = Branch(b.corpus, want, b.filters, b.mmr_lambda, b.pool, b.cap, b.cap_by)
        hits, fusion = self._retrieve(queries, vectors, branches, mode, fanout, timings, direct)
        if budget and not fanout:
            hits = self._grow_for_budget(queries, vectors, branches, mode, hits, budget, timings, direct)
        self._label(hits)
        if rerank:
            t0 = time.perf_counter()
            hits = rerank_hits(query, hits, self.reranker(rerank), top_n)
            timings["rerank"] = _ms(t0)
            fusion += f"; reranked top {min(top_n, len(hits))} by {self.reranker(rerank).spec}"
        hits = self._demote(hits)
        if not fanout and not budget:
            hits = hits[: 2 * k if shaping else k]
        hits = self._expand(hits, expand_spec, timings)
        passages = hits  # what fan-out diagnostics count: retrieved (and expanded) hits, before sections
        if shaping:
            t0 = time.perf_counter()
            hits = self._sections(hits, None if fanout or budget else k, budget)
            timings["sections"] = _ms(t0)
        if not fanout and not budget:
            hits = hits[:k]
        if budget:
            t0 = time.perf_counter()
            hits = pack(hits, budget, s.min_hit_tokens)
            timings["budget"] = _ms(t0)
            diagnostics["budget"] = {"tokens": budget, "used": sum(h.chunk.tokens for h in hits)}
        if fanout:
            shown = {m.id for h in hits for m in members_of(h)}
            kept = [h.chunk for h in passages if any(m.id in shown for m in members_of(h))]
            diagnostics.update(self.zero_passages.record(corpora, kept))
            diagnostics["k_per_corpus"] = {b.name: b.k for b in branches}
        timings["total"] = _ms(started)
        return PipelineResult(hits, mode, timings, fusion, diagnostics, notes, queries[1:])

    def _reformulations(self, query: str, n: int, timings: dict[str, float], notes: list[str], diagnostics: dict[str, Any]) -> list[str]:
        if not n:
            return []
        t0 = time.perf_counter()
        got = self.reformulator().reformulations(query, n)
        found = got.queries[:n]
        timings["reformulate"] = _ms(t0)
        if got.error:
            notes.append(f"reformulation failed ({got.error}); searched the original query only")
        diagnostics["reformulations"] = found
        return found

    def _embed(self, queries: list[str], mode: str, timings: dict[str, float]) -> list[np.ndarray | None]:
        if mode == "bm25":
            return [None] * len(queries)
        if not self.searcher.embedder_loaded:
            timings["model_load"] = self.searcher.load_embedder()
        t0 = time.perf_counter()
        vectors: list[np.ndarray | None] = [self.searcher.embed_query(q) for q in queries]
        timings["embed"] = _ms(t0)
        return vectors

    def _route(self, branches: list[Branch], query: str, vector: np.ndarray | None, diagnostics: dict[str, Any]) -> None:
        intents = {b.name: self.corpus(b.name).intent for b in branches}
        emb = self.searcher.embedder if vector is not None else None
        ks = route(
            {b.name: b.k for b in branches}, intents, query, vector, (lambda texts: emb.embed_documents(texts)) if emb is not None else None
        )
        for b in branches:
            b.k = ks[b.name]
        diagnostics["router"] = ks

    def _retrieve(
        self,
        queries: list[str],
        vectors: list[np.ndarray | None],
        branches: list[Branch],
        mode: str,
        fanout: bool,
        timings: dict[str, float],
        direct: bool = False,
    ) -> tuple[list[Hit], str]:
        """Branch searches -> per-branch fusion over queries -> selection -> fusion over corpora
        -> hits; or, ``direct`` (one branch, one query, no selection), the searcher's search,
        whose query vector is kept in ``vectors[0]`` for the next ask."""
        s = self.settings.search
        b0 = branches[0]
        if direct:
            r = self.searcher.search(queries[0], k=b0.k, mode=mode, filters=b0.filters, vector=vectors[0])
            if vectors[0] is None:  # the first ask: the query's embedding is the searcher's
                timings.update({name: r.timings_ms[name] for name in ("model_load", "embed") if name in r.timings_ms})
                vectors[0] = r.vector
            timings.update({f"search.{name}": v for name, v in r.timings_ms.items() if name != "total"})
            return r.hits, r.fusion
        t0 = time.perf_counter()
        requests = []
        for b in branches:
            window = max(s.rank_window_size, b.candidates) if mode == "hybrid" else b.candidates
            for q, v in zip(queries, vectors):
                requests.append(
                    BranchQuery(
                        q if mode != "dense" else "", v if mode != "bm25" else None, window, b.filters, max(s.num_candidates, window)
                    )
                )
        lists = run_branches(self.store, requests, self.searcher.bm25_fields, s.rrf_k, s.weights if mode == "hybrid" else None)
        timings["search"] = _ms(t0)
        if lists.took_ms is not None:
            timings["cluster_took"] = float(lists.took_ms)
        per_branch = []
        for i, b in enumerate(branches):
            own = lists[i * len(queries) : (i + 1) * len(queries)]
            per_branch.append(fuse_queries(own, s.rrf_k)[: max(b.candidates, 1)] if own else [])
        t0 = time.perf_counter()
        ids = list(dict.fromkeys(f.id for lst in per_branch for f in lst))
        chunks = {c.id: c for c in self.store.get(ids)}
        timings["fetch"] = _ms(t0)
        t0 = time.perf_counter()
        selected = []
        for b, lst in zip(branches, per_branch):
            vecs = self.store.vectors([f.id for f in lst]) if b.mmr_lambda is not None and lst else {}
            selected.append(select([f for f in lst if f.id in chunks], b, chunks, vecs))
        timings["select"] = _ms(t0)
        where = "one _msearch" if isinstance(self.store, MultiLeg) else "concurrent branches"
        how = f"rrf (client-side over {where}; {len(queries)} quer{'y' if len(queries) == 1 else 'ies'}"
        if not fanout:
            return [Hit(chunks[f.id], f.score, dict(f.legs)) for f in selected[0]], how + ")"
        fused = rrf({b.name: [(f.id, f.score) for f in sel] for b, sel in zip(branches, selected)}, k=s.rrf_k)
        by_id = {f.id: f for sel in selected for f in sel}
        hits = [Hit(chunks[f.id], f.score, {**by_id[f.id].legs, **f.legs}) for f in fused]
        return hits, how + f"; {len(branches)} corpora fused by rank)"

    def _grow_for_budget(
        self,
        queries: list[str],
        vectors: list[np.ndarray | None],
        branches: list[Branch],
        mode: str,
        hits: list[Hit],
        budget: int,
        timings: dict[str, float],
        direct: bool = False,
    ) -> list[Hit]:
        """Ask again for 4x as many hits while ``hits`` hold fewer than ``budget`` tokens and the
        index held as many as asked (up to :data:`MAX_BUDGET_CANDIDATES`)."""
        b = branches[0]
        while sum(h.chunk.tokens for h in hits) < budget and len(hits) >= b.k and b.k < MAX_BUDGET_CANDIDATES:
            b.k = min(b.k * 4, MAX_BUDGET_CANDIDATES)
            hits, _ = self._retrieve(queries, vectors, branches, mode, False, timings, direct)
        return hits

    def _demote(self, hits: list[Hit]) -> list[Hit]:
        """Hits re-sorted after their corpus's ``demote`` (:mod:`esrag.search.demote`)."""

        def rule(hit: Hit) -> tuple[tuple[str, ...], bool, float] | None:
            d = self.corpus(hit.chunk.corpus).demote
            return (tuple(d.patterns), d.api_stubs, d.weight) if d.weight < 1.0 else None

        return apply_demotion(hits, rule)

    def _sections(self, hits: list[Hit], k: int | None, budget: int | None) -> list[Hit]:
        """:func:`~esrag.search.sections.shape_hits` over the hits that can be returned: the first
        ``2k``, or (with a budget) those that hold twice the budget; later hits follow unchanged
        unless a shaped hit already holds their chunk."""
        s = self.settings.search
        n = len(hits)
        if budget:
            total = 0
            for i, h in enumerate(hits):
                total += h.chunk.tokens
                if total >= 2 * budget:
                    n = i + 1
                    break
        elif k:
            n = min(n, 2 * k)
        head = shape_hits(hits[:n], self.store, s.min_hit_tokens, s.merge_sections, s.expand_max_tokens)
        held = {m.id for h in head for m in members_of(h)}
        return head + [h for h in hits[n:] if not {m.id for m in members_of(h)} & held]

    def _label(self, hits: list[Hit]) -> None:
        """Give hits without an authority label their corpus's (``[corpora.NAME] authority``)."""
        for h in hits:
            label = self.corpus(h.chunk.corpus).authority
            if label and not h.chunk.metadata.get("authority"):
                h.chunk.metadata = {**h.chunk.metadata, "authority": label}

    def _expand(self, hits: list[Hit], spec: ExpandSpec | None, timings: dict[str, float]) -> list[Hit]:
        def spec_for(hit: Hit) -> ExpandSpec | None:
            own = self.corpus(hit.chunk.corpus).expand
            return parse_expand(own) if own else spec

        if spec is None and not any(self.corpus(h.chunk.corpus).expand for h in hits):
            return hits
        from esrag.search.expand import expand_hits

        t0 = time.perf_counter()
        out = expand_hits(hits, self.store, spec_for, self.settings.search.expand_max_tokens)
        timings["expand"] = _ms(t0)
        return out

    # -- the evaluation's question ------------------------------------------------------------
    def ranked_pool(
        self,
        query: str,
        budget: int,
        mode: str | None = None,
        filters: Filters | None = None,
        *,
        rerank: str | None = None,
        rerank_top_n: int | None = None,
        reformulate: int = 0,
        min_sources: int = 0,
        first_k: int = FIRST_POOL_K,
        limit: int | None = None,
    ) -> list[Hit]:
        """The ranked hits that a budgeted search of ``query`` packs, before packing: what
        ``esrag eval`` scores at every budget up to ``budget`` (cl100k tokens of source text).

        The same stages as :meth:`search` with ``reformulate`` (LLM reformulations fused by
        RRF) and ``rerank`` (a spec, or any label when the pipeline was built with a ready
        reranker; it reorders the first ``rerank_top_n`` hits); no packing and no fan-out (the
        settings' ``search.budget`` and ``search.expand`` are not applied; a ``[corpora.NAME]
        expand`` of the corpus searched still is, as in :meth:`search`). It
        asks for ``first_k`` hits, then 4x as many while the hits hold fewer than ``budget``
        tokens (or come from fewer than ``min_sources`` distinct source paths) and the index
        held as many as asked; ``limit`` (the number of chunks that can match, when known)
        caps each ask.

        Raises:
            ConfigError, RerankError, ModelLoadError, NotIndexedError: as :meth:`search`.
        """
        s = self.settings.search
        unpacked = (
            self
            if s.budget is None
            else Pipeline(
                self.settings.model_copy(update={"search": s.model_copy(update={"budget": None})}),
                self.store,
                self.searcher,
                self._reranker,
                self._reformulator,
            )
        )
        k = first_k
        while True:
            ask = min(k, max(limit, 1)) if limit is not None else k
            hits = unpacked.search(
                query,
                k=ask,
                mode=mode,
                filters=filters,
                corpora=[],
                budget=None,
                expand="",
                reformulate=reformulate,
                rerank="",
                rerank_top_n=rerank_top_n,
                sections=False,
            ).hits
            enough = sum(h.chunk.tokens for h in hits) >= budget
            if min_sources:
                enough = enough and len({h.chunk.source_path for h in hits}) >= min_sources
            if enough or len(hits) < ask or (limit is not None and k >= limit):
                break
            k *= 4
        if rerank:
            hits = rerank_hits(query, hits, self.reranker(rerank), rerank_top_n or DEFAULT_TOP_N)
        return hits


def pack(hits: list[Hit], budget: int, min_tokens: int = 0) -> list[Hit]:
    """Hits in rank order while they fit ``budget`` cl100k tokens of source text (each costs its
    ``chunk.tokens``). A hit that does not fit whole is shortened to the longest prefix of whole
    blocks that fits (:func:`esrag.search.budget.fit_text`: never inside a line, a fence, a
    table or a list), when that prefix holds at least
    ``min_tokens`` tokens and more than its first line; its ``text``, ``tokens`` and ``end_line``
    are the prefix's and ``chunk.metadata["truncated"]`` is True. Otherwise it is left out, and
    packing goes on with the next hits (whole or shortened). A hit is never cut mid-line; the
    hits' tokens sum to at most ``budget``.

    Raises:
        ValueError: ``budget`` < 1.
    """
    if budget < 1:
        raise ValueError(f"budget must be at least 1 cl100k token, got {budget}")
    out: list[Hit] = []
    left = budget
    for hit in hits:
        c = hit.chunk
        if c.tokens <= left:
            out.append(hit)
            left -= c.tokens
            continue
        fit = fit_text(c.text, left, min_tokens=min_tokens)
        text, n = fit.text, fit.tokens
        if not fit.cut:  # its stored count (a sum over merged members) was over; its text's own count fits
            chunk = replace(c, tokens=n)
        elif not text or "\n" not in text.strip():
            continue
        else:
            chunk = replace(c, text=text, tokens=n, end_line=_cut_end_line(c, text), metadata={**c.metadata, "truncated": True})
        out.append(Hit(chunk, hit.score, hit.legs, hit.expanded_from))
        left -= n
        if left <= 0:
            break
    return out


def _cut_end_line(chunk: Chunk, text: str) -> int:
    """The source line where ``text`` (a prefix of ``chunk.text``) ends."""
    members = chunk.metadata.get("chunks")
    if not members:
        return chunk.start_line + text.count("\n")
    at = 0
    for _, start, _end, chars in members:  # members joined by a blank line (esrag.search.expand.JOINER)
        if len(text) <= at + chars:
            return start + text[at:].count("\n")
        at += chars + 2
    return chunk.end_line
