"""Token budgets: take ranked chunks until B cl100k_base tokens of source text are filled
(seed 000, §4.4 and §4.7).

The rule, shared by the evaluation harness (rec@Bt, prec@Bt) and ``esrag search --budget``:

* Items are taken in rank order; each costs the cl100k_base tokens of its own **source text**
  (``Chunk.tokens``). Section-path prefixes, enrichment fields and contextual-retrieval context
  are indexed but never counted, so indexed text can change a chunk's rank but not its cost.
* The item that would overflow the budget is **cut**: only its first ``remaining`` tokens are
  taken, and taking stops there. Every arm therefore receives exactly ``B`` tokens whenever
  its ranking holds that many (seed 000 §4.7: the reader "receives exactly 512 tokens of
  retrieved source text").

Why cut rather than skip or keep the overflowing chunk: keeping it whole would let arms with
long chunks see more than ``B`` tokens, and skipping it (or stopping before it) would let arms
with long chunks see fewer; both break the comparison "at equal tokens" that the budgeted
metrics exist for. Cutting also matches the seed's released harness, whose numbers the study
reports. A chunk of zero tokens costs nothing and is taken while budget remains.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from esrag.tokens import decode, encode

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Taken(Generic[T]):
    """One item inside a budget.

    Attributes:
        item: the ranked item (usually a :class:`~esrag.model.Chunk` or a ``Hit``).
        tokens: cl100k_base tokens of its source text that fit (all of them unless cut).
        truncated: True for the last item when only its first ``tokens`` tokens fit.
    """

    item: T
    tokens: int
    truncated: bool = False


def take_budget(items: Iterable[T], budget_tokens: int, tokens: Callable[[T], int] = lambda c: _own(c).tokens) -> list[Taken[T]]:
    """Items in rank order until ``budget_tokens`` cl100k tokens of source text are filled.

    Args:
        items: ranked items, best first.
        budget_tokens: B, in cl100k_base tokens (>= 1).
        tokens: an item's cost in cl100k_base tokens (default: its ``tokens`` attribute, the
            count of the chunk's own source text).

    Returns:
        The taken items, in rank order; their ``tokens`` sum to ``min(B, total)``. The last one
        has ``truncated=True`` when it was cut to fit.

    Raises:
        ValueError: ``budget_tokens`` < 1 or an item reports a negative cost.
    """
    if budget_tokens < 1:
        raise ValueError(f"budget must be at least 1 cl100k token, got {budget_tokens}")
    out: list[Taken[T]] = []
    left = budget_tokens
    for item in items:
        if left <= 0:
            break
        cost = tokens(item)
        if cost < 0:
            raise ValueError(f"an item reports {cost} tokens; costs are cl100k token counts (>= 0)")
        if cost <= left:
            out.append(Taken(item, cost))
            left -= cost
        else:
            out.append(Taken(item, left, truncated=True))
            left = 0
    return out


def cut_text(text: str, n_tokens: int) -> str:
    """The first ``n_tokens`` cl100k_base tokens of ``text``, decoded (``text`` itself when it
    has no more than that). A multi-byte character split by the cut is dropped."""
    ids = encode(text)
    if n_tokens >= len(ids):
        return text
    return decode(ids[: max(n_tokens, 0)]).rstrip("\ufffd")


def taken_text(taken: Taken[Any], text: Callable[[Any], str] = lambda c: c.text) -> str:
    """The source text a :class:`Taken` item contributes: whole, or cut to its ``tokens``."""
    value = text(taken.item)
    return cut_text(value, taken.tokens) if taken.truncated else value


def _own(item: Any) -> Any:
    """``item`` as Any: the default ``tokens`` reads the item's own ``tokens`` attribute."""
    return item
