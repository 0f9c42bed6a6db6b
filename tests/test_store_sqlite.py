"""The embedded SQLite store against the shared store contract, plus SQLite-specific checks."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from esrag.errors import NotIndexedError
from esrag.stores.base import Filters
from esrag.stores.sqlite import SQLiteStore
from store_suite import FIELDS, StoreContract, make_chunk, meta, unit


@pytest.fixture
def store(tmp_path):
    s = SQLiteStore(tmp_path / "idx" / "esrag.db")
    s.ensure(meta())
    yield s
    s.close()


class TestSQLiteStore(StoreContract):
    pass


def test_search_before_ingest_says_what_to_do(tmp_path):
    s = SQLiteStore(tmp_path / "empty.db")
    assert s.meta() is None
    with pytest.raises(NotIndexedError, match="esrag ingest"):
        s.bm25("x", 3, Filters(), FIELDS)


def test_durable_across_connections(tmp_path):
    path = tmp_path / "d.db"
    s = SQLiteStore(path)
    s.ensure(meta())
    s.write([make_chunk(0, "persisted words")], np.stack([unit(1)]), ["m"])
    s.close()
    again = SQLiteStore(path)
    assert again.bm25("persisted", 3, Filters(), FIELDS)[0][0] == "docs-a.md-0"
    assert again.knn(unit(1), 1, Filters(), 10)[0][0] == "docs-a.md-0"
    again.close()


def test_failed_batch_writes_nothing(tmp_path):
    s = SQLiteStore(tmp_path / "t.db")
    s.ensure(meta())
    good = make_chunk(0, "fine")
    bad = make_chunk(1, "x")
    bad.text = None  # NOT NULL text: the whole transaction must roll back
    with pytest.raises(sqlite3.IntegrityError):
        s.write([good, bad], np.stack([unit(0), unit(1)]), ["m", "m"])
    assert s.stats()["chunks"] == 0


def test_fts_index_stays_in_sync_after_updates_and_deletes(tmp_path):
    s = SQLiteStore(tmp_path / "t.db")
    s.ensure(meta())
    s.write([make_chunk(0, "alpha")], np.stack([unit(0)]), ["m"])
    s.write([make_chunk(0, "beta")], np.stack([unit(0)]), ["m"])
    s.delete(["docs-a.md-0"])
    s.write([make_chunk(1, "beta gamma")], np.stack([unit(1)]), ["m"])
    s._db.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('integrity-check', 1)")
    assert [i for i, _ in s.bm25("beta", 5, Filters(), FIELDS)] == ["docs-a.md-1"]
    assert s.bm25("alpha", 5, Filters(), FIELDS) == []
