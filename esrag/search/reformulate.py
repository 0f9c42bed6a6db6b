"""Query reformulation (seed 002, §3.2): an LLM writes N (default 5) semantically equivalent,
lexically diverse reformulations; the original and each reformulation are searched and all
ranked lists are fused by RRF (:func:`esrag.search.fusion.rrf`) with the original.

Off by default: seed 002 found no gain under its protocol (fusion "retains candidates that a
reformulation favours"), so it is an option to measure (``esrag eval`` retriever
``hybrid+reformulate``), not a default. Replies are cached by the persistent LLM cache (model,
prompt hash, input hash, options), so a repeated query costs no call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from esrag.llm.cache import CachedLLM
from esrag.llm.clients import LLMOptions
from esrag.llm.json_reply import ask, parse_json_object
from esrag.llm.prompts import REFORMULATE, load_prompt
from esrag.search.fusion import Fused, rrf

if TYPE_CHECKING:
    from esrag.config import Settings

PROMPT = REFORMULATE
DEFAULT_N = 5


@dataclass
class Reformulations:
    """What a reformulator gave for one query: the ``queries`` (distinct, not the query) and,
    when its call failed, ``error`` (the search then runs on the original alone)."""

    queries: list[str]
    error: str | None = None


@runtime_checkable
class QueryReformulator(Protocol):
    """Writes up to ``n`` reformulations of a query: what :class:`~esrag.search.pipeline.Pipeline`
    calls. :class:`Reformulator` is one; :func:`as_reformulator` makes one of a plain
    ``query -> [reformulations]`` callable."""

    def reformulations(self, query: str, n: int) -> Reformulations:
        """At most ``n`` reformulations of ``query``; never raises for a failed call (the
        failure is in ``error``)."""
        ...


@dataclass
class FunctionReformulator:
    """A plain ``query -> [reformulations]`` callable (``esrag eval``'s slot) as a
    :class:`QueryReformulator`: its first ``n`` answers."""

    fn: Callable[[str], Sequence[str]]

    def reformulations(self, query: str, n: int) -> Reformulations:
        return Reformulations(list(self.fn(query))[:n])


def as_reformulator(obj: QueryReformulator | Callable[[str], Sequence[str]]) -> QueryReformulator:
    """``obj`` as a :class:`QueryReformulator`: itself when it is one, else wrapped
    (:class:`FunctionReformulator`)."""
    return obj if isinstance(obj, QueryReformulator) else FunctionReformulator(obj)


@dataclass
class Reformulator:
    """Writes reformulations of a query through a cached LLM.

    Args:
        llm: the LLM behind the persistent cache.
        n: reformulations asked for (>= 1).
        max_tokens: output limit of the call (model tokens).
    """

    llm: CachedLLM
    n: int = DEFAULT_N
    max_tokens: int = 400
    last_error: str | None = field(default=None, init=False)

    def __call__(self, query: str) -> list[str]:
        return self.reformulate(query)

    def reformulations(self, query: str, n: int) -> Reformulations:
        """:class:`QueryReformulator`: up to ``n`` reformulations asked for in one call (this
        reformulator's ``n`` is left as it is), with the failure, if any, as the error."""
        return self._ask(query, n)

    def reformulate(self, query: str) -> list[str]:
        """Up to ``n`` distinct reformulations (none equal to the query, ignoring case and
        spacing). A failed or unusable call gives ``[]`` (the search runs on the original alone)
        and sets ``last_error``; seeds 1–3 are tried while the reply is not usable JSON."""
        got = self._ask(query, self.n)
        self.last_error = got.error
        return got.queries

    def _ask(self, query: str, n: int) -> Reformulations:
        """One cached LLM call for ``n`` reformulations of ``query`` (see :meth:`reformulate`)."""
        prompt = load_prompt(PROMPT)
        text = prompt.render(n=n, query=query)
        options = LLMOptions(max_tokens=self.max_tokens, json=True)
        got = ask(
            self.llm,
            text,
            prompt.sha256,
            options,
            "reformulate",
            lambda reply: clean(parse_json_object(reply), query, n) or None,
            "no usable reformulations (JSON with a 'reformulations' list)",
        )
        if got.value is not None:
            return Reformulations(got.value)
        return Reformulations(
            [], got.error if got.transport else f"{self.llm.spec} gave no usable reformulations (JSON with a 'reformulations' list)"
        )


def clean(obj: dict[str, Any] | None, query: str, n: int) -> list[str]:
    """The reformulation strings of a reply object: trimmed, distinct, not the query, at most ``n``."""
    if not obj:
        return []
    items = obj.get("reformulations") or obj.get("queries") or []
    if not isinstance(items, list):
        return []
    seen = {" ".join(query.lower().split())}
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            continue
        text = " ".join(item.split())
        key = text.lower()
        if text and key not in seen:
            seen.add(key)
            out.append(text)
    return out[:n]


def fuse_queries(lists: Sequence[list[Fused]], rrf_k: int = 60) -> list[Fused]:
    """RRF over one ranked list per query (the original first, then each reformulation), by
    rank only. Each fused hit keeps the per-leg ranks of the first list it appears in (the
    original query's when present) and gains ``q0``, ``q1``… legs: its rank in each list."""
    if len(lists) == 1:
        return list(lists[0])
    fused = rrf({f"q{i}": [(f.id, f.score) for f in lst] for i, lst in enumerate(lists)}, k=rrf_k)
    first: dict[str, Fused] = {}
    for lst in lists:
        for f in lst:
            first.setdefault(f.id, f)
    for f in fused:
        f.legs = {**first[f.id].legs, **f.legs}
    return fused


def make_reformulator(settings: Settings, n: int | None = None) -> Reformulator:
    """A :class:`Reformulator` with the configured LLM (``settings.llm``, ``llm_url``…) behind
    the persistent LLM cache (``settings.llm_cache_path``).

    Raises:
        PluginError: unknown LLM provider. EsragError: the cache file cannot be opened.
    """
    from esrag.llm.cache import LLMCache
    from esrag.llm.clients import make_llm

    llm = make_llm(settings.llm, settings)
    return Reformulator(CachedLLM(llm, LLMCache(settings.llm_cache_path)), n or settings.search.reformulate or DEFAULT_N)
