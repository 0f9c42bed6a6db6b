"""The persistent embedding cache: vectors keyed by (embedder spec, SHA-256 of the embedded
text), so identical texts are embedded once across evaluation arms and re-ingests."""

from __future__ import annotations

import hashlib
import sqlite3
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from esrag.embedding.base import CacheTagged, Embedder, Progress, QueryBatch, ReportsRuntime, query_batch


class EmbeddingCache:
    """Persistent vectors keyed by (embedder spec, SHA-256 of the exact embedded text).

    One SQLite file; safe to share between runs (identical texts are embedded once across
    evaluation arms and re-ingests).
    """

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self._warned = path, False
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")

    @staticmethod
    def key(spec: str, text: str) -> str:
        return hashlib.sha256(f"{spec}\x1f{text}".encode()).hexdigest()

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            rows = self._db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(part))})", part).fetchall()
            found.update((k, np.frombuffer(v, dtype=np.float32)) for k, v in rows)
        return found

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        """Store ``items`` (key -> vector [dims]); a cache that cannot be written (a full disk, a
        read-only file) warns once and is skipped: the vectors are recomputed next time."""
        try:
            with self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO vectors (key, vector) VALUES (?, ?)",
                    [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()],
                )
        except sqlite3.Error as exc:
            if not self._warned:
                self._warned = True
                warnings.warn(
                    f"the embedding cache at {self.path} could not be written ({exc}); this ingest goes on "
                    "without caching, and the vectors are computed again next time",
                    stacklevel=2,
                )

    def close(self) -> None:
        self._db.close()


class CachedEmbedder:
    """Wraps an embedder with an :class:`EmbeddingCache`; only cache misses reach the model.

    ``computed`` counts texts actually embedded since creation.
    """

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache
        self.spec = inner.spec
        self.dims = inner.dims
        self.computed = 0
        # what embeds (e.g. "openvino int8"; '' for embedders that do not say)
        self.runtime: str = inner.runtime if isinstance(inner, ReportsRuntime) else ""
        # prefixes other than the model table's (a corpus override) must not share cached vectors
        self._key_spec = inner.spec + (inner.cache_tag if isinstance(inner, CacheTagged) else "")

    def embed_documents(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        keys = [self.cache.key(self._key_spec + "|passage", t) for t in texts]
        found = self.cache.get_many(list(dict.fromkeys(keys)))
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys) if k not in found))
        if progress and len(texts) - len(missing):
            progress(len(set(keys)) - len(missing))
        if missing:
            vecs = self.inner.embed_documents(missing, progress)
            self.computed += len(missing)
            new = {self.cache.key(self._key_spec + "|passage", t): v for t, v in zip(missing, vecs)}
            self.cache.put_many(new)
            found.update(new)
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        return np.stack([found[k] for k in keys])

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)

    def embed_query_batch(self, texts: Sequence[str]) -> np.ndarray:
        """The inner embedder's query vectors (:func:`esrag.embedding.base.query_batch`): queries
        are not cached here (the searcher keeps recent ones)."""
        return query_batch(self.inner, texts)


def batches_queries(embedder: Embedder) -> bool:
    """Whether ``embedder`` embeds several queries in one pass (a :class:`esrag.embedding.base.
    QueryBatch`, looked for through a :class:`CachedEmbedder`), so that concurrent searches
    gain by sharing one (:meth:`esrag.search.searcher.Searcher.embed_query`): the local
    models do; a remote API embedder would only make one query wait for another's request."""
    inner = embedder.inner if isinstance(embedder, CachedEmbedder) else embedder
    return isinstance(inner, QueryBatch)
