"""Fault injection for tests/test_safe_ingest.py: a deterministic stand-in embedder, and (run
as a script) an ``esrag ingest`` through :func:`esrag.app.ingest_tree` that kills its own
process with SIGKILL at a chosen point of a ``--rebuild``.

Usage: ``python tests/fault_helpers.py TREE CORPUS POINT`` with ``ESRAG_ES_URL``,
``ESRAG_INDEX``, ``ESRAG_EMBEDDER`` and ``ESRAG_EMBEDDING_CACHE`` set by the caller. POINT:

* ``ingest``: a plain ingest (no rebuild, no fault);
* ``rebuild``: a rebuild without a fault;
* ``before-copy``: killed once the rebuild index exists, before its first chunk is written;
* ``mid-copy``: killed after half of the first batch of chunks was written (and refreshed);
* ``before-swap``: killed when the alias swap (``POST _aliases``) is about to be sent.

Prints the ingest's ``--json`` report on stdout when it is not killed.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import warnings
import zlib
from pathlib import Path

import numpy as np


class HashEmbedder:
    """A deterministic stand-in embedder (bag of hashed words, L2-normalised)."""

    def __init__(self, dims: int = 16, spec: str | None = None) -> None:
        self.dims, self.spec, self.calls = dims, spec or f"test:hash-{dims}", 0

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dims, dtype=np.float32)
        for w in text.lower().split():
            v[zlib.crc32(w.encode()) % self.dims] += 1.0
        v[0] += 1e-3
        return v / np.linalg.norm(v)

    def embed_documents(self, texts, progress=None):
        self.calls += len(texts)
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dims), np.float32)

    def embed_query(self, text):
        return self._vec(text)


def _die() -> None:
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def _inject(point: str) -> None:
    from elasticsearch._sync.client.indices import IndicesClient

    from esrag.stores.elastic.store import ElasticStore

    original = ElasticStore.write
    if point == "before-copy":

        def write(self, chunks, vectors, meta_hashes):
            assert self._rebuild_index and self._es.indices.exists(index=self._rebuild_index)
            _die()

        ElasticStore.write = write  # type: ignore[method-assign]
    elif point == "mid-copy":

        def write(self, chunks, vectors, meta_hashes):
            half = len(chunks) // 2
            original(self, chunks[:half], vectors[:half], meta_hashes[:half])
            self._es.indices.refresh(index=self._rebuild_index)
            _die()

        ElasticStore.write = write  # type: ignore[method-assign]
    elif point == "before-swap":

        def update_aliases(self, *args, **kwargs):
            _die()

        IndicesClient.update_aliases = update_aliases  # type: ignore[method-assign]
    elif point not in ("ingest", "rebuild"):
        raise SystemExit(f"unknown fault point {point!r}")


def main(tree: str, corpus: str, point: str) -> None:
    from esrag import app
    from esrag.config import load_settings
    from esrag.embedding import normalize_spec

    _inject(point)
    settings = load_settings()
    emb = HashEmbedder(spec=normalize_spec(settings.embedder))
    app.embedder_factory = lambda settings, spec=None, corpus=None: lambda: emb  # type: ignore[assignment]
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # on stderr: the caller reads them
        with app.open_store(settings) as store:
            result = app.ingest_tree(settings, store, Path(tree), corpus=corpus, rebuild=point != "ingest")
    print(json.dumps(result.to_dict(), default=str))


if __name__ == "__main__":
    main(*sys.argv[1:4])
