"""Embedding and retrieval diagnostics of seed 002 (§4.2, §4.4, §4.5 and App. C), without gold.

Definitions (App. C), as implemented here:

* **Sim@K** — ``Sim@K = 1/|Q| Σ_q 1/K Σ_{i=1..K} cos(q, d_i^(q))``: each query's top ``depth``
  candidates (10, the seed's ``K = 10``) from a retrieval configuration are re-encoded by a
  chosen *scorer* model together with the query, re-ranked by that cosine, and ``d_i`` is the
  i-th of them; Sim@1 is the best candidate's cosine, Sim@5 the mean of the best five (of all of
  them when fewer came back). Cosines are in [-1, 1].
* **Confidence drop** — ``Δ_conf = s(d_1) − s(d_2)``, the re-scored top-1/top-2 gap (0 with one
  candidate).
* **Self-retrieval Sim@5** (embedding selection, §4.4) — every chunk queries the index of all
  chunks *including itself* with its own passage embedding, so rank 1 is the chunk (cosine 1):
  ``Top5 = 1/|C| Σ_d 1/5 (1 + Σ_{i=1..4} cos(d, d_i))`` with ``d_i`` its nearest other chunks, and
  the self-retrieval gap is ``1 − cos(d, d_1)``. The constant self-match inflates both equally for
  every model, so compare models with it, not with query-based Sim@K.

Paired contrasts between two configurations (A − B per query, in cosine units) use the BCa
bootstrap and sign-flip test of :mod:`esrag.eval.stats` (queries are the clusters).
Caveat (seed F.4): candidates that the scorer itself retrieved are favoured, so a dense list
re-scored by its own model is the argmax by construction.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from esrag.errors import ConfigError
from esrag.eval.stats import RESAMPLES, cluster_bootstrap, compare

if TYPE_CHECKING:
    from esrag.config import Settings
    from esrag.stores.base import IndexMeta, Store

METRICS = ("sim@1", "sim@5", "gap")


def sim_at_k(cosines: Sequence[float] | np.ndarray) -> dict[str, float]:
    """``{"sim@1", "sim@5", "gap"}`` of one query from its candidates' cosines (any order).

    Raises:
        ValueError: no candidates.
    """
    s = np.sort(np.asarray(cosines, dtype=np.float64))[::-1]
    if s.size == 0:
        raise ValueError("no candidates to score")
    return {"sim@1": float(s[0]), "sim@5": float(s[:5].mean()), "gap": float(s[0] - s[1]) if s.size > 1 else 0.0}


def rescore(query_vector: np.ndarray, candidate_vectors: np.ndarray) -> np.ndarray:
    """Cosines [n] of a query vector [dims] with candidate vectors [n, dims] (any norms)."""
    q = np.asarray(query_vector, dtype=np.float32)
    c = np.asarray(candidate_vectors, dtype=np.float32)
    q = q / max(float(np.linalg.norm(q)), 1e-12)
    c = c / np.maximum(np.linalg.norm(c, axis=1, keepdims=True), 1e-12)
    return c @ q


@dataclass
class QueryDiagnostics:
    """Per-query Sim@1, Sim@5 and gap of one configuration (``values[metric][query id]``)."""

    name: str
    values: dict[str, dict[str, float]] = field(default_factory=lambda: {m: {} for m in METRICS})
    empty: list[str] = field(default_factory=list)

    def add(self, qid: str, cosines: Sequence[float] | np.ndarray) -> None:
        if len(cosines) == 0:
            self.empty.append(qid)
            return
        for m, v in sim_at_k(cosines).items():
            self.values[m][qid] = v

    def summary(self, resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Any]:
        """Means with BCa 95% intervals per metric; ``n`` queries scored, ``empty`` without hits."""
        out: dict[str, Any] = {"config": self.name, "n": len(self.values["sim@1"]), "empty": len(self.empty)}
        for m in METRICS:
            vals = self.values[m]
            if not vals:
                out[m] = None
                continue
            boot = cluster_bootstrap({q: [v] for q, v in vals.items()}, resamples, seed)
            lo, hi = boot.bca()
            out[m] = {"mean": round(boot.estimate, 4), "ci_low": round(lo, 4), "ci_high": round(hi, 4)}
        return out


def diagnose_queries(
    name: str,
    queries: Mapping[str, str],
    retrieve: Callable[[str], Sequence[Any]],
    embed_query: Callable[[str], np.ndarray],
    embed_candidates: Callable[[Sequence[Any]], np.ndarray],
    depth: int = 10,
) -> QueryDiagnostics:
    """Sim@1/Sim@5/gap of one configuration.

    Args:
        queries: query id -> text.
        retrieve: text -> candidates, best first (only the first ``depth`` are scored).
        embed_query: the scorer's query vector [dims] of a text.
        embed_candidates: the scorer's passage vectors [n, dims] of n candidates.
    """
    out = QueryDiagnostics(name)
    for qid, text in queries.items():
        cands = list(retrieve(text))[:depth]
        out.add(qid, rescore(embed_query(text), embed_candidates(cands)) if cands else np.zeros(0))
    return out


def contrast(a: QueryDiagnostics, b: QueryDiagnostics, resamples: int = RESAMPLES, seed: int = 0) -> list[dict[str, Any]]:
    """A − B per metric over the queries both scored: estimate (cosine units), BCa 95% CI,
    sign-flip p (queries are the clusters)."""
    rows = []
    for m in METRICS:
        common = sorted(set(a.values[m]) & set(b.values[m]))
        if not common:
            continue
        diffs = {q: [a.values[m][q] - b.values[m][q]] for q in common}
        c = compare(diffs, None, resamples, seed)
        rows.append(
            {
                "metric": m,
                "a": a.name,
                "b": b.name,
                "estimate": round(c.estimate, 4),
                "ci_low": round(c.ci95[0], 4),
                "ci_high": round(c.ci95[1], 4),
                "p_perm": round(c.p_perm, 6),
                "n": c.n_obs,
            }
        )
    return rows


def self_retrieval(vectors: np.ndarray, k: int = 5, sample: int | None = None, seed: int = 0, block: int = 1024) -> dict[str, Any]:
    """Self-retrieval Sim@k (module docstring) over passage vectors [n, dims].

    ``sample``: only that many (seeded) chunks query, all n are searched. Returns ``top5``
    (mean of 1/k (1 + Σ of the k−1 nearest others' cosines)), ``gap`` (mean 1 − nearest other's
    cosine), ``n_queries``, ``n_chunks``.

    Raises:
        ValueError: fewer than two vectors.
    """
    v = np.asarray(vectors, dtype=np.float32)
    n = v.shape[0]
    if n < 2:
        raise ValueError("self-retrieval needs at least two chunks")
    v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    rows = np.arange(n) if not sample or sample >= n else np.sort(np.random.default_rng(seed).choice(n, sample, replace=False))
    tops, gaps = [], []
    for start in range(0, len(rows), block):
        idx = rows[start : start + block]
        sims = v[idx] @ v.T
        sims[np.arange(len(idx)), idx] = -np.inf  # the chunk itself: counted as cosine 1 below
        m = min(k - 1, n - 1)
        others = -np.sort(-np.partition(sims, -m, axis=1)[:, -m:], axis=1)
        tops.append((1.0 + others.sum(axis=1)) / (m + 1))
        gaps.append(1.0 - others[:, 0])
    top = np.concatenate(tops)
    gap = np.concatenate(gaps)
    return {f"top{k}": round(float(top.mean()), 4), "gap": round(float(gap.mean()), 4), "n_queries": int(len(rows)), "n_chunks": int(n)}


def read_queries(path: Path) -> dict[str, str]:
    """Queries from a file: JSONL (``{"id"?, "query"|"question"|"text"}`` per line) or plain
    text (one query per line); ids default to the line number.

    Raises:
        ConfigError: unreadable file or a JSONL line without a query.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read queries from {path}: {exc}") from exc
    out: dict[str, str] = {}
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("{"):
            obj = json.loads(line)
            text = obj.get("query") or obj.get("question") or obj.get("text")
            if not text:
                raise ConfigError(f"{path}:{n}: a JSON line needs query, question or text")
            out[str(obj.get("id", n))] = str(text)
        else:
            out[str(n)] = line
    if not out:
        raise ConfigError(f"{path} holds no queries")
    return out


def sample_ids(ids: Sequence[str], sample: int | None, seed: int = 0) -> list[str]:
    """``sample`` ids chosen with a seeded RNG (all of them when ``sample`` is None or larger)."""
    ids = list(ids)
    if not sample or sample >= len(ids):
        return ids
    return sorted(random.Random(seed).sample(ids, sample))


def run_store_diagnostics(
    settings: Settings,
    store: Store,
    queries: Mapping[str, str],
    modes: Sequence[str],
    scorer_spec: str | None = None,
    depth: int = 10,
    self_sample: int | None = 2000,
    filters: Any = None,
    resamples: int = RESAMPLES,
    seed: int = 0,
    self_retrieval_too: bool = True,
) -> dict[str, Any]:
    """``esrag diagnose``: Sim@1/Sim@5/gap of each search mode over ``store`` (candidates re-scored
    by ``scorer_spec``, default the index's embedder), the contrast of the first two modes, and
    the scorer's self-retrieval Sim@5 over (a sample of) the indexed chunks.

    Raises:
        ConfigError: no modes, or more than two. NotIndexedError: empty index.
    """
    from esrag.app import make_searcher
    from esrag.embedding import make_embedder, normalize_spec
    from esrag.indexed_text import embed_text

    if not modes or len(modes) > 2:
        raise ConfigError(f"give one or two search modes to diagnose, got {list(modes)}")
    meta = store.meta()
    searcher = make_searcher(settings, store)
    scorer_spec = normalize_spec(scorer_spec or (meta.embedder if meta else settings.embedder))
    own = meta is not None and scorer_spec == meta.embedder
    scorer = searcher.embedder if own else make_embedder(scorer_spec, settings)
    memo: dict[str, np.ndarray] = {}

    def embed_candidates(chunks: Sequence[Any]) -> np.ndarray:
        missing = [c for c in chunks if c.id not in memo]
        if missing:
            if own:
                memo.update(store.vectors([c.id for c in missing]))
            still = [c for c in missing if c.id not in memo]
            if still:
                fields = list(meta.embed_fields) if meta else ["text"]
                memo.update(zip([c.id for c in still], scorer.embed_documents([embed_text(c, fields) for c in still])))
        return np.stack([memo[c.id] for c in chunks])

    qcache: dict[str, np.ndarray] = {}

    def embed_query(text: str) -> np.ndarray:
        if text not in qcache:
            qcache[text] = scorer.embed_query(text)
        return qcache[text]

    results = []
    for mode in modes:
        retrieve = (lambda m: lambda q: [h.chunk for h in searcher.search(q, k=depth, mode=m, filters=filters).hits])(mode)
        results.append(diagnose_queries(mode, queries, retrieve, embed_query, embed_candidates, depth))
    report: dict[str, Any] = {
        "scorer": scorer_spec,
        "index_embedder": meta.embedder if meta else None,
        "depth": depth,
        "configs": [r.summary(resamples, seed) for r in results],
        "contrasts": contrast(results[0], results[1], resamples, seed) if len(results) == 2 else [],
    }
    if self_retrieval_too:
        report["self_retrieval"] = _store_self_retrieval(store, scorer, own, meta, self_sample, seed)
    return report


def _store_self_retrieval(store: Store, scorer: Any, own: bool, meta: IndexMeta | None, sample: int | None, seed: int) -> dict[str, Any]:
    from esrag.indexed_text import embed_text

    ids = [cid for corpus in store.stats().get("corpora", {}) for entries in store.manifest(corpus).values() for cid in entries]
    ids = sample_ids(ids, sample * 4 if sample else None, seed)  # the searched set: a larger sample
    if own:
        found = store.vectors(ids)
        ids = [i for i in ids if i in found]
        vectors = np.stack([found[i] for i in ids]) if ids else np.zeros((0, 1))
    else:
        chunks = store.get(ids)
        fields = list(meta.embed_fields) if meta else ["text"]
        vectors = scorer.embed_documents([embed_text(c, fields) for c in chunks])
    if len(vectors) < 2:
        return {"top5": None, "gap": None, "n_queries": 0, "n_chunks": len(vectors)}
    return self_retrieval(vectors, 5, sample, seed)
