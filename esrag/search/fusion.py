"""Rank fusion: one reciprocal rank fusion (RRF) implementation for every store and feature.

RRF (Cormack, Clarke and Büttcher, SIGIR 2009): ``score(d) = sum over legs of w_leg / (k + rank)``
with 1-based ranks, taken over the first ``rank_window_size`` results of each leg. With unit
weights this is exactly Elasticsearch's ``rrf`` retriever (``rank_constant`` = k), so the
client-side fallback and the native retriever rank alike. The same function fuses the legs of
the SQLite store, Elasticsearch without an rrf licence, per-corpus fan-out and query
reformulation. Fusions are a table of functions (:data:`FUSIONS`), chosen by name: ``rrf``,
and ``linear`` (:func:`linear`, a weighted sum of min-max normalised scores, as Elasticsearch's
``linear`` retriever with the ``minmax`` normalizer).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from esrag.errors import ConfigError
from esrag.model import LegResult

Ranking = Sequence[tuple[str, float]]


@dataclass(slots=True)
class Fused:
    """A fused result: chunk id, fused score and each contributing leg's rank and raw score."""

    id: str
    score: float
    legs: dict[str, LegResult] = field(default_factory=dict)


def rrf(
    legs: Mapping[str, Ranking],
    k: int = 60,
    weights: Mapping[str, float] | None = None,
    rank_window_size: int | None = None,
) -> list[Fused]:
    """Reciprocal rank fusion of ranked lists.

    Args:
        legs: leg name -> ``[(id, raw_score), ...]`` best first. Duplicate ids within a leg
            keep their best rank.
        k: the rank constant (Elasticsearch's ``rank_constant``); must be >= 1.
        weights: leg name -> weight (default 1.0 each; 0 removes a leg from the score).
        rank_window_size: only the first N results of each leg take part (None = all).

    Returns:
        Fused results, best first; ties broken by the best single-leg rank, then by id, so the
        order is deterministic.

    Raises:
        ConfigError: ``k`` < 1, a negative weight, or a window < 1.
    """
    if k < 1:
        raise ConfigError(f"rrf rank constant k must be >= 1, got {k}")
    if rank_window_size is not None and rank_window_size < 1:
        raise ConfigError(f"rank_window_size must be >= 1, got {rank_window_size}")
    weights = weights or {}
    if any(w < 0 for w in weights.values()):
        raise ConfigError(f"rrf weights must be >= 0, got {dict(weights)}")
    fused: dict[str, Fused] = {}
    best_rank: dict[str, int] = {}
    for name, ranking in legs.items():
        w = float(weights.get(name, 1.0))
        window = ranking if rank_window_size is None else ranking[:rank_window_size]
        rank = 0
        for doc_id, raw in window:
            if doc_id in fused and name in fused[doc_id].legs:
                continue
            rank += 1
            entry = fused.setdefault(doc_id, Fused(doc_id, 0.0))
            entry.legs[name] = LegResult(rank, float(raw))
            entry.score += w / (k + rank)
            best_rank[doc_id] = min(best_rank.get(doc_id, rank), rank)
    return sorted(fused.values(), key=lambda f: (-f.score, best_rank[f.id], f.id))


def linear(
    legs: Mapping[str, Ranking],
    k: int = 60,
    weights: Mapping[str, float] | None = None,
    rank_window_size: int | None = None,
) -> list[Fused]:
    """Score fusion: ``score(d) = sum over legs of w_leg * minmax(raw score of d in the leg)``,
    the normalised convex combination of Elasticsearch's ``linear`` retriever with the
    ``minmax`` normalizer (``(s - min) / (max - min)`` over the leg's window; 1.0 for every
    result when they all score alike). A result absent from a leg gets 0 from it.

    Args:
        legs: leg name -> ``[(id, raw_score), ...]`` best first (higher raw score is better;
            BM25 scores and cosines both are). Duplicate ids within a leg keep their first entry.
        k: unused (the signature of :func:`rrf`, so the two are interchangeable).
        weights: leg name -> weight (default 1.0 each); use weights summing to 1 for a convex
            combination.
        rank_window_size: only the first N results of each leg take part (None = all).

    Returns:
        Fused results, best first; ties broken by the best single-leg rank, then by id.

    Raises:
        ConfigError: a negative weight or a window < 1.
    """
    if rank_window_size is not None and rank_window_size < 1:
        raise ConfigError(f"rank_window_size must be >= 1, got {rank_window_size}")
    weights = weights or {}
    if any(w < 0 for w in weights.values()):
        raise ConfigError(f"fusion weights must be >= 0, got {dict(weights)}")
    fused: dict[str, Fused] = {}
    best_rank: dict[str, int] = {}
    for name, ranking in legs.items():
        w = float(weights.get(name, 1.0))
        window = list(dict(reversed(list(ranking if rank_window_size is None else ranking[:rank_window_size]))).items())
        window.sort(key=lambda item: -item[1])
        if not window:
            continue
        hi, lo = window[0][1], window[-1][1]
        for rank, (doc_id, raw) in enumerate(window, 1):
            norm = (float(raw) - lo) / (hi - lo) if hi > lo else 1.0
            entry = fused.setdefault(doc_id, Fused(doc_id, 0.0))
            entry.legs[name] = LegResult(rank, float(raw))
            entry.score += w * norm
            best_rank[doc_id] = min(best_rank.get(doc_id, rank), rank)
    return sorted(fused.values(), key=lambda f: (-f.score, best_rank[f.id], f.id))


FusionFn = Callable[..., list[Fused]]
FUSIONS: dict[str, FusionFn] = {"rrf": rrf, "linear": linear}


def fusion(name: str) -> FusionFn:
    """The fusion function registered as ``name``.

    Raises:
        ConfigError: unknown name; the message lists the valid ones.
    """
    try:
        return FUSIONS[name]
    except KeyError:
        raise ConfigError(f"unknown fusion {name!r}; valid: {', '.join(sorted(FUSIONS))}") from None
