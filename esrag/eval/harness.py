"""The evaluation harness: arms × retrievers over a dataset, scored with budgeted metrics and
compared with paired statistics (seed 000, §3–§4.5).

For every arm and every pool (one Qasper paper, or the whole corpus of a pooled dataset), the
pool's chunks are indexed into a fresh embedded store (a temporary SQLite file, opened like the
product opens it) and searched through the same :class:`~esrag.search.pipeline.Pipeline` as
``esrag search`` (:meth:`~esrag.search.pipeline.Pipeline.ranked_pool`: the ranked hits a
budgeted search packs, with the retriever's reranker and LLM reformulations as the pipeline's own
stages), so the numbers are what a user of ``esrag ingest`` + ``esrag search`` gets. The
configuration is read and validated by :mod:`esrag.eval.config`. Identical passages are
embedded once across arms and runs (:class:`~esrag.embedding.CachedEmbedder` over an
:class:`~esrag.embedding.EmbeddingCache` keyed by model and text hash); queries are cached the same
way. Everything is deterministic for a given config, data and cache contents.

Outputs (see :mod:`esrag.eval.report`): one record per question × arm × retriever, summary rows
per arm × retriever × budget (means in points with BCa cluster-bootstrap 95% CIs, the greedy
oracle ceiling), and the configured paired contrasts with TOST / Holm / sign-flip tests.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from esrag import __version__, section_context
from esrag.config import Settings, load_settings
from esrag.embedding import CachedEmbedder, Embedder, EmbeddingCache, make_embedder, normalize_spec, passage_cache_spec
from esrag.embedding.base import Progress
from esrag.errors import ConfigError
from esrag.eval import metrics
from esrag.eval.arms import Arm, Retriever, make_arm, make_retriever
from esrag.eval.base import default_cache_path, pipeline_settings
from esrag.eval.config import (
    DEFAULT_ARMS,
    DEFAULT_BUDGETS,
    DEFAULT_RETRIEVERS,
    ContrastSpec,
    EvalConfig,
    apply_overrides,
    load_config,
)
from esrag.eval.datasets import EvalDataset, Question, load_dataset
from esrag.eval.docs import load_docs, section_metrics
from esrag.eval.stats import Comparison, by_cluster, cluster_bootstrap, compare, decide, paired_differences
from esrag.indexed_text import embed_text
from esrag.ingest import meta_hash
from esrag.model import Chunk, Document, Hit
from esrag.search.budget import take_budget
from esrag.search.pipeline import Pipeline
from esrag.search.reformulate import make_reformulator
from esrag.search.rerank import Reranker, make_reranker
from esrag.search.searcher import Searcher
from esrag.stores.base import IndexMeta
from esrag.stores.sqlite import SQLiteStore

__all__ = [
    "DEFAULT_ARMS",
    "DEFAULT_BUDGETS",
    "DEFAULT_RETRIEVERS",
    "ContrastSpec",
    "EvalConfig",
    "EvalRun",
    "Observer",
    "QuestionResult",
    "apply_overrides",
    "contrast_rows",
    "default_cache_path",
    "default_settings_snapshot",
    "load_config",
    "run_eval",
    "summary_rows",
]

FIRST_K = 50
"""Chunks asked of the pipeline first; more (x4) are asked while the largest budget is not filled
(or, for chunk-free gold, fewer than 50 distinct documents are ranked) and the pool has more
(:meth:`esrag.search.pipeline.Pipeline.ranked_pool`)."""
RANK_CUTOFFS = (10, 50)
EMBED_WINDOW = 1024


# -- progress ----------------------------------------------------------------------------------


class Observer:
    """Progress callbacks (all optional no-ops); the CLI draws rich bars from them."""

    def phase(self, name: str, total: int) -> None: ...
    def advance(self, name: str, n: int = 1) -> None: ...
    def note(self, text: str) -> None: ...


# -- results -----------------------------------------------------------------------------------


@dataclass
class QuestionResult:
    """One question × arm × retriever.

    Attributes:
        rec, prec: budget B -> rec@Bt / prec@Bt in [0, 1].
        ranking: chunk-free gold only: ``recall@10``, ``recall@50``, ``mrr``, ``ndcg@10`` in [0, 1]
            over documents; on ``docs``, ``recall@1``, ``recall@5``, ``recall@10``, ``mrr`` over
            sections (:func:`esrag.eval.docs.section_metrics`).
        selected: the chunks inside the primary budget: ``[source_path, start_line, end_line,
            tokens taken, cut]``.
    """

    question_id: str
    pool: str
    cluster: str
    arm: str
    retriever: str
    rec: dict[int, float]
    prec: dict[int, float]
    ranking: dict[str, float] | None = None
    selected: list[list[Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "question_id": self.question_id,
            "pool": self.pool,
            "cluster": self.cluster,
            "arm": self.arm,
            "retriever": self.retriever,
        }
        out.update({f"rec@{b}t": round(100 * v, 6) for b, v in self.rec.items()})
        out.update({f"prec@{b}t": round(100 * v, 6) for b, v in self.prec.items()})
        if self.ranking is not None:
            out.update({k: round(100 * v, 6) for k, v in self.ranking.items()})
        out["selected"] = self.selected
        return out


@dataclass
class EvalRun:
    """Everything one evaluation produced (before summarising).

    Attributes:
        oracle: arm -> budget -> question id -> greedy-oracle rec@Bt in [0, 1].
        chunk_stats: arm -> ``chunks``, ``median_tokens``, ``mean_tokens`` (cl100k) over the
            searched pools.
        seconds: wall time per phase (``chunk``, ``embed``, ``search``, ``total``).
    """

    config: EvalConfig
    dataset: EvalDataset
    settings: Settings
    embedder_spec: str
    arms: list[Arm]
    retrievers: list[Retriever]
    results: list[QuestionResult] = field(default_factory=list)
    oracle: dict[str, dict[int, dict[str, float]]] = field(default_factory=dict)
    chunk_stats: dict[str, dict[str, float]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    embeddings_computed: int = 0

    @property
    def pools(self) -> list[str]:
        return [p for p in self.dataset.pools if self.dataset.questions_of(p)]

    @property
    def n_documents(self) -> int:
        """Documents in the pools that were searched."""
        return len({d for p in self.pools for d in self.dataset.pools[p]})


class _CachedModel:
    """The run's embedder: :class:`~esrag.embedding.CachedEmbedder` over an
    :class:`~esrag.embedding.EmbeddingCache` for passages, the same cache for queries (``|query``
    keys), and the model itself loaded only when something is missing from the cache (a rerun of
    the same config loads no model). Vectors: float32, L2-normalised, shape [n, dims].
    """

    def __init__(self, spec: str, settings: Settings, cache: EmbeddingCache) -> None:
        self.spec, self.settings, self.cache = spec, settings, cache
        self._cached: CachedEmbedder | None = None
        self._dims: int | None = None
        self._memo: dict[str, np.ndarray] = {}

    @property
    def model(self) -> CachedEmbedder:
        if self._cached is None:
            self._cached = CachedEmbedder(make_embedder(self.spec, self.settings), self.cache)
            self._dims = self._cached.dims
        return self._cached

    @property
    def computed(self) -> int:
        """Passages actually embedded by the model in this run."""
        return self._cached.computed if self._cached else 0

    @property
    def dims(self) -> int:
        return self._dims if self._dims is not None else self.model.dims

    @dims.setter
    def dims(self, value: int) -> None:
        self._dims = value

    def embed_documents(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        # CachedEmbedder's keys (an int8 st: model's vectors are kept apart from fp32 ones)
        keys = [self.cache.key(passage_cache_spec(self.spec, self.settings) + "|passage", t) for t in texts]
        found = self.cache.get_many(list(dict.fromkeys(keys)))
        if len(found) < len(set(keys)) or not texts:
            return self.model.embed_documents(texts, progress)
        if progress:
            progress(len(found))
        out = np.stack([found[k] for k in keys])
        self._dims = out.shape[1]
        return out

    def embed_query(self, text: str) -> np.ndarray:
        if text not in self._memo:
            key = self.cache.key(self.spec + "|query", text)
            vector = self.cache.get_many([key]).get(key)
            if vector is None:
                vector = self.model.embed_query(text)
                self.cache.put_many({key: vector})
            self._memo[text] = vector
        return self._memo[text]


class _NoVectors:
    """Stands in for the embedder when every retriever is BM25 (one-dimensional zero vectors)."""

    spec, dims, computed = "none", 1, 0

    def embed_query(self, text: str) -> np.ndarray:  # pragma: no cover - BM25 never asks
        raise AssertionError("a BM25-only evaluation embedded a query")

    def embed_documents(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:  # pragma: no cover
        raise AssertionError("a BM25-only evaluation embedded passages")


# -- the run -----------------------------------------------------------------------------------


def run_eval(cfg: EvalConfig, settings: Settings | None = None, observer: Observer | None = None) -> EvalRun:
    """Run the grid of ``cfg``; see the module docstring.

    Raises:
        ConfigError: a bad config value (names it and the valid ones).
        ModelLoadError: the embedder cannot be loaded.
    """
    started = time.perf_counter()
    cfg.validate()
    observer = observer or Observer()
    settings = settings or load_settings()
    assert cfg.path is not None  # validate() refused a config without a dataset
    dataset = (
        load_docs(cfg.path, cfg.limit, cfg.root, settings) if cfg.kind == "docs" else load_dataset(cfg.kind, cfg.path, cfg.limit, cfg.split)
    )
    rerank = (make_reranker(cfg.reranker) if isinstance(cfg.reranker, str) else cfg.reranker) if cfg.reranker else None
    reformulate = _reformulator(cfg, settings)
    run = EvalRun(
        cfg,
        dataset,
        settings,
        normalize_spec(cfg.embedder or settings.embedder),
        [make_arm(a, settings, cfg.custom_arms) for a in cfg.arms],
        [make_retriever(r, rerank, cfg.rerank_depth, reformulate) for r in cfg.retrievers],
    )
    chunks = _chunk_all(run, observer)
    run.seconds["chunk"] = time.perf_counter() - started
    cache = EmbeddingCache(cfg.cache or default_cache_path())
    try:
        embedder: _CachedModel | _NoVectors = _CachedModel(run.embedder_spec, settings, cache)
        t0 = time.perf_counter()
        if isinstance(embedder, _CachedModel) and any(r.mode != "bm25" for r in run.retrievers):
            vectors = _embed_all(run, chunks, embedder, observer)
        else:  # BM25 alone never reads a vector: index placeholders and load no model
            embedder = _NoVectors()
            vectors = {key: np.zeros((len(c), 1), np.float32) for key, c in chunks.items()}
        run.embeddings_computed = embedder.computed
        run.seconds["embed"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        _search_all(run, chunks, vectors, embedder, observer)
        run.seconds["search"] = time.perf_counter() - t0
    finally:
        cache.close()
    run.seconds["total"] = time.perf_counter() - started
    return run


def _reformulator(cfg: EvalConfig, settings: Settings) -> Any:
    """The LLM reformulator (``settings.llm`` behind the LLM cache) when a retriever asks for
    ``+reformulate``, else None; ``cfg.reformulations`` per query."""
    if not any("reformulate" in r.split("+") for r in cfg.retrievers):
        return None
    return make_reformulator(settings, cfg.reformulations)


def _documents(dataset: EvalDataset, pool: str, corpus: str) -> list[Document]:
    """The pool's documents as ``esrag ingest`` builds them (path, text, corpus; the chunker
    derives the title)."""
    return [Document(path=d.path, text=d.text, corpus=corpus) for d in dataset.documents_of(pool)]


def _chunk_all(run: EvalRun, observer: Observer) -> dict[tuple[str, str], list[Chunk]]:
    """(arm, pool) -> the pool's chunks under that arm."""
    corpus = run.dataset.name
    all_docs = [Document(path=d.path, text=d.text, corpus=corpus) for d in run.dataset.documents]
    out: dict[tuple[str, str], list[Chunk]] = {}
    observer.phase("chunking", len(run.arms) * len(run.pools))
    for arm in run.arms:
        chunker = arm.build_chunker(all_docs)
        for pool in run.pools:
            if run.dataset.chunk_pool is not None:  # a tree chunked as `esrag ingest` chunks it (docs)
                out[(arm.name, pool)] = run.dataset.chunk_pool(chunker, pool)
            else:
                out[(arm.name, pool)] = [c for doc in _documents(run.dataset, pool, corpus) for c in chunker.chunk(doc)]
            observer.advance("chunking")
        tokens = [c.tokens for pool in run.pools for c in out[(arm.name, pool)]]
        run.chunk_stats[arm.name] = {
            "chunks": len(tokens),
            "median_tokens": float(statistics.median(tokens)) if tokens else 0.0,
            "mean_tokens": round(float(np.mean(tokens)), 3) if tokens else 0.0,
        }
    return out


def _embed_all(
    run: EvalRun, chunks: dict[tuple[str, str], list[Chunk]], embedder: Embedder, observer: Observer
) -> dict[tuple[str, str], np.ndarray]:
    """Embed every arm's passages; duplicates across arms are embedded once. Distinct passages
    go to the cached embedder sorted by length in windows of :data:`EMBED_WINDOW`, so the cache
    grows as the run goes (an interrupted run resumes from there). An arm with section-context
    vectors gets them per pool, as ingest computes them per file."""
    arms = {a.name: a for a in run.arms}
    keys = list(chunks)
    texts = [embed_text(c, list(arms[arm].embed_fields)) for arm, pool in keys for c in chunks[(arm, pool)]]
    unique = sorted(set(texts), key=lambda t: (len(t), t))
    observer.phase("embedding", len(unique))
    found: dict[str, np.ndarray] = {}
    for start in range(0, len(unique), EMBED_WINDOW):
        window = unique[start : start + EMBED_WINDOW]
        found.update(zip(window, embedder.embed_documents(window, progress=lambda n: observer.advance("embedding", n))))
    out, at = {}, 0
    for key in keys:
        n, arm = len(chunks[key]), arms[key[0]]
        out[key] = np.stack([found[t] for t in texts[at : at + n]]) if n else np.zeros((0, embedder.dims), np.float32)
        if n and arm.section_context:
            out[key] = section_context.apply(chunks[key], out[key], arm.section_context, arm.section_context_depth)
        at += n
    return out


def _search_all(
    run: EvalRun,
    chunks: dict[tuple[str, str], list[Chunk]],
    vectors: dict[tuple[str, str], np.ndarray],
    embedder: Embedder,
    observer: Observer,
) -> None:
    observer.phase("searching", len(run.arms) * sum(len(run.dataset.questions_of(p)) for p in run.pools))
    doc_ids = run.dataset.doc_id_by_path()
    golds = {q.id: metrics.Gold.from_texts(q.evidence) for q in run.dataset.questions}
    with tempfile.TemporaryDirectory(prefix="esrag-eval-") as tmp:
        for arm in run.arms:
            run.oracle[arm.name] = {b: {} for b in run.config.budgets}
            for n, pool in enumerate(run.pools):
                pool_chunks = chunks[(arm.name, pool)]
                store = _open_store(run, Path(tmp) / f"{len(run.oracle)}-{n}.db", arm, pool_chunks, vectors[(arm.name, pool)], embedder)
                try:
                    pipeline = _pipeline(run, arm, store, embedder, pool_chunks)
                    for q in run.dataset.questions_of(pool):
                        _oracle(run, arm, q, pool_chunks, golds[q.id])
                        for retriever in run.retrievers:
                            hits = _ranked(pipeline, run, retriever, q, len(pool_chunks))
                            if arm.expand is not None:  # retrieval-time expansion (E+KX, E+AX)
                                hits = arm.expand(hits, pool_chunks)
                            run.results.append(_score(run, arm, retriever, q, hits, golds[q.id], doc_ids))
                        observer.advance("searching")
                finally:
                    store.close()
                    for suffix in ("", "-wal", "-shm"):
                        Path(f"{store.path}{suffix}").unlink(missing_ok=True)


def _open_store(run: EvalRun, path: Path, arm: Arm, chunks: list[Chunk], vectors: np.ndarray, embedder: Embedder) -> SQLiteStore:
    """A fresh embedded store holding ``chunks``, opened as the product opens its store."""
    store = SQLiteStore.from_settings(run.settings.model_copy(update={"db": path}))
    store.ensure(IndexMeta(embedder.spec, embedder.dims, list(arm.embed_fields), dict(arm.bm25_fields), __version__, analyzer=arm.analyzer))
    if chunks:
        store.write(chunks, vectors, [meta_hash(c) for c in chunks])
    return store


def _pipeline(run: EvalRun, arm: Arm, store: SQLiteStore, embedder: Embedder, pool_chunks: list[Chunk]) -> Pipeline:
    """The :class:`~esrag.search.pipeline.Pipeline` of ``esrag search`` over the pool's store,
    with the arm's search settings (RRF k, windows, leg weights) and the run's reranker and
    reformulator; no stage is switched on by the settings (budget, expansion, rerank,
    reformulation and fan-out are what each retriever asks for)."""
    settings = pipeline_settings(run.settings, arm.search)
    searcher = Searcher(store, lambda: embedder, settings.search, dict(arm.bm25_fields))
    rerank = next((r.rerank for r in run.retrievers if r.rerank is not None), None)
    reformulate = next((r.reformulate for r in run.retrievers if r.reformulate is not None), None)
    return Pipeline(settings, store, searcher, reranker=rerank, reformulator=reformulate)


def _ranked(pipeline: Pipeline, run: EvalRun, retriever: Retriever, q: Question, pool_size: int) -> list[Hit]:
    """The ranked pool of ``q`` for ``retriever``: :meth:`Pipeline.ranked_pool` up to the largest
    budget (and, for chunk-free gold, 50 distinct documents), the pool's size capping each ask."""
    label = retriever.rerank.spec if isinstance(retriever.rerank, Reranker) else str(run.config.reranker or "reranker")
    return pipeline.ranked_pool(
        q.text,
        max(run.config.budgets),
        retriever.mode,
        rerank=label if retriever.rerank is not None else None,
        rerank_top_n=retriever.depth,
        reformulate=run.config.reformulations if retriever.reformulate is not None else 0,
        min_sources=max(RANK_CUTOFFS) if q.gold_docs else 0,
        first_k=FIRST_K,
        limit=pool_size,
    )


def _oracle(run: EvalRun, arm: Arm, q: Question, pool_chunks: list[Chunk], gold: metrics.Gold) -> None:
    for b in run.config.budgets:
        run.oracle[arm.name][b][q.id] = metrics.greedy_oracle(pool_chunks, gold, b)[0]


def _score(
    run: EvalRun, arm: Arm, retriever: Retriever, q: Question, hits: list[Hit], gold: metrics.Gold, doc_ids: dict[str, str]
) -> QuestionResult:
    chunks = [h.chunk for h in hits]
    rec, prec, selected = {}, {}, []
    for i, b in enumerate(run.config.budgets):
        sel = metrics.select(chunks, b)
        rec[b], prec[b] = metrics.evidence_recall(gold, sel), metrics.gold_precision(gold, sel)
        if i == 0:
            selected = [[t.item.source_path, t.item.start_line, t.item.end_line, t.tokens, t.truncated] for t in take_budget(chunks, b)]
    ranking = None
    if q.gold_sections:
        ranking = section_metrics(chunks, q.gold_sections)
    elif q.gold_docs:
        docs = metrics.document_ranking([doc_ids.get(c.source_path, c.source_path) for c in chunks])
        ranking = {f"recall@{k}": metrics.recall_at_k(docs, q.gold_docs, k) for k in RANK_CUTOFFS}
        ranking["mrr"] = metrics.reciprocal_rank(docs, q.gold_docs)
        ranking["ndcg@10"] = metrics.ndcg_at_k(docs, q.gold_docs, 10)
    return QuestionResult(q.id, q.pool, q.cluster, arm.name, retriever.name, rec, prec, ranking, selected)


# -- summaries ---------------------------------------------------------------------------------


def _values(run: EvalRun, arm: str, retriever: str, metric: str, budget: int) -> dict[str, float]:
    """Question id -> the metric in [0, 1]: rec/prec at ``budget``, else a ranking metric."""
    rows = [r for r in run.results if r.arm == arm and r.retriever == retriever]
    if metric in ("rec", "prec"):
        return {r.question_id: getattr(r, metric)[budget] for r in rows}
    missing = [r.question_id for r in rows if r.ranking is None or metric not in r.ranking]
    if missing:
        raise ConfigError(
            f"contrast metric {metric!r} is not measured on this dataset (question {missing[0]}); "
            "use rec or prec, or a ranking metric of a dataset with gold documents or sections"
        )
    return {r.question_id: r.ranking[metric] for r in rows if r.ranking is not None}


def summary_rows(run: EvalRun) -> list[dict[str, Any]]:
    """One row per arm × retriever × budget: ``rec``/``prec`` means in points with BCa 95%
    cluster-bootstrap CIs (``ci_low``/``ci_high`` are rec's), the arm's oracle ceiling, counts,
    and ranking metrics (points) when gold is chunk-free. ``default`` marks the arm and
    retriever that ``esrag search`` uses out of the box."""
    clusters = {q.id: q.cluster for q in run.dataset.questions}
    rows = []
    for arm in run.arms:
        for retriever in run.retrievers:
            results = [r for r in run.results if r.arm == arm.name and r.retriever == retriever.name]
            for b in run.config.budgets:
                rows.append(_row(run, arm.name, retriever.name, b, results, clusters))
    return rows


def _row(run: EvalRun, arm: str, retriever: str, b: int, results: list[QuestionResult], clusters: dict[str, str]) -> dict[str, Any]:
    cfg = run.config
    rec = cluster_bootstrap(by_cluster({r.question_id: 100 * r.rec[b] for r in results}, clusters), cfg.resamples, cfg.seed)
    prec = cluster_bootstrap(by_cluster({r.question_id: 100 * r.prec[b] for r in results}, clusters), cfg.resamples, cfg.seed)
    oracle = run.oracle[arm][b]
    row: dict[str, Any] = {
        "arm": arm,
        "retriever": retriever,
        "budget": b,
        "rec": round(rec.estimate, 4),
        "prec": round(prec.estimate, 4),
        "ci_low": round(rec.bca()[0], 4),
        "ci_high": round(rec.bca()[1], 4),
        "prec_ci_low": round(prec.bca()[0], 4),
        "prec_ci_high": round(prec.bca()[1], 4),
        "oracle": round(100 * float(np.mean(list(oracle.values()))), 4) if oracle else None,
        "n_questions": rec.n_obs,
        "n_documents": run.n_documents,
        "n_clusters": rec.n_clusters,
        "default": arm == "default" and retriever == run.settings.search.mode,
    }
    if results and results[0].ranking is not None:
        for key in results[0].ranking:
            row[key] = round(100 * float(np.mean([r.ranking[key] for r in results if r.ranking is not None])), 4)
    return row


def contrast_rows(run: EvalRun) -> list[dict[str, Any]]:
    """The configured contrasts: estimate (points), BCa 95% CI, sign-flip p, TOST (90% CI and
    p) when a margin is set, Holm-adjusted p within each family, and the verdict."""
    cfg = run.config
    clusters = {q.id: q.cluster for q in run.dataset.questions}
    rows: list[tuple[ContrastSpec, int, Comparison]] = []
    for spec in cfg.contrasts:
        budget = spec.budget or cfg.budgets[0]
        a_arm, _, a_ret = spec.a.partition("/")
        b_arm, _, b_ret = spec.b.partition("/")
        diffs = paired_differences(
            _values(run, a_arm, a_ret, spec.metric, budget), _values(run, b_arm, b_ret, spec.metric, budget), clusters
        )
        rows.append((spec, budget, compare(diffs, spec.margin, cfg.resamples, cfg.seed)))
    for family in dict.fromkeys(s.family for s, _, _ in rows):
        decide([c for s, _, c in rows if s.family == family])
    return [_contrast_dict(s, b, c) for s, b, c in rows]


def _contrast_dict(spec: ContrastSpec, budget: int, c: Comparison) -> dict[str, Any]:
    out: dict[str, Any] = {
        "a": spec.a,
        "b": spec.b,
        "family": spec.family,
        "metric": f"{spec.metric}@{budget}t" if spec.metric in ("rec", "prec") else spec.metric,
        "estimate": round(c.estimate, 4),
        "ci_low": round(c.ci95[0], 4),
        "ci_high": round(c.ci95[1], 4),
        "p_perm": round(c.p_perm, 6),
        "margin": spec.margin,
        "ci90_low": None,
        "ci90_high": None,
        "p_tost": None,
        "p_holm": round(c.p_holm, 6) if c.p_holm is not None else None,
        "verdict": c.verdict,
        "n_clusters": c.n_clusters,
        "n_questions": c.n_obs,
    }
    if c.tost:
        out.update(ci90_low=round(c.tost.ci[0], 4), ci90_high=round(c.tost.ci[1], 4), p_tost=round(c.tost.p, 6))
    return out


def default_settings_snapshot(settings: Settings) -> dict[str, Any]:
    """What the ``default`` arm ran with (chunking, indexed text, search, store)."""
    return {
        "chunking": settings.chunking.model_dump(),
        "index_text": settings.index_text.model_dump(),
        "search": settings.search.model_dump(),
        "embedder": normalize_spec(settings.embedder),
    }
