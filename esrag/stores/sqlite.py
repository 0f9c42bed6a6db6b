"""The embedded default store: one SQLite file with FTS5 for BM25 and exact cosine kNN.

Why exact cosine over a numpy matrix rather than sqlite-vec: the stdlib ``sqlite3`` of many
Pythons (including this project's CI machines) is built without ``enable_load_extension``, so
sqlite-vec cannot be loaded without swapping in ``apsw``/``pysqlite3``. At documentation scale
an exact scan is fast (100k x 384 float32 = 150 MB, one matrix product) and has perfect recall,
and filters are applied before the scan, so a filtered kNN always returns k hits when k exist.

BM25 is SQLite FTS5's ``bm25()`` with per-column weights; text analysis follows the index's
analyzer (:mod:`esrag.analysis`: ``porter unicode61`` and English stop words dropped from queries
for ``english``, plain ``unicode61`` for ``standard``), fixed when the index is created. Writes are transactions: a crash leaves
either the old or the new rows, never half a batch.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from esrag.analysis import query_terms, sqlite_tokenizer
from esrag.errors import EmbedderMismatch, NotIndexedError, StoreError
from esrag.model import Chunk
from esrag.stores.base import TEXT_FIELDS, Filters, IndexMeta, PageRef, StoredEntry, WriteReport, check_compatible
from esrag.stores.records import LIST_FIELDS, chunk_from_record, chunk_record
from esrag.stores.sqlite_conn import Connections
from esrag.stores.sqlite_filters import filter_sql
from esrag.stores.sqlite_matrix import ChunkMatrix

if TYPE_CHECKING:
    from esrag.config import Settings

_SCALAR_COLUMNS = (
    "corpus",
    "source_path",
    "section_path",
    "doc_title",
    "text",
    "start_line",
    "end_line",
    "position",
    "n_chunks",
    "tokens",
    "content_hash",
    "meta_hash",
    "parent_id",
    "context",
    "language",
    "authority",
    "effective_date",
    "superseded_by",
    "translation",
    "title",
    "summary",
    "keywords",
    "questions",
    "entities",
    "key",
    "related_keys",
    "enrich_model",
    "prompt_sha256",
    "metadata",
    "indexed_at",
    "anchor",
    "url",
    "doc_version",
    "alt_urls",
)
#: columns added after the first release: an older database gets them on open (ALTER TABLE).
_ADDED_COLUMNS = ("anchor", "url", "doc_version", "alt_urls", "translation")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    corpus TEXT NOT NULL, source_path TEXT NOT NULL, section_path TEXT NOT NULL DEFAULT '',
    doc_title TEXT NOT NULL DEFAULT '', text TEXT NOT NULL,
    start_line INTEGER, end_line INTEGER, position INTEGER, n_chunks INTEGER, tokens INTEGER,
    content_hash TEXT, meta_hash TEXT, parent_id TEXT, context TEXT NOT NULL DEFAULT '',
    language TEXT, authority TEXT, effective_date TEXT, superseded_by TEXT,
    title TEXT NOT NULL DEFAULT '', summary TEXT NOT NULL DEFAULT '', keywords TEXT NOT NULL DEFAULT '',
    questions TEXT NOT NULL DEFAULT '', entities TEXT NOT NULL DEFAULT '', key TEXT NOT NULL DEFAULT '',
    related_keys TEXT NOT NULL DEFAULT '', enrich_model TEXT, prompt_sha256 TEXT,
    metadata TEXT NOT NULL DEFAULT '{{}}', indexed_at TEXT,
    vector BLOB NOT NULL,
    anchor TEXT NOT NULL DEFAULT '', url TEXT NOT NULL DEFAULT '', doc_version TEXT NOT NULL DEFAULT '',
    alt_urls TEXT NOT NULL DEFAULT '', translation TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS chunks_source ON chunks (corpus, source_path, position);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    {fts_columns}, content='chunks', content_rowid='rowid', tokenize='{tokenizer}'
);
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, {fts_columns}) VALUES (new.rowid, {new_columns});
END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, {fts_columns}) VALUES ('delete', old.rowid, {old_columns});
END;
CREATE TRIGGER IF NOT EXISTS chunks_au AFTER UPDATE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, {fts_columns}) VALUES ('delete', old.rowid, {old_columns});
    INSERT INTO chunks_fts(rowid, {fts_columns}) VALUES (new.rowid, {new_columns});
END;
"""


class SQLiteStore:
    """The embedded store (``sqlite``). One file; created on first :meth:`ensure`.

    Args:
        path: the SQLite file (parent folders are created, unless ``read_only``).
        read_only: for commands that only read (``search``, ``status``, ``serve``…): a missing
            file or folder is never created; until the file exists (an ingest elsewhere may
            create it later: it is opened then) the store reads as empty (:meth:`meta` None)
            and searches raise :class:`~esrag.errors.NotIndexedError` naming the path and
            ``esrag ingest``. An existing file is opened as usual (an older schema gets its
            added columns, :data:`_ADDED_COLUMNS`).

    Raises:
        StoreError: the file cannot be opened or is not an esrag database.
    """

    name = "sqlite"

    def __init__(self, path: Path | str, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._analyzer: str | None = None
        self._conn: Connections | None = None
        self._open_lock = threading.Lock()
        self._matrix: ChunkMatrix | None = None
        self._matrix_version = -1  # PRAGMA data_version when the matrix was read
        self._batch_thread: int | None = None  # the thread inside transaction()
        self._matrix_lock = threading.Lock()
        self._translations: tuple[int, bool] | None = None  # (data_version, any chunk translated)
        if not read_only or self.path.exists():
            self._open()

    def _open(self) -> Connections:
        """Connect (once): folders made unless read-only, WAL journal, older schemas upgraded."""
        with self._open_lock:
            if self._conn is not None:
                return self._conn
            try:
                if not self.read_only:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = Connections(sqlite3.connect(str(self.path), check_same_thread=False), self.path)
                if not self.read_only:
                    conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
            except (OSError, sqlite3.Error) as exc:
                raise StoreError(f"cannot open the embedded store at {self.path}: {exc}; set ESRAG_DB to a writable path") from exc
            self._conn = conn
        self._migrate()
        return conn

    @property
    def _db(self) -> Connections:
        """The connection; a read-only store whose file is still missing raises NotIndexedError."""
        conn = self._conn
        if conn is not None:
            return conn
        if self.read_only and not self.path.exists():
            raise NotIndexedError(self.missing())
        return self._open()

    def missing(self) -> str:
        """What to say when nothing is indexed here: the path looked at and the way to create it."""
        return f"nothing is indexed in {self.path.absolute()} (ESRAG_DB) yet; `esrag ingest PATH` creates it"

    def _migrate(self) -> None:
        """Add the columns of :data:`_ADDED_COLUMNS` to a database created before them."""
        try:
            if not self._has_schema():
                return
            have = {row[1] for row in self._db.read("PRAGMA table_info(chunks)")}
            with self._db:
                for name in _ADDED_COLUMNS:
                    if name not in have:
                        self._db.execute(f"ALTER TABLE chunks ADD COLUMN {name} TEXT NOT NULL DEFAULT ''")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot upgrade the embedded store at {self.path}: {exc}; set ESRAG_DB to a writable path") from exc

    @classmethod
    def from_settings(cls, settings: Settings, read_only: bool = False) -> SQLiteStore:
        """The store at ``settings.db_path`` (``ESRAG_DB`` or ``.esrag/esrag.db``); ``read_only``
        as in the class."""
        return cls(settings.db_path, read_only=read_only)

    # -- lifecycle -------------------------------------------------------------------------
    def _has_schema(self) -> bool:
        if self._conn is None and self.read_only and not self.path.exists():
            return False
        row = self._db.read("SELECT name FROM sqlite_master WHERE type='table' AND name='chunks'").fetchone()
        return row is not None

    def meta(self) -> IndexMeta | None:
        """See :class:`esrag.stores.base.Store`."""
        if not self._has_schema():
            return None
        row = self._db.read("SELECT value FROM meta WHERE key='index_meta'").fetchone()
        return IndexMeta.from_dict(json.loads(row[0])) if row else None

    def ensure(self, meta: IndexMeta) -> None:
        """See :class:`esrag.stores.base.Store`."""
        current = self.meta()
        if current is not None:
            check_compatible(current, meta, str(self.path))
            return
        cols = ", ".join(TEXT_FIELDS)
        script = _SCHEMA.format(
            fts_columns=cols,
            tokenizer=sqlite_tokenizer(meta.analyzer),
            new_columns=", ".join(f"new.{c}" for c in TEXT_FIELDS),
            old_columns=", ".join(f"old.{c}" for c in TEXT_FIELDS),
        )
        if not meta.created_at:
            meta.created_at = datetime.now(UTC).isoformat(timespec="seconds")
        with self._writing("create its tables"):
            self._db.executescript(script)
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('index_meta', ?)", (json.dumps(meta.to_dict()),))
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('tokenizer', ?)", (sqlite_tokenizer(meta.analyzer),))

    def close(self) -> None:
        """See :class:`esrag.stores.base.Store`."""
        if self._conn is not None:
            self._conn.close()

    # -- writes ----------------------------------------------------------------------------
    def write(self, chunks: Sequence[Chunk], vectors: np.ndarray, meta_hashes: Sequence[str]) -> WriteReport:
        """See :class:`esrag.stores.base.Store`. One transaction for the whole batch."""
        self._require_schema()
        meta = self.meta()
        vectors = np.asarray(vectors, dtype=np.float32)
        if len(chunks) != len(vectors) or len(chunks) != len(meta_hashes):
            raise ValueError(f"{len(chunks)} chunks, {len(vectors)} vectors, {len(meta_hashes)} meta hashes")
        if meta and len(vectors) and vectors.shape[1] != meta.dims:
            raise EmbedderMismatch(f"vectors have {vectors.shape[1]} dims; the index at {self.path} holds {meta.dims}")
        now = _now()
        rows = [(*_row(c, h, now), v.tobytes(), c.id) for c, h, v in zip(chunks, meta_hashes, vectors)]
        placeholders = ", ".join("?" * (len(_SCALAR_COLUMNS) + 2))
        updates = ", ".join(f"{c}=excluded.{c}" for c in (*_SCALAR_COLUMNS, "vector"))
        with self._writing(f"write {len(rows)} chunks"):
            self._db.executemany(
                f"INSERT INTO chunks ({', '.join(_SCALAR_COLUMNS)}, vector, id) VALUES ({placeholders}) "
                f"ON CONFLICT(id) DO UPDATE SET {updates}",
                rows,
            )
        self._matrix = None
        return WriteReport(written=len(rows))

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """The writes (:meth:`write`, :meth:`update_meta`, :meth:`delete`) this thread makes inside
        the block commit together when it ends, or not at all on an error: other connections see
        the old rows or the new ones, never part (:class:`esrag.stores.base.Transactional`)."""
        with self._writing("write a version's changes in one transaction"):
            self._batch_thread = threading.get_ident()
            try:
                yield
            finally:
                self._batch_thread = None

    def update_meta(self, chunks: Sequence[Chunk], meta_hashes: Sequence[str]) -> WriteReport:
        """See :class:`esrag.stores.base.Store`."""
        self._require_schema()
        now = _now()
        sets = ", ".join(f"{c}=?" for c in _SCALAR_COLUMNS)
        with self._writing(f"update the metadata of {len(chunks)} chunks"):
            cur = self._db.executemany(
                f"UPDATE chunks SET {sets} WHERE id=?", [(*_row(c, h, now), c.id) for c, h in zip(chunks, meta_hashes)]
            )
        self._matrix = None
        return WriteReport(written=cur.rowcount if cur.rowcount >= 0 else len(chunks))

    def delete(self, ids: Sequence[str]) -> int:
        """See :class:`esrag.stores.base.Store`."""
        if not ids or not self._has_schema():
            return 0
        with self._writing(f"delete {len(ids)} chunks"):
            cur = self._db.executemany("DELETE FROM chunks WHERE id=?", [(i,) for i in ids])
        self._matrix = None
        return cur.rowcount

    def remove_corpus(self, corpus: str, doc_version: str | None = None) -> int:
        """Delete every chunk of ``corpus`` (only those of ``doc_version`` when given; ``""`` =
        the unversioned ones) in one transaction. Returns the number of chunks deleted (0 when
        the store holds none). Other corpora are untouched."""
        if not self._has_schema():
            return 0
        sql, params = "DELETE FROM chunks WHERE corpus=?", [corpus]
        if doc_version is not None:
            sql, params = sql + " AND doc_version=?", [corpus, doc_version]
        with self._writing(f"remove corpus {corpus!r}"):
            cur = self._db.execute(sql, params)
        self._matrix = None
        return cur.rowcount

    def drop(self) -> dict[str, Any]:
        """Drop everything esrag made in the file (tables ``chunks``, ``chunks_fts``, ``meta``
        and the FTS triggers); the next :meth:`ensure` starts afresh. The file itself stays.
        Returns ``{"store", "path", "chunks", "corpora", "tables"}``: chunks and corpora dropped
        and the tables removed."""
        stats = self.stats()
        tables = [
            r[0] for r in self._db.read("SELECT name FROM sqlite_master WHERE type='table' AND name IN ('chunks', 'chunks_fts', 'meta')")
        ]
        with self._db:
            for trigger in ("chunks_ai", "chunks_ad", "chunks_au"):
                self._db.execute(f"DROP TRIGGER IF EXISTS {trigger}")
            for table in ("chunks_fts", "chunks", "meta"):
                self._db.execute(f"DROP TABLE IF EXISTS {table}")
        self._matrix, self._analyzer = None, None
        return {
            "store": self.name,
            "path": str(self.path),
            "chunks": stats["chunks"],
            "corpora": len(stats["corpora"]),
            "tables": sorted(tables),
        }

    # -- reads -----------------------------------------------------------------------------
    def manifest(self, corpus: str, doc_version: str | None = None) -> dict[str, dict[str, StoredEntry]]:
        """See :class:`esrag.stores.base.Store`."""
        out: dict[str, dict[str, StoredEntry]] = {}
        if not self._has_schema():
            return out
        q = "SELECT source_path, id, content_hash, meta_hash FROM chunks WHERE corpus=?"
        params: tuple = (corpus,)
        if doc_version is not None:
            q, params = q + " AND doc_version=?", (corpus, doc_version)
        for path, cid, chash, mhash in self._db.read(q, params):
            out.setdefault(path, {})[cid] = StoredEntry(chash, mhash)
        return out

    def pages(self, corpus: str | None = None) -> list[PageRef]:
        """See :class:`esrag.stores.base.PageListing`: one ``GROUP BY`` over the chunks."""
        if not self._has_schema():
            return []
        q = "SELECT corpus, doc_version, source_path, max(url), max(indexed_at) FROM chunks"
        params: tuple = ()
        if corpus is not None:
            q, params = q + " WHERE corpus=?", (corpus,)
        q += " GROUP BY corpus, doc_version, source_path ORDER BY corpus, doc_version, source_path"
        return [PageRef(c, v or "", p, (u or "").split("#", 1)[0], at or "") for c, v, p, u, at in self._db.read(q, params)]

    def get(self, ids: Sequence[str]) -> list[Chunk]:
        """See :class:`esrag.stores.base.Store`."""
        if not ids or not self._has_schema():
            return []
        found: dict[str, Chunk] = {}
        cols = ", ".join(("id", *_SCALAR_COLUMNS))
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            q = f"SELECT {cols} FROM chunks WHERE id IN ({','.join('?' * len(part))})"
            for row in self._db.read(q, part):
                chunk = _chunk(row)
                found[chunk.id] = chunk
        return [found[i] for i in ids if i in found]

    def neighbours(self, corpus: str, source_path: str, positions: Sequence[int], doc_version: str = "") -> list[Chunk]:
        """See :class:`esrag.stores.base.Store`."""
        if not positions or not self._has_schema():
            return []
        cols = ", ".join(("id", *_SCALAR_COLUMNS))
        q = (
            f"SELECT {cols} FROM chunks WHERE corpus=? AND source_path=? AND doc_version=? "
            f"AND position IN ({','.join('?' * len(positions))}) ORDER BY position"
        )
        return [_chunk(r) for r in self._db.read(q, (corpus, source_path, doc_version, *positions))]

    def source_chunks(self, source_path: str, corpus: str | None = None, doc_version: str | None = None) -> list[Chunk]:
        """See :class:`esrag.stores.base.Store`."""
        if not self._has_schema():
            return []
        cols = ", ".join(("id", *_SCALAR_COLUMNS))
        q, params = f"SELECT {cols} FROM chunks WHERE source_path=?", [source_path]
        if corpus is not None:
            q, params = q + " AND corpus=?", [*params, corpus]
        if doc_version is not None:
            q, params = q + " AND doc_version=?", [*params, doc_version]
        return [_chunk(r) for r in self._db.read(q + " ORDER BY corpus, doc_version, position", params)]

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """See :class:`esrag.stores.base.Store` (read from the in-memory matrix)."""
        if not ids or not self._has_schema():
            return {}
        matrix = self._vectors()
        return {i: matrix.vectors[matrix.row[i]] for i in ids if i in matrix.row}

    def bm25(self, query: str, k: int, filters: Filters, fields: dict[str, float]) -> list[tuple[str, float]]:
        """See :class:`esrag.stores.base.Store`. Query words are OR-ed (as Elasticsearch's
        ``multi_match`` does); only fields with a positive weight can match. Scored by FTS5's
        ``bm25()`` term by term, each term's scores kept until the next committed change
        (:class:`esrag.stores.sqlite_matrix.ChunkMatrix`: the same scores as the OR query in one
        statement, which would score every row holding a common word again for each search);
        inside this thread's own write transaction by that one statement."""
        self._require_schema()
        words = query_terms(query, self._index_analyzer())
        cols = [f for f in TEXT_FIELDS if fields.get(f, 0) > 0]
        if not words or not cols or k <= 0:
            return []
        column_filter = "{" + " ".join(cols) + "} : "
        weights = ", ".join(str(float(fields.get(f, 0.0))) for f in TEXT_FIELDS)
        if not self._db.in_transaction():  # a thread inside its own write transaction must see its rows: SQL below

            def term_scores(word: str) -> list[tuple[int, float]]:
                q = f"SELECT rowid, -bm25(chunks_fts, {weights}) FROM chunks_fts WHERE chunks_fts MATCH ?"
                return self._db.read(q, (column_filter + f'"{word}"',)).fetchall()

            return self._vectors().bm25(words, (column_filter, weights), term_scores, k, filters)
        match = column_filter + "(" + " OR ".join(f'"{w}"' for w in words) + ")"
        where, params = filter_sql(filters, translations=self._holds_translations())
        if not where:  # rank inside FTS5 alone, then look up the k ids (the join before the sort costs ~2.5x)
            q = f"SELECT rowid, -bm25(chunks_fts, {weights}) AS s FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY s DESC LIMIT ?"
            ranked = self._db.read(q, (match, k)).fetchall()
            ids = (
                dict(
                    self._db.read(
                        f"SELECT rowid, id FROM chunks WHERE rowid IN ({','.join('?' * len(ranked))})", [r for r, _ in ranked]
                    ).fetchall()
                )
                if ranked
                else {}
            )
            return [(ids[r], float(sc)) for r, sc in ranked if r in ids]
        q = (
            f"SELECT c.id, -bm25(chunks_fts, {weights}) AS s FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid "
            f"WHERE chunks_fts MATCH ? {where} ORDER BY s DESC LIMIT ?"
        )
        return [(cid, float(s)) for cid, s in self._db.read(q, (match, *params, k))]

    def knn(self, vector: np.ndarray, k: int, filters: Filters, num_candidates: int = 0) -> list[tuple[str, float]]:
        """See :class:`esrag.stores.base.Store`. Exact: ``num_candidates`` is accepted for
        interface parity and ignored (every filtered chunk is a candidate)."""
        self._require_schema()
        if k <= 0:
            return []
        matrix = self._vectors()
        mask = matrix.mask(filters)
        idx = np.flatnonzero(mask) if mask is not None else np.arange(len(matrix.ids))
        if idx.size == 0:
            return []
        q = np.asarray(vector, dtype=np.float32)
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        # einsum, not ``@``: one thread of SIMD instead of OpenBLAS's threads, which on a busy 2-core
        # machine spend ~12 ms synchronising a 0.3 ms product (Laravel, 5,363 x 384; at 100k x 384
        # einsum 7 ms vs 14 ms)
        scores = np.einsum("ij,j->i", matrix.vectors[idx] if mask is not None else matrix.vectors, q)
        top = np.argpartition(-scores, min(k, scores.size) - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(matrix.ids[idx[i]], float(scores[i])) for i in top]

    def refresh(self) -> None:
        """See :class:`esrag.stores.base.Store`. Committed writes are visible at once."""

    def stats(self) -> dict[str, Any]:
        """See :class:`esrag.stores.base.Store`."""
        if not self._has_schema():
            return {"store": self.name, "path": str(self.path), "chunks": 0, "sources": 0, "corpora": {}}
        corpora: dict[str, dict[str, Any]] = {
            c: {"chunks": n, "sources": s, "versions": {}}
            for c, n, s in self._db.read("SELECT corpus, count(*), count(DISTINCT source_path) FROM chunks GROUP BY corpus ORDER BY corpus")
        }
        for c, v, n, s, at in self._db.read(
            "SELECT corpus, doc_version, count(*), count(DISTINCT source_path), max(indexed_at) FROM chunks "
            "GROUP BY corpus, doc_version ORDER BY corpus, doc_version"
        ):
            if c in corpora:
                corpora[c]["versions"][v or ""] = {"chunks": n, "sources": s, "indexed_at": at}
        meta = self.meta()
        return {
            "store": self.name,
            "path": str(self.path),
            "bytes": self.path.stat().st_size if self.path.exists() else 0,
            "chunks": sum(v["chunks"] for v in corpora.values()),
            "sources": sum(v["sources"] for v in corpora.values()),
            "corpora": corpora,
            "embedder": meta.embedder if meta else None,
            "dims": meta.dims if meta else None,
            "tokenizer": self._meta_value("tokenizer"),
        }

    # -- helpers ---------------------------------------------------------------------------
    @contextmanager
    def _writing(self, what: str) -> Iterator[None]:
        """One write transaction (``with self._db``: committed whole or rolled back whole); a
        SQLite error — a full disk (``SQLITE_FULL``), a read-only file, a locked database —
        becomes one :class:`StoreError` line naming the file and the way out. The store keeps
        its previous content and opens as before. Inside :meth:`transaction` (same thread) it
        adds to that one transaction instead."""
        if self._batch_thread == threading.get_ident():
            yield
            return
        try:
            with self._db:
                yield
        except sqlite3.Error as exc:
            full = "full" in str(exc).lower()
            hint = (
                "free disk space on that filesystem (or move ESRAG_DB to a larger one)"
                if full
                else "check that the file is writable and no other program holds it locked"
            )
            raise StoreError(
                f"the embedded store at {self.path} could not {what}: {exc}; nothing of this batch was "
                f"written and the store keeps its previous content: {hint}, then run the ingest again"
            ) from None

    def _meta_value(self, key: str) -> str | None:
        row = self._db.read("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def _index_analyzer(self) -> str:
        if self._analyzer is None:
            meta = self.meta()
            self._analyzer = meta.analyzer if meta else "english"
        return self._analyzer

    def _require_schema(self) -> None:
        if not self._has_schema():
            raise NotIndexedError(self.missing())

    def _holds_translations(self) -> bool:
        """Whether any chunk has a ``translation``: one scan per committed change (keyed on
        :meth:`~esrag.stores.sqlite_conn.Connections.data_version`, as the vector matrix). When
        none has, the default exclusion of translations is a no-op, and leaving it out lets the
        BM25 leg rank inside FTS5 alone instead of joining every matching row first (issue 39:
        on the Laravel docs the join made the BM25 leg ~5 ms of a ~11 ms search's CPU)."""
        version = self._db.data_version()
        known = self._translations
        if known is not None and known[0] == version:
            return known[1]
        row = self._db.read("SELECT EXISTS (SELECT 1 FROM chunks WHERE translation IS NOT NULL AND translation != '')").fetchone()
        self._translations = (version, bool(row and row[0]))
        return self._translations[1]

    def _vectors(self) -> ChunkMatrix:
        """The in-memory matrix of every chunk's vector, read again when the database changed:
        this store's own writes drop it, and :meth:`~esrag.stores.sqlite_conn.Connections.data_version`
        (which moves when any connection commits — this store's writer, or another process's
        ``esrag ingest`` while ``esrag serve`` runs) tells of every commit. One thread builds it
        (the others wait for it), reading the rows in one statement on its reader, so a write
        transaction of another thread neither blocks nor tears it; the version is taken before
        the rows, so a commit in between only makes the next search read them again."""
        version = self._db.data_version()
        matrix = self._matrix
        if matrix is not None and version == self._matrix_version:
            return matrix
        with self._matrix_lock:
            if self._matrix is None or self._matrix_version != version:
                self._analyzer = None  # the index may have been rebuilt
                rows = self._db.read(
                    "SELECT id, corpus, source_path, language, vector, effective_date, superseded_by, doc_version, translation, rowid FROM chunks"
                ).fetchall()
                meta = self.meta()
                self._matrix = ChunkMatrix(rows, meta.dims if meta else 0)
                self._matrix_version = version
            return self._matrix


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _row(c: Chunk, meta_hash: str, now: str) -> tuple:
    """The row of ``c`` in :data:`_SCALAR_COLUMNS` order: its record (:func:`esrag.stores.records.chunk_record`)
    with list fields joined by newlines, ``metadata`` as JSON and an empty enrich model as NULL."""
    rec = chunk_record(c, meta_hash, now)
    for name in LIST_FIELDS:
        rec[name] = "\n".join(rec[name])
    rec["enrich_model"] = rec["enrich_model"] or None
    rec["prompt_sha256"] = rec["prompt_sha256"] or None
    rec["translation"] = rec["translation"] or ""  # a column added later: NOT NULL DEFAULT ''
    rec["metadata"] = json.dumps(rec["metadata"], sort_keys=True)
    return tuple(rec[name] for name in _SCALAR_COLUMNS)


def _split(value: str) -> list[str]:
    return [v for v in value.split("\n") if v] if value else []


def _chunk(row: tuple) -> Chunk:
    """The chunk of a row (``id`` then :data:`_SCALAR_COLUMNS`), through the shared record mapping."""
    r = dict(zip(("id", *_SCALAR_COLUMNS), row))
    r["metadata"] = json.loads(r["metadata"] or "{}")
    r["translation"] = r["translation"] or None
    for name in LIST_FIELDS:
        r[name] = _split(r[name])
    return chunk_from_record(r["id"], r)
