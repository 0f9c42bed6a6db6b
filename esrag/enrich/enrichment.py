"""Index-time enrichment (seed 000, §3 and App. N.2): E, E−K, contextual retrieval CR and
per-field calls PF.

**E** visits a document's chunks in order and makes one LLM call per chunk. The prompt
(``esrag/prompts/enrich_v1.txt``) holds the chunk's section path (or ``(no section)``), its
position ``i of n``, the previous chunk's summary (``(first chunk)`` for i = 1,
``(unavailable)`` when the previous call produced no summary), the chunk text, and the rolling
key dictionary, one line ``- key (seen cx)`` per key, or ``(none yet — this is the first
chunk)`` when it is empty. **E−K** shows ``(not provided)`` instead of the dictionary (the
dictionary is still kept, to filter related keys). The reply is one JSON object with seven
fields (title, summary, keywords 5–8, questions 2–3, entities, key, related_keys), checked by
:func:`validate_enrichment`. A reply that is not a usable JSON object is retried with seeds 1, 2
and 3; after that the chunk keeps empty fields and the failure is counted — one bad reply never
stops the document. A transport failure (timeout, HTTP error) is not retried with other seeds
(the provider already retried it); the chunk keeps empty fields, is counted, and is not cached,
so the next ingest tries again.

**Rolling key dictionary** (:class:`KeyDictionary`): first position, last position and count
per key; beyond 40 keys only the 40 most recently used stay (LRU), reordered by recency;
otherwise keys are listed in insertion order. ``related_keys`` are filtered against the
dictionary as it was *before* the call (K_{i−1}), so a chunk cannot list its own new key.

**CR** gives the model the whole document, then the chunk (document first, so servers with
prefix caching reuse it across the document's chunks) and stores the short reply (≤ 120 output
tokens) in ``Chunk.context``. **PF** makes one call per indexed field (title, summary, keywords,
questions), each with that field's instruction from the E prompt and the same context.

Every enriched chunk records the model (``provider:model``) and the prompt's SHA-256; its
content hash is extended with what the LLM produced, so a chunk whose generated fields change is
re-embedded and rewritten, and one whose fields come back identical (from the cache) is not.

Units: ``*_CHARS`` limits are characters; token limits are model tokens of the LLM.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from esrag.errors import ConfigError
from esrag.llm.cache import CachedLLM
from esrag.llm.clients import LLMOptions
from esrag.llm.json_reply import ask, ask_json
from esrag.llm.prompts import CONTEXT, ENRICH, FIELDS, Prompt, load_prompt
from esrag.model import Chunk, Document, Enrichment, content_hash

if TYPE_CHECKING:
    from esrag.config import Settings

MODES = ("e", "e-k", "cr", "pf")
MAX_KEYS = 40
KEYWORDS_RANGE = (5, 8)
QUESTIONS_RANGE = (2, 3)
MAX_RELATED = 3
MAX_ENTITIES = 20
KEY_MAX_CHARS = 80
TITLE_MAX_CHARS = 200
SUMMARY_MAX_CHARS = 1000
ITEM_MAX_CHARS = 200
QUESTION_MAX_CHARS = 300
CONTEXT_MAX_CHARS = 2000

NO_SECTION = "(no section)"
FIRST_CHUNK = "(first chunk)"
UNAVAILABLE = "(unavailable)"
EMPTY_DICTIONARY = "(none yet — this is the first chunk)"
NOT_PROVIDED = "(not provided)"
ENRICH_FIELDS = ("title", "summary", "keywords", "questions", "entities", "key", "related_keys")

#: Indexed-text configuration of each mode's seed-000 arm (``embed_fields``, ``bm25_fields``):
#: the generated fields before the chunk text (E, E−K, PF), the context before the text (CR).
#: ``context`` is empty for E chunks; it carries the [Section:]/[Previous:]/[Next:] lines that
#: key-based merging gives short keyless chunks.
ARM_INDEX_TEXT: dict[str, tuple[list[str], dict[str, float]]] = {
    "e": (
        ["title", "summary", "keywords", "questions", "context", "text"],
        {"title": 1.0, "summary": 1.0, "keywords": 1.0, "questions": 1.0, "context": 1.0, "text": 1.0},
    ),
    "cr": (["context", "text"], {"context": 1.0, "text": 1.0}),
}
ARM_INDEX_TEXT["e-k"] = ARM_INDEX_TEXT["pf"] = ARM_INDEX_TEXT["e"]


def check_mode(mode: str) -> str:
    """``mode`` lower-cased if it is one of :data:`MODES`.

    Raises:
        ConfigError: unknown mode (lists the valid ones).
    """
    m = (mode or "").strip().lower().replace("−", "-")
    if m not in MODES:
        raise ConfigError(f"unknown enrichment {mode!r}; valid: {', '.join(MODES)}")
    return m


# -- the rolling key dictionary ------------------------------------------------------------
@dataclass(slots=True)
class KeyEntry:
    """A key's first and last 1-based chunk position and how many chunks got it."""

    first: int
    last: int
    count: int = 1


class KeyDictionary:
    """The rolling key dictionary K of App. N.2 (Algorithm 1).

    Args:
        max_keys: K_max; beyond it only the ``max_keys`` keys with the largest last position
            are kept and the dictionary is reordered by recency (most recent first).
    """

    def __init__(self, max_keys: int = MAX_KEYS) -> None:
        self.max_keys = max_keys
        self.entries: dict[str, KeyEntry] = {}
        self.evicted: list[str] = []

    def update(self, key: str, position: int) -> None:
        """Record that the chunk at 1-based ``position`` got ``key`` (ignored when empty)."""
        if not key:
            return
        entry = self.entries.get(key)
        if entry is None:
            self.entries[key] = KeyEntry(position, position)
        else:
            entry.count += 1
            entry.last = position
        if len(self.entries) > self.max_keys:
            ranked = sorted(self.entries.items(), key=lambda kv: kv[1].last, reverse=True)
            self.evicted.extend(k for k, _ in ranked[self.max_keys :])
            self.entries = dict(ranked[: self.max_keys])

    def keys(self) -> list[str]:
        """Keys in the order shown to the model."""
        return list(self.entries)

    def __contains__(self, key: object) -> bool:
        return key in self.entries

    def __len__(self) -> int:
        return len(self.entries)

    def render(self) -> str:
        """One ``- key (seen cx)`` line per key, or ``(none yet — this is the first chunk)``."""
        if not self.entries:
            return EMPTY_DICTIONARY
        return "\n".join(f"- {k} (seen {e.count}x)" for k, e in self.entries.items())


# -- parsing and validation ------------------------------------------------------------------
def normalize_key(value: str) -> str:
    """A key as compared and stored: lower-cased, whitespace collapsed and trimmed, cut to
    :data:`KEY_MAX_CHARS` characters."""
    return " ".join(value.lower().split())[:KEY_MAX_CHARS].strip()


def _clean(value: str, limit: int) -> str:
    return " ".join(value.split())[:limit].strip()


def _scalar(value: Any) -> str | None:
    """A string for str, int and float values (not bool); None for anything else."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def _as_text(name: str, value: Any, limit: int, notes: list[str]) -> str:
    if value is None:
        return ""
    s = _scalar(value)
    if s is None and isinstance(value, list) and value and (s := _scalar(value[0])) is not None:
        notes.append(f"{name}: list coerced to its first item")
    elif s is None:
        notes.append(f"{name}: {type(value).__name__} dropped (expected a string)")
        return ""
    elif not isinstance(value, str):
        notes.append(f"{name}: {type(value).__name__} coerced to string")
    return _clean(s, limit)


_ITEM_KEYS = ("name", "text", "value", "keyword", "question", "key")


def _split_string(name: str, value: str) -> list[str]:
    if name == "questions":
        parts = [p for line in value.splitlines() for p in re.split(r"(?<=\?)\s+", line)]
    else:
        parts = re.split(r"[,;\n]", value)
    return [p for p in parts if p.strip()]


def _as_list(name: str, value: Any, limit: int, notes: list[str]) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        items: list[Any] = _split_string(name, value)
        notes.append(f"{name}: string split into {len(items)} items")
    elif isinstance(value, list):
        items = value
    else:
        notes.append(f"{name}: {type(value).__name__} dropped (expected a list)")
        return []
    out: list[str] = []
    seen: set[str] = set()
    for item in items:
        s = _scalar(item)
        if s is None and isinstance(item, dict):
            s = next((_scalar(item[k]) for k in _ITEM_KEYS if _scalar(item.get(k)) is not None), None)
        if s is None:
            notes.append(f"{name}: {type(item).__name__} item dropped")
            continue
        s = _clean(s, limit)
        if s and s.lower() not in seen:
            seen.add(s.lower())
            out.append(s)
    return out


def _counted(name: str, items: list[str], lo: int, hi: int, notes: list[str]) -> list[str]:
    if len(items) > hi:
        notes.append(f"{name}: {len(items)} items cut to {hi}")
        return items[:hi]
    if len(items) < lo:
        notes.append(f"{name}: {len(items)} items (fewer than {lo}) kept")
    return items


def validate_enrichment(obj: dict[str, Any], known_keys: Collection[str]) -> tuple[Enrichment, list[str]]:
    """Check and coerce one reply object into an :class:`Enrichment` (Table 18's checks).

    Strings: title (≤ 200 characters), summary (≤ 1,000), whitespace collapsed; a number is
    turned into a string, a list into its first item, anything else dropped. Lists: keywords
    (5–8), questions (2–3), entities (≤ 20), related_keys (≤ 3); a string is split (commas,
    semicolons or lines; questions after each ``?``), numbers become strings, objects give their
    ``name``/``text`` value, other items are dropped, duplicates removed; too many are cut, too
    few are kept and noted. ``key`` and ``related_keys`` are lower-cased, trimmed and cut to 80
    characters; related keys not in ``known_keys`` (the dictionary before this call) are
    dropped.

    Returns:
        The enrichment (``model``/``prompt_sha256`` left empty) and notes, one per coercion or
        count violation (empty when the reply was clean).
    """
    notes: list[str] = []
    title = _as_text("title", obj.get("title"), TITLE_MAX_CHARS, notes)
    summary = _as_text("summary", obj.get("summary"), SUMMARY_MAX_CHARS, notes)
    keywords = _counted("keywords", _as_list("keywords", obj.get("keywords"), ITEM_MAX_CHARS, notes), *KEYWORDS_RANGE, notes)
    questions = _counted("questions", _as_list("questions", obj.get("questions"), QUESTION_MAX_CHARS, notes), *QUESTIONS_RANGE, notes)
    entities = _as_list("entities", obj.get("entities"), ITEM_MAX_CHARS, notes)[:MAX_ENTITIES]
    key = normalize_key(_as_text("key", obj.get("key"), 10 * KEY_MAX_CHARS, notes))
    related: list[str] = []
    for k in (normalize_key(r) for r in _as_list("related_keys", obj.get("related_keys"), 10 * KEY_MAX_CHARS, notes)):
        if k and k in known_keys and k not in related:
            related.append(k)
        elif k and k not in known_keys:
            notes.append(f"related_keys: {k!r} not in the dictionary, dropped")
    if len(related) > MAX_RELATED:
        notes.append(f"related_keys: {len(related)} items cut to {MAX_RELATED}")
        related = related[:MAX_RELATED]
    return Enrichment(title, summary, keywords, questions, entities, key, related), notes


def _usable(fields: Collection[str]) -> Callable[[dict[str, Any]], bool]:
    """A reply object is usable when at least one requested field is present and not null."""
    return lambda obj: any(obj.get(f) not in (None, "", [], {}) for f in fields)


# -- calls (the one retry loop: esrag.llm.json_reply) -----------------------------------------
def call_json(
    llm: CachedLLM, prompt_text: str, prompt_sha256: str, options: LLMOptions, task: str, usable: Callable[[dict[str, Any]], bool]
) -> dict[str, Any] | None:
    """One JSON call through :func:`esrag.llm.json_reply.ask_json` (seeds 0, 1–3; failures in
    the ledger): the first reply that parses to a JSON object ``usable`` accepts, or None."""
    return ask_json(llm, prompt_text, prompt_sha256, options, task, usable).value


def call_text(llm: CachedLLM, prompt_text: str, prompt_sha256: str, options: LLMOptions, task: str) -> str:
    """One plain-text call through :func:`esrag.llm.json_reply.ask`: the first non-empty
    reply, cut to ``CONTEXT_MAX_CHARS`` characters, or '' (the failure is in the ledger)."""
    return ask(llm, prompt_text, prompt_sha256, options, task, lambda t: t.strip()[:CONTEXT_MAX_CHARS] or None, "empty reply").value or ""


# -- E and E−K --------------------------------------------------------------------------------
def previous_summary(position: int, previous: Enrichment | None) -> str:
    """The previous-summary line: ``(first chunk)`` at position 1, ``(unavailable)`` when the
    previous call produced no summary."""
    if position == 1:
        return FIRST_CHUNK
    return previous.summary if previous is not None and previous.summary else UNAVAILABLE


def render_enrich_prompt(prompt: Prompt, chunk: Chunk, position: int, total: int, previous: str, dictionary: str) -> str:
    """The E prompt for one chunk (``dictionary`` already rendered, or ``(not provided)``)."""
    return prompt.render(
        section_path=chunk.section_path or NO_SECTION,
        position=position,
        total=total,
        previous_summary=previous,
        chunk_text=chunk.text,
        key_dictionary=dictionary,
    )


@dataclass
class DictionaryStats:
    """Key use in one document: keyed chunks, chunks that reused an existing key, evictions."""

    keyed: int = 0
    reused: int = 0
    evicted: int = 0


def enrich_chunks(
    chunks: list[Chunk],
    llm: CachedLLM,
    *,
    show_keys: bool = True,
    prompt: Prompt | None = None,
    options: LLMOptions | None = None,
    max_keys: int = MAX_KEYS,
    stats: DictionaryStats | None = None,
) -> list[Enrichment]:
    """Arm E (``show_keys=True``) or E−K (False) over one document's ``chunks`` in order.

    Returns:
        One :class:`Enrichment` per chunk (empty fields where the call failed), each with
        ``model`` and ``prompt_sha256`` set.
    """
    prompt = prompt or load_prompt(ENRICH)
    options = options or LLMOptions(max_tokens=1000)
    keys = KeyDictionary(max_keys)
    out: list[Enrichment] = []
    previous: Enrichment | None = None
    for i, chunk in enumerate(chunks, start=1):
        known = set(keys.entries)
        text = render_enrich_prompt(
            prompt, chunk, i, len(chunks), previous_summary(i, previous), keys.render() if show_keys else NOT_PROVIDED
        )
        obj = call_json(llm, text, prompt.sha256, options, "enrich", _usable(ENRICH_FIELDS))
        e = validate_enrichment(obj, known)[0] if obj is not None else Enrichment()
        e.model, e.prompt_sha256 = llm.spec, prompt.sha256
        if stats is not None and e.key:
            stats.keyed += 1
            stats.reused += e.key in keys
        keys.update(e.key, i)
        out.append(e)
        previous = e
    if stats is not None:
        stats.evicted += len(keys.evicted)
    return out


# -- CR ---------------------------------------------------------------------------------------
def contextualize_chunks(
    document: str, chunks: list[Chunk], llm: CachedLLM, *, prompt: Prompt | None = None, options: LLMOptions | None = None
) -> list[str]:
    """Arm CR: for each chunk, the whole ``document`` then the chunk -> a short situating
    context ('' where the call failed). Plain text, ≤ ``options.max_tokens`` (120) tokens."""
    prompt = prompt or load_prompt(CONTEXT)
    options = options or LLMOptions(max_tokens=120, json=False)
    return [call_text(llm, prompt.render(document=document, chunk_text=c.text), prompt.sha256, options, "context") for c in chunks]


# -- PF ---------------------------------------------------------------------------------------
def field_prompts() -> dict[str, Prompt]:
    """The shipped per-field prompts (title, summary, keywords, questions)."""
    return {f: load_prompt(name) for f, name in FIELDS.items()}


def combined_sha256(prompts: dict[str, Prompt]) -> str:
    """One hash for a set of prompts (recorded on PF chunks)."""
    from esrag.llm.cache import sha256

    return sha256("\n".join(f"{name}:{p.sha256}" for name, p in sorted(prompts.items())))


def per_field_chunks(
    chunks: list[Chunk], llm: CachedLLM, *, prompts: dict[str, Prompt] | None = None, options: LLMOptions | None = None
) -> list[Enrichment]:
    """Arm PF: four calls per chunk, one per indexed field, each with that field's instruction
    and E's context (section path, position, previous summary — from the previous chunk's
    summary call — and chunk text). Key fields stay empty. A failed field is counted
    (task ``field:NAME``) and left empty; the other fields are kept."""
    prompts = prompts or field_prompts()
    options = options or LLMOptions(max_tokens=1000)
    sha = combined_sha256(prompts)
    out: list[Enrichment] = []
    previous: Enrichment | None = None
    for i, chunk in enumerate(chunks, start=1):
        values = {
            "section_path": chunk.section_path or NO_SECTION,
            "position": i,
            "total": len(chunks),
            "previous_summary": previous_summary(i, previous),
            "chunk_text": chunk.text,
        }
        parts: dict[str, Any] = {}
        for name, prompt in prompts.items():
            obj = call_json(llm, prompt.render(**values), prompt.sha256, options, f"field:{name}", _usable((name,)))
            if obj is not None:
                parts[name] = obj.get(name)
        e = validate_enrichment(parts, ())[0]
        e.model, e.prompt_sha256 = llm.spec, sha
        out.append(e)
        previous = e
    return out


# -- applying a mode to documents --------------------------------------------------------------
def enrichment_fingerprint(chunk: Chunk) -> str:
    """JSON of everything the LLM put on ``chunk`` (fields, model, prompt hash, context)."""
    e = chunk.enrichment or Enrichment()
    return json.dumps(
        [e.title, e.summary, e.keywords, e.questions, e.entities, e.key, e.related_keys, e.model, e.prompt_sha256, chunk.context],
        ensure_ascii=False,
    )


@dataclass
class Enricher:
    """Applies one mode (``e``, ``e-k``, ``cr``, ``pf``) to whole documents.

    Args:
        llm: the provider behind the cache and ledger.
        mode: the arm.
        max_tokens: output limit of E/PF calls (model tokens; seed 000: 1,000).
        context_max_tokens: output limit of CR calls (120).
        num_ctx: Ollama context window (None: server default).
        json_mode: ask for JSON output (E, PF).
        max_keys: K_max of the key dictionary (40).
        concurrency: documents enriched at once (default: the provider's concurrency), one
            worker per document, so a document's calls run in order and back to back.
    """

    llm: CachedLLM
    mode: str = "e"
    max_tokens: int = 1000
    context_max_tokens: int = 120
    num_ctx: int | None = None
    json_mode: bool = True
    max_keys: int = MAX_KEYS
    concurrency: int | None = None
    prompts: dict[str, Prompt] = field(default_factory=dict)
    keys: DictionaryStats = field(default_factory=DictionaryStats)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.mode = check_mode(self.mode)
        self.concurrency = self.concurrency or self.llm.concurrency
        if not self.prompts:
            self.prompts = (
                {"context": load_prompt(CONTEXT)}
                if self.mode == "cr"
                else field_prompts()
                if self.mode == "pf"
                else {"enrich": load_prompt(ENRICH)}
            )

    @property
    def index_text(self) -> tuple[list[str], dict[str, float]]:
        """The seed arm's ``(embed_fields, bm25_fields)`` for this mode."""
        embed, bm25 = ARM_INDEX_TEXT[self.mode]
        return list(embed), dict(bm25)

    def enrich(self, doc: Document, chunks: list[Chunk]) -> None:
        """Enrich one document's freshly chunked ``chunks`` in place (``enrichment`` or
        ``context``) and extend each content hash with what was generated. Never raises for a
        failed call; failures are in the ledger."""
        if not chunks:
            return
        opts = LLMOptions(max_tokens=self.max_tokens, json=self.json_mode, num_ctx=self.num_ctx)
        if self.mode == "cr":
            ctx_opts = LLMOptions(max_tokens=self.context_max_tokens, json=False, num_ctx=self.num_ctx)
            contexts = contextualize_chunks(doc.text, chunks, self.llm, prompt=self.prompts["context"], options=ctx_opts)
            for c, ctx in zip(chunks, contexts):
                c.context = ctx
                c.enrichment = Enrichment(model=self.llm.spec, prompt_sha256=self.prompts["context"].sha256)
        elif self.mode == "pf":
            for c, e in zip(chunks, per_field_chunks(chunks, self.llm, prompts=self.prompts, options=opts)):
                c.enrichment = e
        else:
            stats = DictionaryStats()
            found = enrich_chunks(
                chunks,
                self.llm,
                show_keys=self.mode == "e",
                prompt=self.prompts["enrich"],
                options=opts,
                max_keys=self.max_keys,
                stats=stats,
            )
            for c, e in zip(chunks, found):
                c.enrichment = e
            self._add_key_stats(stats)
        for c in chunks:
            c.content_hash = content_hash(c.content_hash, enrichment_fingerprint(c))

    def enrich_many(self, items: list[tuple[Document, list[Chunk]]]) -> list[Exception | None]:
        """Enrich several documents at once (``concurrency`` workers, one per document).

        Returns:
            Per item, None or the exception its enrichment raised (a bug or a plugin's
            failure; LLM failures never raise), so one document never stops the others.
        """

        def one(item: tuple[Document, list[Chunk]]) -> Exception | None:
            try:
                self.enrich(*item)
            except Exception as exc:  # noqa: BLE001 - reported per document by the caller
                return exc
            return None

        if len(items) <= 1 or (self.concurrency or 1) <= 1:
            return [one(item) for item in items]
        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="esrag-enrich") as pool:
            return list(pool.map(one, items))

    def _add_key_stats(self, stats: DictionaryStats) -> None:
        with self._lock:
            self.keys.keyed += stats.keyed
            self.keys.reused += stats.reused
            self.keys.evicted += stats.evicted

    @property
    def gave_up(self) -> str | None:
        """Why the provider stopped being called (circuit breaker), if it did."""
        return self.llm.gave_up


def make_enricher(settings: Settings, mode: str, llm_spec: str | None = None, cache_path: Any = None) -> Enricher:
    """An :class:`Enricher` for ``mode`` from settings: the LLM ``llm_spec`` (default
    ``settings.llm``), the persistent cache (``cache_path``, ``settings.llm_cache``, or
    ``llm_cache.db`` beside the embedded store's file) and the generation limits.

    Raises:
        ConfigError: unknown mode. PluginError: unknown provider.
    """
    from pathlib import Path

    from esrag.llm.cache import LLMCache
    from esrag.llm.clients import make_llm

    mode = check_mode(mode)
    llm = make_llm(llm_spec or settings.llm, settings)
    path = Path(cache_path or settings.llm_cache_path)
    return Enricher(
        CachedLLM(llm, LLMCache(path)),
        mode,
        max_tokens=settings.llm_max_tokens,
        context_max_tokens=settings.llm_context_max_tokens,
        num_ctx=settings.llm_num_ctx,
        json_mode=settings.llm_json,
    )
