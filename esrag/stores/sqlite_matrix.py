"""The embedded store's in-memory view of its chunks, read again after every committed change
(:meth:`esrag.stores.sqlite.SQLiteStore._vectors`): every vector with the columns filters need,
and a cache of BM25 per query term.

Why a BM25 term cache (issue 39): FTS5 ranks an OR query by scoring every row that holds any of
its terms, so a query holding a common word ("use", "run") scores thousands of rows each time:
~2.6 ms of a ~8 ms hybrid search's CPU on the Laravel docs (5,363 chunks). FTS5's ``bm25()`` is a
sum over the query's phrases (``fts5_aux.c`` ``fts5Bm25Function``: per phrase IDF x the
column-weighted frequency's saturation, with IDF, the row count and the mean row length taken
over the whole table, never over an outer filter), and every term of an OR-ed query is one
phrase. So the score of a row for the OR query is the sum of its scores for each term asked
alone, and a term's scores (the rows holding it and their ``-bm25``) can be kept and summed for
each later query that holds it. Filters are applied as the kNN leg applies them
(:meth:`ChunkMatrix.mask`), after the sum: FTS5 never lets them change a score.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

from esrag.stores.base import Filters

#: postings (row, score) the BM25 term cache keeps per matrix, least recently used out first:
#: at 12 bytes each (int32 row, float64 score) ~48 MB; a term of the Laravel docs holds at most
#: ~5,000 rows, so the cache keeps every term a search has asked there
TERM_CACHE_POSTINGS = 4_000_000


class ChunkMatrix:
    """All chunks' vectors in memory with the columns filters need, and a BM25 term cache;
    built from the rows of ``SELECT id, corpus, source_path, language, vector, effective_date,
    superseded_by, doc_version, translation, rowid FROM chunks`` and dropped after any write."""

    def __init__(self, rows: list[tuple], dims: int) -> None:
        self.ids = [r[0] for r in rows]
        self.corpus = np.array([r[1] for r in rows], dtype=object)
        self.source_path = np.array([r[2] for r in rows], dtype=object)
        self.language = np.array([r[3] or "" for r in rows], dtype=object)
        self.effective_day = np.array([(r[5] or "")[:10] for r in rows], dtype=object)
        self.superseded = np.array([bool(r[6]) for r in rows], dtype=bool)
        self.doc_version = np.array([r[7] or "" for r in rows], dtype=object)
        self.translation = np.array([bool(r[8]) for r in rows], dtype=bool)
        self.has_translations = bool(self.translation.any())
        self.row = {cid: i for i, cid in enumerate(self.ids)}
        rowids = np.array([r[9] for r in rows], dtype=np.int64)
        self._by_rowid = np.argsort(rowids, kind="stable")
        self._rowids_sorted = rowids[self._by_rowid]
        if rows:
            self.vectors = np.frombuffer(b"".join(r[4] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        else:
            self.vectors = np.zeros((0, dims), dtype=np.float32)
        self._terms: OrderedDict[tuple, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._postings = 0
        self._terms_lock = threading.Lock()

    def positions(self, rowids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """``(positions, found)``: each SQLite ``rowid``'s row in this matrix (int64 array) and
        whether the matrix holds it (bool array; a row committed after the matrix was read is not)."""
        want = np.asarray(rowids, dtype=np.int64)
        if not self._rowids_sorted.size:
            return np.zeros(want.size, dtype=np.int64), np.zeros(want.size, dtype=bool)
        at = np.minimum(np.searchsorted(self._rowids_sorted, want), self._rowids_sorted.size - 1)
        return self._by_rowid[at], self._rowids_sorted[at] == want

    def bm25(
        self,
        terms: Sequence[str],
        key: tuple,
        term_scores: Callable[[str], list[tuple[int, float]]],
        k: int,
        filters: Filters,
    ) -> list[tuple[str, float]]:
        """The ``k`` best ``(chunk_id, score)`` of the OR of ``terms``, best first (ties in
        matrix order), through ``filters``: the sum of each term's scores (see the module
        docstring), a term's read by ``term_scores(term)`` (``[(rowid, -bm25), ...]`` of the term
        asked alone over the same columns and weights) once, then kept under ``(term, *key)``
        (``key``: what else changes a score, i.e. the columns and their weights)."""
        scores = np.zeros(len(self.ids), dtype=np.float64)
        for term in terms:
            pos, vals = self._term(term, key, term_scores)
            scores[pos] += vals
        mask = self.mask(filters)
        keep = scores > 0 if mask is None else (scores > 0) & mask
        idx = np.flatnonzero(keep)
        if not idx.size or k <= 0:
            return []
        if idx.size > k:
            idx = idx[np.argpartition(-scores[idx], k - 1)[:k]]
            idx.sort()
        idx = idx[np.argsort(-scores[idx], kind="stable")]
        return [(self.ids[i], float(scores[i])) for i in idx]

    def _term(self, term: str, key: tuple, term_scores: Callable[[str], list[tuple[int, float]]]) -> tuple[np.ndarray, np.ndarray]:
        """One term's ``(positions, scores)`` from the cache, or read and kept (least recently
        used out past :data:`TERM_CACHE_POSTINGS`)."""
        name = (term, *key)
        with self._terms_lock:
            hit = self._terms.get(name)
            if hit is not None:
                self._terms.move_to_end(name)
                return hit
        rows = term_scores(term)
        pos, found = self.positions([r for r, _ in rows])
        vals = np.array([s for _, s in rows], dtype=np.float64)
        entry = (pos[found].astype(np.int32), vals[found])
        with self._terms_lock:
            if name not in self._terms:
                self._terms[name] = entry
                self._postings += entry[0].size
                while self._postings > TERM_CACHE_POSTINGS and len(self._terms) > 1:
                    _, old = self._terms.popitem(last=False)
                    self._postings -= old[0].size
        return entry

    def mask(self, filters: Filters) -> np.ndarray | None:
        drop_translations = self.has_translations and filters.excludes_translations()
        if filters.is_empty() and not drop_translations:
            return None
        mask = np.ones(len(self.ids), dtype=bool)
        if drop_translations:
            mask &= ~self.translation
        if filters.corpora:
            mask &= np.isin(self.corpus, filters.corpora)
        if filters.path_prefix:
            prefix = filters.path_prefix
            mask &= np.fromiter((p.startswith(prefix) for p in self.source_path), dtype=bool, count=len(self.ids))
        if filters.languages:
            mask &= np.isin(self.language, filters.languages)
        if filters.exclude_ids:
            mask &= ~np.isin(np.array(self.ids, dtype=object), filters.exclude_ids)
        if filters.effective_on:
            day = filters.effective_on[:10]
            mask &= np.fromiter((d == "" or d <= day for d in self.effective_day), dtype=bool, count=len(self.ids))
        if filters.exclude_superseded:
            mask &= ~self.superseded
        if filters.doc_version is not None:
            mask &= self.doc_version == filters.doc_version
        if filters.versions:
            keep = ~np.isin(self.corpus, list(filters.versions))
            for corpus, version in filters.versions.items():
                keep |= (self.corpus == corpus) & (self.doc_version == version)
            mask &= keep
        return mask
