"""Syncs while serving (issue 39, "Fresh while serving"; docs/hub.md "Keep it fresh while serving").

:class:`SyncRunner` is one background thread of ``esrag serve`` / ``esrag mcp --http`` that runs
:func:`esrag.gitsync.sync` for one source at a time: every source every ``[serve] sync_interval``
seconds (``--sync-interval``; the first round at start), and a source asked for by
``POST /sync/NAME`` (:meth:`SyncRunner.request`). Requests coalesce: a source already queued is
not queued twice, and one asked for while it syncs is queued once more (the push that sent the
webhook may have come after that sync fetched), never run twice at once.

Each sync writes through its own store connection (the server's is read-only) and swaps each
version in at once, holding the service's :class:`~esrag.stores.staged.SwapGate` alone
(:func:`esrag.gitsync.sync_source`): searches keep answering from the indexed data meanwhile.
Outcomes are logged by source and version (``esrag.serve``); the messages are those of
``esrag sync``, scrubbed of tokens and URL credentials.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from esrag.config import Settings
from esrag.errors import EsragError
from esrag.stores.staged import SwapGate

log = logging.getLogger("esrag.serve")


def never_run(state: str = "idle") -> dict[str, Any]:
    """A source's sync state in this process before any run (:meth:`SyncRunner.state`'s shape):
    ``{"state", "started_at": 0.0, "finished_at": 0.0, "error": ""}``; also what ``GET /sync``
    shows for every source of a server that does not sync."""
    return {"state": state, "started_at": 0.0, "finished_at": 0.0, "error": ""}


class SyncRunner:
    """The sync thread of a server over ``settings`` (its ``[sources]``).

    Args:
        settings: all settings (``[sources.NAME]``, the store). gate: the service's swap gate.
        interval: seconds between rounds over every source; 0 = only on request.
    """

    def __init__(self, settings: Settings, gate: SwapGate | None = None, interval: float = 0.0) -> None:
        self.settings = settings
        self.gate = gate
        self.interval = interval
        self._cond = threading.Condition()
        self._queue: list[str] = []
        self._running: str | None = None
        self._stop = False
        self._next_round = time.monotonic()  # the first round at start
        self._last: dict[str, dict[str, Any]] = {}
        self._thread: threading.Thread | None = None

    @property
    def sources(self) -> list[str]:
        """The configured source names, sorted."""
        return sorted(self.settings.sources)

    def start(self) -> SyncRunner:
        """Start the thread (once); returns self."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="esrag-sync", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Ask the thread to stop after the sync in hand and wait at most ``timeout`` seconds for it."""
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    def request(self, name: str) -> dict[str, Any]:
        """Queue a sync of source ``name`` (a configured one: the caller checked); the answer of
        ``POST /sync/NAME``: ``{"source", "state": "queued" | "running", "coalesced": bool}``
        (``coalesced``: it joined a sync already queued, or was queued once more after the
        running one)."""
        with self._cond:
            coalesced = name in self._queue
            if not coalesced:
                self._queue.append(name)
                coalesced = self._running == name
            self._cond.notify_all()
            return {"source": name, "state": "running" if self._running == name else "queued", "coalesced": coalesced}

    def state(self, name: str) -> dict[str, Any]:
        """``{"state": "running" | "queued" | "idle", "started_at", "finished_at" (Unix seconds of the
        last run in this process; 0 = none), "error" (its one-line error, '' = none)}``."""
        with self._cond:
            now = "running" if self._running == name else "queued" if name in self._queue else "idle"
            return never_run(now) | self._last.get(name, {})

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing runs or is queued (at most ``timeout`` seconds); whether it is so."""
        end = time.monotonic() + timeout
        with self._cond:
            while self._queue or self._running:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.2))
            return True

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._stop and not self._queue:
                    if self.interval > 0 and time.monotonic() >= self._next_round:
                        self._queue.extend(n for n in self.sources if n not in self._queue)
                        self._next_round = time.monotonic() + self.interval
                        continue
                    wait = self._next_round - time.monotonic() if self.interval > 0 else None
                    self._cond.wait(wait)
                if self._stop:
                    return
                name = self._queue.pop(0)
                self._running = name
            started = time.time()
            error = self._sync(name)
            with self._cond:
                self._running = None
                self._last[name] = {"started_at": started, "finished_at": time.time(), "error": error}
                self._cond.notify_all()

    def _sync(self, name: str) -> str:
        """One :func:`esrag.gitsync.sync` of ``name`` on its own writable store; its first error
        ('' when none), every outcome logged."""
        from esrag import gitsync
        from esrag.app import open_store

        try:
            with open_store(self.settings) as store:
                reports = gitsync.sync(self.settings, store, [name], gate=self.gate)
        except EsragError as exc:
            log.warning("sync %s: %s", name, exc)
            return str(exc)
        except Exception:  # the thread keeps serving the other sources
            log.exception("sync %s: unexpected error", name)
            return "unexpected error; see the server log"
        errors = []
        for report in reports:
            if report.error:
                errors.append(report.error)
                log.warning("sync %s: %s", name, report.error)
            for line in report.ref_warnings:
                log.warning("sync %s: %s", name, line)
            for version, row in report.versions.items():
                if row["error"]:
                    errors.append(row["error"])
                    log.warning("sync %s %s: %s: %s", name, version, row["outcome"], row["error"])
                else:
                    log.info("sync %s %s: %s at %s", name, version, row["outcome"], row["commit"][:12])
            for version in report.removed:
                log.info("sync %s %s: removed", name, version)
        return errors[0] if errors else ""
