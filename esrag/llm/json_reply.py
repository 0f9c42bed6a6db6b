"""The one ask-parse-retry loop for LLM replies (seed 000, App. N.2): ask with the call's seed,
and while the reply is not acceptable ask again with seeds 1, 2 and 3 (the same prompt: another
seed is another cache entry, so a retry is cached like the first call). Every retry and every
failure is recorded in the cost ledger of the :class:`~esrag.llm.cache.CachedLLM`: a task that
never got an acceptable reply, and a transport error (timeout, HTTP error; not retried with
other seeds, the client already retried it).

Used by enrichment (E, E−K, CR, PF), key consolidation, query reformulation and grounded
answers; :func:`parse_json_object` is the one reading of a JSON object out of a model reply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from esrag.llm.cache import CachedLLM
from esrag.llm.clients import LLMError, LLMOptions, LLMReply

RETRY_SEEDS = (1, 2, 3)
"""Seeds of the retries after the call's own seed (App. N.2)."""
T = TypeVar("T")

_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```\s*$", re.S)


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in a model reply, or None.

    Safe coercions only: surrounding whitespace, a Markdown code fence around the object,
    prose before/after one ``{…}`` span, an array holding exactly one object. Other arrays,
    strings and numbers are not objects (None).
    """
    t = (text or "").strip()
    if not t:
        return None
    candidates = [t]
    if m := _FENCE.match(t):
        candidates.append(m.group(1).strip())
    if (a := t.find("{")) >= 0 and (b := t.rfind("}")) > a:
        candidates.append(t[a : b + 1])
    for c in candidates:
        try:
            obj = json.loads(c)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(obj, dict):
            return obj
    return None


@dataclass(slots=True)
class Accepted(Generic[T]):
    """What :func:`ask` got: the accepted ``value`` (None when none was), the ``reply`` it came
    from, and ``error`` — why nothing was accepted (None on success). ``transport`` holds the
    :class:`~esrag.llm.clients.LLMError` when a call failed rather than a reply."""

    value: T | None
    reply: LLMReply | None = None
    error: str | None = None
    transport: LLMError | None = None


def ask(
    llm: CachedLLM, prompt_text: str, prompt_sha256: str, options: LLMOptions, task: str, accept: Callable[[str], T | None], what: str
) -> Accepted[T]:
    """One user message ``prompt_text`` with seed ``options.seed``, then seeds 1–3 while
    ``accept(reply text)`` returns None.

    Args:
        prompt_sha256: hash of the prompt template (part of the cache key).
        task: ledger label (``enrich``, ``context``, ``field:title``, ``consolidate``,
            ``reformulate``, ``answer``).
        accept: reply text -> the value, or None for an unusable reply.
        what: what was missing, for the ledger and the error (``no usable JSON object``).

    Returns:
        :class:`Accepted`; on failure (recorded in ``llm.ledger``) ``value`` is None. Never
        raises :class:`~esrag.llm.clients.LLMError`: it comes back in ``transport``.
    """
    messages = [{"role": "user", "content": prompt_text}]
    for attempt, seed in enumerate((options.seed, *RETRY_SEEDS)):
        if attempt:
            llm.ledger.retried()
        try:
            reply = llm.chat(messages, options.with_seed(seed), prompt_sha256, task)
        except LLMError as exc:
            llm.ledger.fail(task, str(exc))
            return Accepted(None, None, str(exc), exc)
        value = accept(reply.text)
        if value is not None:
            return Accepted(value, reply)
    error = f"{what} after seeds {options.seed}, {', '.join(map(str, RETRY_SEEDS))}"
    llm.ledger.fail(task, error)
    return Accepted(None, None, error)


def ask_json(
    llm: CachedLLM,
    prompt_text: str,
    prompt_sha256: str,
    options: LLMOptions,
    task: str,
    usable: Callable[[dict[str, Any]], bool],
    what: str = "no usable JSON object",
) -> Accepted[dict[str, Any]]:
    """:func:`ask` for a JSON object: the first reply that :func:`parse_json_object` reads as
    an object that ``usable`` accepts."""

    def accept(text: str) -> dict[str, Any] | None:
        obj = parse_json_object(text)
        return obj if obj is not None and usable(obj) else None

    return ask(llm, prompt_text, prompt_sha256, options, task, accept, what)
