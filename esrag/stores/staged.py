"""A version's changes made visible at once (issue 39, "Fresh while serving").

An incremental ingest writes as it goes: a batch of chunks per embedding window, metadata moves
per file, deletions at the end. A search running meanwhile would see part of the new version.
:class:`StagedStore` keeps those writes in memory while the ingest runs (embedding is where the
time goes; reads go to the real store, whose data is unchanged meanwhile) and
:meth:`StagedStore.apply` replays them in their order, at once:

* on a :class:`~esrag.stores.base.Transactional` store (SQLite) inside one transaction on the
  writer connection: every other connection (another thread's, another process's ``esrag
  serve``) sees the old rows or the new ones, never part;
* on Elasticsearch, the same bulk requests back to back, then one refresh. The alias swap of
  ``esrag ingest --rebuild`` rebuilds a whole index (every corpus), far too much for a changed
  file; instead, within the serving process, :class:`SwapGate` keeps searches out while the
  replay runs. Another process searching the same index may see part of the replay for the
  moment it takes (a refresh in between, ``refresh_interval`` 1 s by default).

:class:`SwapGate` is a readers-writer gate: a search (or a page read) holds it shared for its
whole duration, so its BM25 leg, kNN leg and chunk reads all see one state; the replay holds it
alone (new readers wait while it waits, so a steady stream of searches cannot starve it).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

import numpy as np

from esrag.model import Chunk
from esrag.stores.base import IndexMeta, Store, Transactional, WriteReport


class SwapGate:
    """Shared readers, one exclusive writer, the writer first once it waits. Reading is
    re-entrant per thread (a search that reads a page inside does not wait on a waiting writer)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writing = False
        self._waiting = 0
        self._mine = threading.local()

    @contextmanager
    def reading(self) -> Iterator[None]:
        depth = self._mine.__dict__.get("depth", 0)
        if depth == 0:
            with self._cond:
                while self._writing or self._waiting:
                    self._cond.wait()
                self._readers += 1
        self._mine.depth = depth + 1
        try:
            yield
        finally:
            self._mine.depth = depth
            if depth == 0:
                with self._cond:
                    self._readers -= 1
                    self._cond.notify_all()

    @contextmanager
    def writing(self) -> Iterator[None]:
        with self._cond:
            self._waiting += 1
            try:
                while self._writing or self._readers:
                    self._cond.wait()
            finally:
                self._waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._cond:
                self._writing = False
                self._cond.notify_all()


class StagedStore:
    """``store`` with its writes held back: :meth:`write`, :meth:`update_meta` and
    :meth:`delete` are recorded (in memory: the chunks, and 1.5 KB of vector a chunk at 384 dims)
    and :meth:`apply` replays them; every other call (``meta``, ``manifest``, ``stats``,
    ``ensure``…) goes to ``store``. :meth:`refresh` waits for :meth:`apply`.

    What an ingest reads from the store is the state before it (its manifest, read once at the
    start), so holding its writes back changes nothing of what it computes.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self.ops: list[tuple[str, Any, Any, Any]] = []
        self.name = store.name

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def write(self, chunks: Sequence[Chunk], vectors: np.ndarray, meta_hashes: Sequence[str]) -> WriteReport:
        self.ops.append(("write", list(chunks), np.array(vectors, dtype=np.float32, copy=True), list(meta_hashes)))
        return WriteReport(written=len(chunks))

    def update_meta(self, chunks: Sequence[Chunk], meta_hashes: Sequence[str]) -> WriteReport:
        self.ops.append(("update_meta", list(chunks), list(meta_hashes), None))
        return WriteReport(written=len(chunks))

    def delete(self, ids: Sequence[str]) -> int:
        """Recorded; the count is ``len(ids)`` (the ingest deletes ids its manifest listed)."""
        self.ops.append(("delete", list(ids), None, None))
        return len(ids)

    def ensure(self, meta: IndexMeta) -> None:
        self.store.ensure(meta)

    def refresh(self) -> None:
        """Nothing yet: :meth:`apply` refreshes after the replay."""

    @property
    def pending(self) -> int:
        """How many write calls are held back."""
        return len(self.ops)

    def apply(self, gate: SwapGate | None = None) -> WriteReport:
        """Replay the recorded writes on the store in their order, in one transaction when the
        store is :class:`~esrag.stores.base.Transactional`, holding ``gate`` (when given) alone
        for the replay and the refresh; the record is then empty. Returns the chunks written and
        the ids a write refused (``failed``: Elasticsearch's per-document errors).

        Raises:
            StoreError: the store failed; on SQLite nothing of the replay is kept.
        """
        report = WriteReport()
        with gate.writing() if gate is not None else nullcontext():
            with self.store.transaction() if isinstance(self.store, Transactional) else nullcontext():
                for op, a, b, c in self.ops:
                    if op == "write":
                        done = self.store.write(a, b, c)
                        report.written += done.written
                        report.failed.update(done.failed)
                    elif op == "update_meta":
                        self.store.update_meta(a, b)
                    else:
                        self.store.delete(a)
            self.ops = []
            self.store.refresh()
        return report
