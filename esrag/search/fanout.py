"""Fan-out over corpora of different shapes (seed 001): one branch per corpus with its own k,
filters and selection (MMR over a wide pool, a per-source cap), all branches run concurrently
(ONE ``_msearch`` on Elasticsearch; a thread per branch on the embedded store, both through
:func:`esrag.search.legs.run_legs`), fused by rank with :func:`esrag.search.fusion.rrf` — never by comparing scores, which from two corpora "are
not on a common scale". An optional router skews the per-corpus k by the query's predicted
intent but never to zero, and a diagnostic counts results with zero passages from a corpus
("the cheapest alarm for a misconfigured index").
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import numpy as np

from esrag.errors import ConfigError
from esrag.model import Chunk
from esrag.search.fusion import Fused
from esrag.search.legs import fuse, run_legs
from esrag.stores.base import BranchQuery, Filters, Store

_WORD = re.compile(r"\w+", re.UNICODE)
ROUTER_TEMPERATURE = 0.1
"""Softmax temperature of the router over cosine similarities (a 0.1 cosine lead = e-fold weight)."""


class BranchLists(list):
    """A fan-out's answer (:func:`run_branches`): one fused list per branch,
    plus the request's ``took_ms`` and ``round_trip_ms`` (milliseconds, None when unknown),
    owned by the caller."""

    took_ms: int | None = None
    round_trip_ms: float | None = None


def corpus_filters(filters: Sequence[str], today: date | None = None) -> dict[str, Any]:
    """Keyword arguments of :class:`~esrag.stores.base.Filters` for a corpus's ``filters`` list:
    ``"effective_date <= today"``, ``"effective_date <= YYYY-MM-DD"``, ``"not superseded"``.

    Raises:
        ConfigError: any other form (the message lists the valid ones).
    """
    out: dict[str, Any] = {}
    for raw in filters:
        text = " ".join(str(raw).lower().split())
        m = re.fullmatch(r"effective_date\s*<=\s*(today|\d{4}-\d{2}-\d{2})", text)
        if m:
            out["effective_on"] = (today or date.today()).isoformat() if m.group(1) == "today" else m.group(1)
        elif text in ("not superseded", "superseded_by is null", "not_superseded"):
            out["exclude_superseded"] = True
        else:
            raise ConfigError(
                f"unknown corpus filter {raw!r}; valid: 'effective_date <= today', 'effective_date <= YYYY-MM-DD', 'not superseded'"
            )
    return out


@dataclass
class Branch:
    """One corpus branch: corpus name (None = every corpus), passages it returns (``k``), the
    filters inside its legs, and its selection (``mmr_lambda``/``pool``, ``cap``/``cap_by``)."""

    corpus: str | None
    k: int
    filters: Filters = field(default_factory=Filters)
    mmr_lambda: float | None = None
    pool: int = 0
    cap: int | None = None
    cap_by: str = "source_path"

    @property
    def name(self) -> str:
        return self.corpus or "*"

    @property
    def candidates(self) -> int:
        """Fused candidates asked of the store before selection."""
        return max(self.k, self.pool if (self.mmr_lambda is not None or self.cap) else self.k)


def run_branches(
    store: Store, branches: Sequence[BranchQuery], fields: dict[str, float], rrf_k: int = 60, weights: Mapping[str, float] | None = None
) -> BranchLists:
    """Every branch's legs (:func:`esrag.search.legs.run_legs`: ONE ``_msearch`` on
    Elasticsearch, one thread per branch, at most 4, on other stores), each branch fused by RRF
    over its window. The lists are identical either way.

    Returns:
        one fused list per branch (best first, per-leg ranks and raw scores), with the request's
        ``took_ms``/``round_trip_ms`` when the store reports them.
    """
    got = run_legs(store, branches, fields)
    out = BranchLists(fuse(legs, rrf_k, weights, b.window) for legs, b in zip(got.legs, branches))
    out.took_ms, out.round_trip_ms = got.took_ms, got.round_trip_ms
    return out


def _field(chunk: Chunk, name: str) -> Any:
    """The ``cap_by`` value of a chunk: a chunk field or a metadata key. A record's
    ``source_path`` is its own (``file#record_id``): every record of a JSONL file is a source."""
    if name == "source_path" and "record_id" in chunk.metadata:
        return f"{chunk.source_path}#{chunk.metadata['record_id']}"
    return getattr(chunk, name) if name in Chunk.__dataclass_fields__ else chunk.metadata.get(name)


def select(fused: list[Fused], branch: Branch, chunks: Mapping[str, Chunk], vectors: Mapping[str, np.ndarray]) -> list[Fused]:
    """The branch's ``k`` passages from its fused candidates.

    Without MMR: rank order. With ``mmr_lambda`` λ: maximal marginal relevance (Carbonell and
    Goldstein, 1998) — repeatedly the candidate maximising ``λ·rel − (1−λ)·max cos(v, chosen)``,
    where ``rel`` is the candidate's fused score min-max scaled to [0, 1] within this branch
    (rank-based, so usable in every mode) and ``cos`` uses the stored vectors (0 where a vector
    is missing). Either way at most ``cap`` passages share one ``cap_by`` value (a chunk field
    such as ``source_path``, or a metadata key).
    """
    counts: Counter[Any] = Counter()

    def allowed(f: Fused) -> bool:
        if not branch.cap:
            return True
        c = chunks.get(f.id)
        return c is None or counts[_field(c, branch.cap_by)] < branch.cap

    def take(f: Fused) -> None:
        c = chunks.get(f.id)
        if branch.cap and c is not None:
            counts[_field(c, branch.cap_by)] += 1

    out: list[Fused] = []
    if branch.mmr_lambda is None:
        for f in fused:
            if len(out) >= branch.k:
                break
            if allowed(f):
                take(f)
                out.append(f)
        return out
    lam = branch.mmr_lambda
    scores = [f.score for f in fused]
    lo, hi = (min(scores), max(scores)) if scores else (0.0, 0.0)
    rel = [(s - lo) / (hi - lo) if hi > lo else 1.0 for s in scores]
    left = list(range(len(fused)))
    chosen: list[np.ndarray] = []
    while left and len(out) < branch.k:
        best, best_value = None, -math.inf
        for i in left:
            if not allowed(fused[i]):
                continue
            v = vectors.get(fused[i].id)
            redundancy = max((float(v @ u) for u in chosen), default=0.0) if v is not None and chosen else 0.0
            value = lam * rel[i] - (1 - lam) * redundancy
            if value > best_value:
                best, best_value = i, value
        if best is None:
            break
        left.remove(best)
        take(fused[best])
        out.append(fused[best])
        v = vectors.get(fused[best].id)
        if v is not None:
            chosen.append(v / max(float(np.linalg.norm(v)), 1e-12))
    return out


def route(
    ks: Mapping[str, int],
    intents: Mapping[str, str],
    query: str,
    query_vector: np.ndarray | None,
    embed: Callable[[list[str]], np.ndarray] | None,
) -> dict[str, int]:
    """Per-corpus k adjusted by predicted intent; never zero.

    Each corpus with an ``intent`` description scores the query: the cosine between the query
    vector and the embedded description when vectors are available, else word overlap
    (Jaccard). Weights are a softmax of the scores at :data:`ROUTER_TEMPERATURE`; the total k
    (sum of the configured ks) is shared by weight, ``k_c = max(1, round(total · w_c))``.
    Corpora without an intent, or a single corpus, keep their k.
    """
    named = [c for c in ks if intents.get(c)]
    if len(named) < 2:
        return dict(ks)
    if query_vector is not None and embed is not None:
        vecs = embed([intents[c] for c in named])
        q = query_vector / max(float(np.linalg.norm(query_vector)), 1e-12)
        scores = [float(v @ q) / max(float(np.linalg.norm(v)), 1e-12) for v in vecs]
    else:
        words = set(w.lower() for w in _WORD.findall(query))
        scores = []
        for c in named:
            other = set(w.lower() for w in _WORD.findall(intents[c]))
            scores.append(len(words & other) / max(len(words | other), 1))
    top = max(scores)
    weights = [math.exp((s - top) / ROUTER_TEMPERATURE) for s in scores]
    total_w = sum(weights)
    total_k = sum(ks[c] for c in named)
    out = dict(ks)
    for c, w in zip(named, weights):
        out[c] = max(1, round(total_k * w / total_w))
    return out


class ZeroPassageCounter:
    """Counts, over the searches it saw, results with zero passages from each fanned-out corpus
    (seed 001: the fraction of served prompts with no passage from a corpus; zero by
    construction with a fixed per-corpus k, so any count is an alarm)."""

    def __init__(self) -> None:
        self.results = 0
        self.zero: Counter[str] = Counter()

    def record(self, corpora: Sequence[str], chunks: Sequence[Chunk]) -> dict[str, Any]:
        """Count one result; returns its diagnostic: passages per corpus, corpora with none,
        and the running totals."""
        per = Counter(c.corpus for c in chunks)
        missing = [c for c in corpora if per[c] == 0]
        self.results += 1
        self.zero.update(missing)
        return {
            "passages_per_corpus": {c: per[c] for c in corpora},
            "corpora_without_passages": missing,
            "results": self.results,
            "results_with_zero_passages": {c: self.zero[c] for c in corpora},
        }
