"""Chunk <-> indexed document, over the shared record mapping (:mod:`esrag.stores.records`).

The document of a chunk is its record with empty fields and None values left out (Kibana's
Discover shows only what is there), plus ``vector`` (the ``dense_vector`` searched by kNN, kept
out of the stored ``_source``) and, in an index without synthetic vectors (8.x), ``vector_bin``:
the float32 vector, little-endian, base64, a *stored* binary field read back by metadata
updates (see :mod:`esrag.stores.elastic.store` and :mod:`esrag.stores.elastic.vector_options`).
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

import numpy as np

from esrag.model import Chunk
from esrag.stores.records import chunk_from_record, chunk_record

#: Fields replaced by :meth:`ElasticStore.update_meta` (what ``esrag.ingest.meta_hash`` covers).
META_FIELDS = (
    "start_line",
    "end_line",
    "position",
    "n_chunks",
    "doc_title",
    "section_path",
    "parent_id",
    "language",
    "authority",
    "effective_date",
    "superseded_by",
    "translation",
    "metadata",
    "meta_hash",
    "indexed_at",
    "url",
    "anchor",
    "alt_urls",
)


def encode_vector(vector: np.ndarray) -> str:
    """float32 little-endian bytes of ``vector``, base64 (the ``vector_bin`` stored field)."""
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(data: str) -> np.ndarray:
    """Inverse of :func:`encode_vector`: array [dims] float32."""
    return np.frombuffer(base64.b64decode(data), dtype="<f4").astype(np.float32)


def chunk_document(chunk: Chunk, vector: np.ndarray, meta_hash: str, indexed_at: str | None, vector_copy: bool = True) -> dict[str, Any]:
    """The indexed document of ``chunk``: its record (separate fields, labels pulled out of
    ``metadata``) without None and empty values (``text`` and ``metadata`` always kept), and the
    vector as ``vector`` (float32 array [dims]) and, when ``vector_copy``, ``vector_bin`` (:func:`encode_vector`;
    about 2 KB a chunk at 384 dims, 1,536 bytes stored)."""
    doc = {
        k: v
        for k, v in chunk_record(chunk, meta_hash, indexed_at).items()
        if v is not None and (k in ("text", "metadata") or v not in ("", []))
    }
    # a float32 array, not a list of Python floats: the client's orjson serializer writes it
    # natively (OPT_SERIALIZE_NUMPY) with float32's shortest digits, which Elasticsearch parses
    # back to the same float32 (about 3x faster to build and ~40% fewer bytes than float64 reprs)
    doc["vector"] = np.ascontiguousarray(vector, dtype=np.float32)
    if vector_copy:
        doc["vector_bin"] = encode_vector(vector)
    return doc


def chunk_from_source(doc_id: str, src: dict[str, Any]) -> Chunk:
    """Rebuild a :class:`Chunk` from a stored ``_source`` (see :func:`chunk_document`)."""
    return chunk_from_record(doc_id, src)


def cosines(hits: list[dict[str, Any]]) -> list[tuple[str, float]]:
    """``(id, cosine)`` of kNN hits: Elasticsearch's cosine ``_score`` is ``(1 + cos) / 2``."""
    return [(h["_id"], 2.0 * float(h["_score"]) - 1.0) for h in hits]


def scored(hits: list[dict[str, Any]]) -> list[tuple[str, float]]:
    """``(id, _score)`` of BM25 hits, best first."""
    return [(h["_id"], float(h["_score"])) for h in hits]


def now() -> str:
    """The current UTC time, ISO 8601 to the second (``indexed_at`` without an ingest pipeline)."""
    return datetime.now(UTC).isoformat(timespec="seconds")
