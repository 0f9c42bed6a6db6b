"""Second-pass signals computed from a first ranking: pseudo-relevance feedback and parent scores.

* :func:`rm3_terms` — the expansion terms of RM3 (Abdul-Jaleel et al., "UMass at TREC 2004",
  relevance model 1 of Lavrenko and Croft, SIGIR 2001): ``P(t|R) = sum over feedback chunks d of
  w_d * tf(t, d) / |d|`` with ``w_d`` the chunk's first-pass score normalised to sum 1; the
  ``n`` most probable terms that are not stop words, digits or query terms. RM3 interpolates
  the original query with them (weight λ); here the expanded query is its own BM25 leg
  (``bm25_prf``) fused with the original one, the fusion weight playing λ's part — BM25 queries
  are OR-ed words without per-term boosts on every store.
* :func:`rocchio` — Rocchio's relevance feedback (Rocchio, 1971) with pseudo-relevant chunks
  only: ``q' = normalize(q + β · mean(v_d))``, searched as the ``dense_prf`` leg.
* :func:`parent_boost` — hierarchy: a chunk's fused score plus ``α_s`` times the best score of
  another chunk of its section (the first ``depth`` levels of the section path in the same file)
  and ``α_p`` times the best of another chunk of its page, as in the parent-document and
  "hierarchical" retrievers that score a passage with its container's evidence.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from esrag.analysis import english_stopwords, query_terms
from esrag.model import SECTION_SEPARATOR, Chunk
from esrag.search.fusion import Fused

_WORD = re.compile(r"[^\W\d_][\w]*", re.UNICODE)


def rm3_terms(query: str, texts: Sequence[str], weights: Sequence[float], n: int, analyzer: str = "english") -> list[str]:
    """The ``n`` RM3 expansion terms of ``query`` from feedback ``texts`` (see the module
    docstring); ``weights`` are the texts' first-pass scores (>= 0). Lowercase words of at least
    3 characters that start with a letter; never a query term or an English stop word."""
    if n <= 0 or not texts:
        return []
    own = set(query_terms(query, analyzer)) | {w.lower() for w in _WORD.findall(query)}
    stop = english_stopwords()
    total = float(sum(max(w, 0.0) for w in weights)) or 1.0
    p: dict[str, float] = {}
    for text, w in zip(texts, weights):
        tokens = [t.lower() for t in _WORD.findall(text)]
        tokens = [t for t in tokens if len(t) >= 3 and t not in stop]
        if not tokens:
            continue
        share = max(w, 0.0) / total / len(tokens)
        for term, tf in Counter(tokens).items():
            p[term] = p.get(term, 0.0) + share * tf
    return [t for t, _ in sorted(p.items(), key=lambda kv: (-kv[1], kv[0])) if t not in own][:n]


def rocchio(query: np.ndarray, vectors: Sequence[np.ndarray], beta: float) -> np.ndarray:
    """``normalize(query + beta * mean(vectors))`` as float32 [dims]; ``query`` itself when
    there are no vectors or ``beta`` is 0."""
    if not len(vectors) or beta == 0:
        return query
    v = np.asarray(query, dtype=np.float32) + beta * np.mean(np.stack(vectors), axis=0, dtype=np.float32)
    return (v / max(float(np.linalg.norm(v)), 1e-12)).astype(np.float32)


def parent_boost(fused: Sequence[Fused], chunks: Mapping[str, Chunk], section: float, page: float, depth: int = 2) -> list[Fused]:
    """``fused`` re-scored with parent signals and re-sorted (see the module docstring): each
    result gains ``section`` times the best fused score among the *other* results of its
    section group (same source path, same first ``depth`` section-path levels) and ``page``
    times the best among the other results of its page. Results whose chunk is unknown keep
    their score. Ties keep the first ranking's order."""

    def best_two(keys: dict[str, tuple]) -> dict[tuple, list[float]]:
        out: dict[tuple, list[float]] = {}
        for f in fused:
            key = keys.get(f.id)
            if key is not None:
                top = out.setdefault(key, [])
                top.append(f.score)
                top.sort(reverse=True)
                del top[2:]
        return out

    sec_key = {i: (c.source_path, tuple(c.section_path.split(SECTION_SEPARATOR)[:depth])) for i, c in chunks.items()}
    page_key = {i: (c.source_path,) for i, c in chunks.items()}
    sec_best, page_best = best_two(sec_key), best_two(page_key)

    def other(best: dict[tuple, list[float]], key: tuple | None, score: float) -> float:
        top = best.get(key, []) if key is not None else []
        if not top:
            return 0.0
        return top[1] if top[0] == score and len(top) > 1 else (top[0] if top[0] != score else 0.0)

    rescored = []
    for order, f in enumerate(fused):
        extra = section * other(sec_best, sec_key.get(f.id), f.score) + page * other(page_best, page_key.get(f.id), f.score)
        rescored.append((f.score + extra, order, f))
    rescored.sort(key=lambda t: (-t[0], t[1]))
    return [Fused(f.id, s, f.legs) for s, _, f in rescored]
