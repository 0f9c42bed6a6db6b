"""Budgeted evidence metrics and chunk-free ranking metrics (seed 000, §4.4; App. J "pilot plan").

Words. Text is NFKC-normalised and case-folded, and a *word* is a maximal run of Unicode
letters and digits (regex ``[^\\W_]+``): punctuation, underscores, Markdown syntax and
whitespace separate words and are never words themselves, so ``"BERT-PFT (IR),"`` gives
``["bert", "pft", "ir"]``. The same function reads evidence and chunks, so escapes and
line breaks in either do not matter.

Selection. The ranked chunks are cut to a budget of B cl100k_base tokens of source text by
:func:`esrag.search.budget.take_budget` (the overflowing chunk is cut to fit). Each selected
chunk's text (cut where the budget cut it) is one *unit*; 5-grams are taken within each unit
and never across unit boundaries (the seed's audit fix: concatenation penalised small chunks).
A unit shorter than 5 words contributes its whole word tuple as one gram.

Evidence recall (rec@Bt). An evidence text of at least 5 words is retrieved when at least half
of its distinct 5-grams are among the selected grams; one shorter than 5 words must appear as a
contiguous word sequence inside one unit. An evidence text without any word is never retrieved.
rec@Bt is the share of a question's evidence texts retrieved, in [0, 1].

Gold-token precision (prec@Bt). The share of the distinct selected grams that lie in gold: the
5-grams of the question's evidence texts (an evidence text shorter than 5 words is one gram).
0 when nothing is selected.

Chunk-free ranking metrics (gold documents, BEIR/SQuAD/spans): chunk hits are mapped to their
documents, keeping each document's first rank; recall@k, MRR (reciprocal rank of the first
gold document) and nDCG@10 (gain = relevance grade, discount log2(rank + 1)).

Greedy oracle: the best reachable rec@Bt of a chunk set (App. K, "Structure and alignment"),
see :func:`greedy_oracle`.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from esrag.search.budget import take_budget, taken_text

N = 5
"""The n of the word n-grams evidence is matched on."""

_WORD = re.compile(r"[^\W_]+")
_SEP = "\x1f"

Gram = tuple[str, ...]


def words(text: str) -> list[str]:
    """Words of ``text``: NFKC, case-folded, maximal runs of Unicode letters and digits."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def grams(ws: Sequence[str], n: int = N) -> set[Gram]:
    """Distinct word n-grams of ``ws``; a sequence shorter than ``n`` (but not empty) is one gram."""
    if len(ws) >= n:
        return {tuple(ws[i : i + n]) for i in range(len(ws) - n + 1)}
    return {tuple(ws)} if ws else set()


@dataclass(slots=True)
class Selection:
    """The budgeted selection of one ranking.

    Attributes:
        units: words of each selected chunk's source text (cut by the budget), in rank order.
        grams: union of each unit's 5-grams (never spanning two units).
        tokens: cl100k_base tokens selected (<= B).
        items: the selected items (chunks or hits), in rank order.
        cut: per item, True when the budget cut it.
    """

    units: list[list[str]]
    grams: set[Gram]
    tokens: int
    items: list[Any] = field(default_factory=list)
    cut: list[bool] = field(default_factory=list)

    def joined(self) -> list[str]:
        """Each unit as one separator-delimited string (for contiguous-sequence checks)."""
        return [_SEP + _SEP.join(u) + _SEP for u in self.units]


def select(
    items: Sequence[Any],
    budget: int,
    text: Callable[[Any], str] = lambda c: c.text,
    tokens: Callable[[Any], int] = lambda c: c.tokens,
) -> Selection:
    """The units of ``items`` (ranked, best first) within ``budget`` cl100k tokens of source text."""
    taken = take_budget(items, budget, tokens)
    units: list[list[str]] = []
    all_grams: set[Gram] = set()
    for t in taken:
        unit, unit_grams = _unit(taken_text(t, text))
        units.append(list(unit))
        all_grams |= unit_grams
    return Selection(units, all_grams, sum(t.tokens for t in taken), [t.item for t in taken], [t.truncated for t in taken])


@functools.lru_cache(maxsize=100_000)
def _unit(text: str) -> tuple[tuple[str, ...], frozenset[Gram]]:
    """Words and 5-grams of one unit's text (memoised: the same chunks recur across budgets,
    retrievers and oracle steps)."""
    ws = words(text)
    return tuple(ws), frozenset(grams(ws))


@dataclass(slots=True)
class Gold:
    """A question's gold evidence, prepared for matching.

    Attributes:
        evidence: word tuple of each evidence text (in the order given).
        evidence_grams: 5-gram set of each evidence text (one gram when shorter than 5 words).
        grams: union of ``evidence_grams`` (the gold of prec@Bt).
    """

    evidence: list[Gram]
    evidence_grams: list[frozenset[Gram]]
    grams: frozenset[Gram]

    @classmethod
    def from_texts(cls, texts: Sequence[str]) -> Gold:
        ev = [tuple(words(t)) for t in texts]
        eg = [frozenset(grams(w)) for w in ev]
        return cls(ev, eg, frozenset().union(*eg) if eg else frozenset())


def coverage(gold: Gold, sel: Selection) -> list[float]:
    """Per evidence text, the share of its 5-grams selected (short evidence: 1.0 if it occurs
    contiguously in one unit, else 0.0), in [0, 1]."""
    joined: list[str] | None = None
    out: list[float] = []
    for ws, eg in zip(gold.evidence, gold.evidence_grams):
        if not ws:
            out.append(0.0)
        elif len(ws) < N:
            joined = joined if joined is not None else sel.joined()
            needle = _SEP + _SEP.join(ws) + _SEP
            out.append(1.0 if any(needle in u for u in joined) else 0.0)
        else:
            out.append(sum(1 for g in eg if g in sel.grams) / len(eg))
    return out


def found(gold: Gold, sel: Selection) -> list[bool]:
    """Per evidence text, whether it counts as retrieved (>= half its 5-grams; short: contiguous)."""
    return [c >= 0.5 if len(ws) >= N else c == 1.0 for c, ws in zip(coverage(gold, sel), gold.evidence)]


def evidence_recall(gold: Gold, sel: Selection) -> float:
    """rec@Bt of one question, in [0, 1] (0 when the question has no evidence)."""
    hits = found(gold, sel)
    return sum(hits) / len(hits) if hits else 0.0


def gold_precision(gold: Gold, sel: Selection) -> float:
    """prec@Bt of one question: share of distinct selected grams that lie in gold, in [0, 1]."""
    if not sel.grams:
        return 0.0
    return sum(1 for g in sel.grams if g in gold.grams) / len(sel.grams)


# -- chunk-free ranking metrics --------------------------------------------------------------


def document_ranking(doc_ids: Sequence[str]) -> list[str]:
    """Documents in the order of their first chunk in a chunk ranking (duplicates dropped)."""
    return list(dict.fromkeys(doc_ids))


def recall_at_k(ranked: Sequence[str], gold: Mapping[str, float], k: int) -> float:
    """Share of gold documents among the first ``k`` ranked documents, in [0, 1]."""
    return len(set(ranked[:k]) & set(gold)) / len(gold) if gold else 0.0


def reciprocal_rank(ranked: Sequence[str], gold: Mapping[str, float]) -> float:
    """1 / rank of the first gold document (0 when none is ranked)."""
    return next((1.0 / r for r, d in enumerate(ranked, 1) if d in gold), 0.0)


def ndcg_at_k(ranked: Sequence[str], gold: Mapping[str, float], k: int = 10) -> float:
    """nDCG@k with gain = relevance grade and discount log2(rank + 1), in [0, 1]."""
    dcg = sum(gold.get(d, 0.0) / math.log2(r + 1) for r, d in enumerate(ranked[:k], 1))
    ideal = sum(g / math.log2(r + 1) for r, g in enumerate(sorted(gold.values(), reverse=True)[:k], 1))
    return dcg / ideal if ideal > 0 else 0.0


# -- greedy oracle ---------------------------------------------------------------------------


def greedy_oracle(
    chunks: Sequence[Any],
    gold: Gold,
    budget: int,
    text: Callable[[Any], str] = lambda c: c.text,
    tokens: Callable[[Any], int] = lambda c: c.tokens,
) -> tuple[float, list[Any]]:
    """The greedy oracle: best reachable rec@Bt of a chunk set under a budget.

    Starting from nothing, it repeatedly appends the chunk that most improves the budgeted
    selection — first the number of evidence texts retrieved, then the summed evidence
    coverage (so two halves of a split paragraph can be assembled), then the fewer tokens —
    and stops when no chunk improves either or the budget is full. Only chunks sharing a gram
    with the gold (or holding a short evidence text) are candidates; ties keep document order.
    The selection is scored exactly like a ranking (same budget rule, same matching).

    Args:
        chunks: the chunk set of the question's pool (any objects with source text and tokens).
        gold: the question's evidence.
        budget: B in cl100k_base tokens.

    Returns:
        ``(rec, order)``: the oracle's rec@Bt in [0, 1] and the chunks it chose, in order.
    """
    candidates = [c for c in chunks if _touches(gold, _unit(text(c)))]
    order: list[Any] = []
    best = (0, 0.0)
    while candidates and sum(tokens(c) for c in order) < budget:
        scored = []
        for i, c in enumerate(candidates):
            cov = coverage(gold, select([*order, c], budget, text, tokens))
            n_found = sum(v >= 0.5 if len(ws) >= N else v == 1.0 for v, ws in zip(cov, gold.evidence))
            scored.append(((n_found, round(sum(cov), 12)), -tokens(c), -i))
        (score, _, neg_i) = max(scored)
        if score <= best:
            break
        best = score
        order.append(candidates.pop(-neg_i))
    return evidence_recall(gold, select(order, budget, text, tokens)), order


def _touches(gold: Gold, unit: tuple[tuple[str, ...], frozenset[Gram]]) -> bool:
    ws, unit_grams = unit
    if not unit_grams.isdisjoint(gold.grams):
        return True
    joined = _SEP + _SEP.join(ws) + _SEP
    return any(0 < len(e) < N and (_SEP + _SEP.join(e) + _SEP) in joined for e in gold.evidence)
