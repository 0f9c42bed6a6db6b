"""The embedded store's connections: one writer shared under a lock, one reader per thread.

``esrag serve`` answers requests on a thread pool. Before issue 39 every statement of every
thread went through one ``sqlite3`` connection under one lock; under 8 concurrent clients the
searching threads spent ~85 % of their samples waiting for that lock (a sampling profile of the
server on the Laravel docs: 14,344 of 16,274 samples inside the store's ``execute`` were on the
``with lock`` line). SQLite in WAL mode lets any number of readers run beside one writer, and
``sqlite3`` releases the GIL while a statement steps, so reads now run on a connection of their
own per thread (:meth:`Connections.read`), without a shared lock, and only writes share the
locked writer (:meth:`Connections.execute`, ``with connections:`` for a transaction).

Visibility: a reader's statement runs outside any transaction, so it sees every transaction
committed before it started and nothing of one still open (a sync writing a version from
another thread is seen whole, once committed). A thread inside its own write transaction reads
through the writer, so it sees its own uncommitted rows as before.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any


class Rows:
    """A statement's rows, read in full before its connection was handed on."""

    def __init__(self, rows: list[tuple], rowcount: int) -> None:
        self._rows, self.rowcount = rows, rowcount

    def __iter__(self) -> Iterator[tuple]:
        return iter(self._rows)

    def fetchone(self) -> tuple | None:
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[tuple]:
        return list(self._rows)


class _ThreadState(threading.local):
    """Per thread: its open ``with`` blocks on the writer, and its reader once opened."""

    depth = 0
    reader: sqlite3.Connection | None = None


class Connections:
    """The writer (one ``sqlite3`` connection under a re-entrant lock) and lazily opened
    per-thread readers of the same file.

    Writer: every statement runs, and its rows are read in full, under the lock, and ``with
    connections:`` holds it for the whole transaction (``sqlite3`` with
    ``check_same_thread=False`` leaves this to the caller: cursors interleaved across threads, or
    a statement inside another thread's open transaction, would mix their results). One writer
    keeps one WAL and one transaction at a time.

    Readers: :meth:`read` runs a statement on the calling thread's own connection (opened on
    first use with ``PRAGMA query_only``, so it can never write), no lock shared with other
    threads. Connections of threads that have ended are closed when the next reader is opened;
    :meth:`close` closes them all.

    Args:
        db: the writer, already open on ``path``.
        path: the SQLite file the readers open (it exists: the writer opened it).
    """

    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self._db = db
        self._path = str(path)
        self._lock = threading.RLock()
        self._local = _ThreadState()
        self._readers: dict[int, tuple[threading.Thread, sqlite3.Connection]] = {}
        self._readers_lock = threading.Lock()
        self._closed = False
        self._version_lock = threading.Lock()
        self._version_conn: sqlite3.Connection | None = None

    # -- writer ------------------------------------------------------------------------------
    def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        """One statement on the writer (writes, DDL, and reads that must see this thread's
        open transaction)."""
        with self._lock:
            cur = self._db.execute(sql, params)
            return Rows(cur.fetchall(), cur.rowcount)

    def executemany(self, sql: str, rows: Any) -> Rows:
        with self._lock:
            cur = self._db.executemany(sql, rows)
            return Rows(cur.fetchall(), cur.rowcount)

    def executescript(self, script: str) -> None:
        with self._lock:
            self._db.executescript(script)

    def __enter__(self) -> Connections:
        self._lock.acquire()
        try:
            self._db.__enter__()
        except BaseException:
            self._lock.release()
            raise
        self._local.depth += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        self._local.depth -= 1
        try:
            self._db.__exit__(*exc)
        finally:
            self._lock.release()

    # -- readers -----------------------------------------------------------------------------
    def read(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        """One read-only statement: on this thread's reader, or on the writer while this thread
        is inside a ``with connections:`` transaction (it must see its own rows).

        Raises:
            sqlite3.Error: as ``sqlite3`` does (e.g. ``attempt to write a readonly database``
                for a statement that writes).
        """
        if self._local.depth:
            return self.execute(sql, params)
        cur = self._reader().execute(sql, params)
        return Rows(cur.fetchall(), cur.rowcount)

    def in_transaction(self) -> bool:
        """Whether the calling thread is inside a ``with connections:`` transaction (its reads
        then run on the writer, see :meth:`read`)."""
        return bool(self._local.depth)

    def data_version(self) -> int:
        """``PRAGMA data_version`` of a connection that never writes: it changes whenever any
        connection (this process's writer included, another process's ingest too) commits, so a
        cache keyed on it is stale exactly when this value moved (sqlite.org/pragma.html#pragma_data_version).
        Its own small lock, never the writer's: a long write transaction does not hold it up."""
        with self._version_lock:
            if self._version_conn is None:
                self._version_conn = self._connect()
            row = self._version_conn.execute("PRAGMA data_version").fetchone()
            return int(row[0]) if row else -1

    def _connect(self) -> sqlite3.Connection:
        if self._closed:
            raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
        conn = sqlite3.connect(self._path, check_same_thread=False)  # closed from another thread by close()
        conn.execute("PRAGMA query_only=ON")
        return conn

    def _reader(self) -> sqlite3.Connection:
        conn = self._local.reader
        if conn is not None:
            return conn
        me = threading.current_thread()
        with self._readers_lock:
            conn = self._connect()
            for ident, (thread, old) in list(self._readers.items()):
                if not thread.is_alive():  # its thread ended: nobody can use it any more
                    old.close()
                    del self._readers[ident]
            self._readers[id(me)] = (me, conn)
        self._local.reader = conn
        return conn

    def readers(self) -> int:
        """How many reader connections are open (for tests and the benchmark)."""
        with self._readers_lock:
            return len(self._readers)

    def close(self) -> None:
        """Close the writer and every reader; reads and writes afterwards raise ``sqlite3.ProgrammingError``."""
        with self._lock, self._readers_lock, self._version_lock:
            self._closed = True
            for _, conn in self._readers.values():
                conn.close()
            self._readers.clear()
            if self._version_conn is not None:
                self._version_conn.close()
            self._db.close()
