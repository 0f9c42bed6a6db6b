"""The persistent LLM cache and the cost ledger.

Everything an LLM produced is cached by (provider, model, prompt hash, rendered input hash,
options including the seed) and never recomputed for unchanged input (DESIGN.md): re-ingesting
an unchanged chunk costs no call, while a changed prompt file, model or option misses the cache
and is recomputed. Only replies that arrived are cached — a timeout or HTTP error is not, so the
next run retries it; a malformed reply *is* cached (at temperature 0 and a fixed seed the same
request gives the same reply), and retries with other seeds are separate entries.

The ledger records every call (tokens in/out as the server counted them, wall seconds) and
every cache hit and failure; :meth:`Ledger.totals` aggregates them for the ingest summary.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from esrag.errors import EsragError
from esrag.llm.clients import LLM, LLMError, LLMOptions, LLMReply, Message

_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_cache (
    key TEXT PRIMARY KEY,
    provider TEXT NOT NULL, model TEXT NOT NULL, prompt_sha256 TEXT NOT NULL, input_sha256 TEXT NOT NULL,
    options TEXT NOT NULL, text TEXT NOT NULL, tokens_in INTEGER, tokens_out INTEGER, seconds REAL,
    created_at TEXT NOT NULL
);
"""


def sha256(text: str) -> str:
    """SHA-256 hex digest of ``text`` (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cache_key(provider: str, model: str, prompt_sha256: str, input_sha256: str, options: LLMOptions) -> str:
    """The cache key: SHA-256 over provider, model, prompt hash, input hash and options (JSON)."""
    opts = json.dumps(options.to_dict(), sort_keys=True)
    return sha256("\x1f".join((provider, model, prompt_sha256, input_sha256, opts)))


class LLMCache:
    """A SQLite file of LLM replies (default ``.esrag/llm_cache.db`` beside the store, or
    ``ESRAG_LLM_CACHE``). Thread-safe; one connection guarded by a lock. The file (and its
    folder) is created at the first :meth:`put`, never before: a command that asks the LLM
    nothing — ``esrag ask`` on a missing index — leaves no file behind.

    Raises:
        EsragError: the file cannot be opened or created (names it and the setting).
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if self.path.exists():
            self._open()

    def _open(self) -> sqlite3.Connection:
        """The connection, made once (the caller holds the lock, or is the constructor)."""
        if self._db is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(str(self.path), check_same_thread=False)
                db.execute("PRAGMA journal_mode=WAL")
                db.executescript(_SCHEMA)
            except (OSError, sqlite3.Error) as exc:
                raise EsragError(f"cannot open the LLM cache at {self.path}: {exc}; set ESRAG_LLM_CACHE to a writable file") from exc
            self._db = db
        return self._db

    def _reader(self) -> sqlite3.Connection | None:
        """The connection when the file exists (another process may have made it since), else None."""
        if self._db is None and self.path.exists():
            self._open()
        return self._db

    def get(self, key: str) -> LLMReply | None:
        """The cached reply for ``key`` (``cached=True``), or None."""
        with self._lock:
            db = self._reader()
            row = (
                db.execute("SELECT text, tokens_in, tokens_out, seconds, model FROM llm_cache WHERE key=?", (key,)).fetchone()
                if db is not None
                else None
            )
        if row is None:
            return None
        return LLMReply(text=row[0], tokens_in=row[1] or 0, tokens_out=row[2] or 0, seconds=row[3] or 0.0, model=row[4], cached=True)

    def put(self, key: str, provider: str, model: str, prompt_sha256: str, input_sha256: str, options: LLMOptions, reply: LLMReply) -> None:
        """Store ``reply`` under ``key`` (replacing an older entry); creates the file when needed."""
        row = (
            key,
            provider,
            model,
            prompt_sha256,
            input_sha256,
            json.dumps(options.to_dict(), sort_keys=True),
            reply.text,
            reply.tokens_in,
            reply.tokens_out,
            reply.seconds,
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )
        with self._lock:
            db = self._open()
            with db:
                db.execute("INSERT OR REPLACE INTO llm_cache VALUES (?,?,?,?,?,?,?,?,?,?,?)", row)

    def __len__(self) -> int:
        with self._lock:
            db = self._reader()
            return int(db.execute("SELECT count(*) FROM llm_cache").fetchone()[0]) if db is not None else 0

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()


@dataclass(slots=True)
class CallRecord:
    """One ledger line: a call made (``cached`` False), a cache hit, or an error.

    ``tokens_in``/``tokens_out`` are the server's counts (model tokens; cl100k estimates when
    ``estimated``), 0 for cache hits and errors; ``seconds`` is wall time of the HTTP call.
    """

    task: str
    spec: str
    seed: int
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    cached: bool = False
    error: str | None = None
    estimated: bool = False


@dataclass
class LedgerTotals:
    """Aggregated ledger: calls made, cache hits, failed tasks (chunks or fields left empty
    after retries), transport errors, retries with seeds 1–3, tokens and seconds of the calls
    made, and the same per task (``enrich``, ``context``, ``field:title``…)."""

    llm_calls: int = 0
    llm_cache_hits: int = 0
    llm_failures: int = 0
    llm_errors: int = 0
    llm_retries: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    llm_seconds: float = 0.0
    by_task: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["llm_seconds"] = round(self.llm_seconds, 3)
        return out

    def minus(self, before: LedgerTotals) -> LedgerTotals:
        """The totals accrued since ``before`` (per-task rows are not differenced)."""
        return LedgerTotals(
            self.llm_calls - before.llm_calls,
            self.llm_cache_hits - before.llm_cache_hits,
            self.llm_failures - before.llm_failures,
            self.llm_errors - before.llm_errors,
            self.llm_retries - before.llm_retries,
            self.tokens_in - before.tokens_in,
            self.tokens_out - before.tokens_out,
            self.llm_seconds - before.llm_seconds,
            dict(self.by_task),
        )


class Ledger:
    """Thread-safe record of every LLM call, cache hit, retry and failure."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.records: list[CallRecord] = []
        self.failures: list[tuple[str, str]] = []
        self.retries = 0

    def add(self, record: CallRecord) -> None:
        with self._lock:
            self.records.append(record)

    def fail(self, task: str, reason: str) -> None:
        """Count a task (one chunk, or one field of a chunk) that kept empty output."""
        with self._lock:
            self.failures.append((task, reason))

    def retried(self) -> None:
        """Count one retry with another seed after a parse failure."""
        with self._lock:
            self.retries += 1

    def totals(self) -> LedgerTotals:
        """Aggregate everything recorded so far."""
        with self._lock:
            records, failures, retries = list(self.records), list(self.failures), self.retries
        t = LedgerTotals(llm_failures=len(failures), llm_retries=retries)
        per: dict[str, dict[str, float]] = defaultdict(
            lambda: {"calls": 0, "cache_hits": 0, "errors": 0, "tokens_in": 0, "tokens_out": 0, "seconds": 0.0, "failures": 0}
        )
        for r in records:
            row = per[r.task]
            if r.error is not None:
                t.llm_errors += 1
                row["errors"] += 1
            elif r.cached:
                t.llm_cache_hits += 1
                row["cache_hits"] += 1
            else:
                t.llm_calls += 1
                t.tokens_in += r.tokens_in
                t.tokens_out += r.tokens_out
                t.llm_seconds += r.seconds
                row["calls"] += 1
                row["tokens_in"] += r.tokens_in
                row["tokens_out"] += r.tokens_out
                row["seconds"] += r.seconds
        for task, _ in failures:
            per[task]["failures"] += 1
        for row in per.values():
            row["seconds"] = round(row["seconds"], 3)
            row["tokens_in_per_call"] = round(row["tokens_in"] / row["calls"], 1) if row["calls"] else 0.0
        t.by_task = dict(per)
        return t


class CachedLLM:
    """An :class:`~esrag.llm.clients.LLM` behind the persistent cache and the ledger.

    Args:
        llm: the provider.
        cache: the persistent cache (None: no caching).
        ledger: where calls are recorded (a new one if None).
        max_consecutive_errors: after this many transport errors in a row (or one fatal error:
            unknown model, bad key), further calls fail at once without contacting the server,
            so a dead server does not cost a timeout per chunk; ``gave_up`` then holds the reason.
    """

    def __init__(self, llm: LLM, cache: LLMCache | None = None, ledger: Ledger | None = None, max_consecutive_errors: int = 5) -> None:
        self.llm = llm
        self.cache = cache
        self.ledger = ledger or Ledger()
        self.max_consecutive_errors = max_consecutive_errors
        self.gave_up: str | None = None
        self._consecutive = 0
        self._lock = threading.Lock()

    @property
    def spec(self) -> str:
        return self.llm.spec

    @property
    def concurrency(self) -> int:
        return self.llm.concurrency

    def chat(self, messages: list[Message], options: LLMOptions, prompt_sha256: str, task: str) -> LLMReply:
        """One chat call through the cache: a hit returns the stored reply (no call); a miss
        calls the server, stores the reply and records its tokens and seconds.

        Args:
            messages: the rendered messages (their JSON is the input hash).
            options: generation options (part of the key: another seed is another entry).
            prompt_sha256: hash of the prompt template(s) that produced ``messages``.
            task: ledger label (``enrich``, ``context``, ``field:title``, ``consolidate``).

        Raises:
            LLMError: the call failed, or the circuit breaker is open (see ``gave_up``).
        """
        input_sha = sha256(json.dumps(messages, ensure_ascii=False, sort_keys=True))
        key = cache_key(self.llm.provider, self.llm.model, prompt_sha256, input_sha, options)
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            self.ledger.add(CallRecord(task, self.spec, options.seed, cached=True))
            return hit
        if self.gave_up:
            self.ledger.add(CallRecord(task, self.spec, options.seed, error="not called: " + self.gave_up))
            raise LLMError(f"not calling {self.spec} any more: {self.gave_up}")
        try:
            reply = self.llm.chat(messages, options)
        except LLMError as exc:
            self.ledger.add(CallRecord(task, self.spec, options.seed, error=str(exc)))
            self._count_error(exc)
            raise
        with self._lock:
            self._consecutive = 0
        if self.cache is not None:
            self.cache.put(key, self.llm.provider, self.llm.model, prompt_sha256, input_sha, options, reply)
        self.ledger.add(
            CallRecord(task, self.spec, options.seed, reply.tokens_in, reply.tokens_out, reply.seconds, estimated=reply.estimated)
        )
        return reply

    def _count_error(self, exc: LLMError) -> None:
        with self._lock:
            self._consecutive += 1
            if exc.fatal or self._consecutive >= self.max_consecutive_errors:
                why = "fatal error" if exc.fatal else f"{self._consecutive} errors in a row"
                self.gave_up = self.gave_up or f"{why}; last: {exc}"
