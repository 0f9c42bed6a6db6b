"""The embedder interface: the :class:`Embedder` protocol, spec strings (``backend:MODEL``),
query/passage prefixes per model family as data (``esrag/data/model_prompts.toml``) and L2
normalisation. Every embedder returns L2-normalised float32 vectors, so cosine similarity is a
dot product; a prefix is put only in front of the text that is embedded, never stored or counted.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, Protocol, runtime_checkable

import numpy as np

DEFAULT_MODEL = "all-MiniLM-L6-v2"

Progress = Callable[[int], None]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors.

    Attributes:
        spec: ``backend:model`` string that recreates this embedder (recorded in the index).
        dims: vector dimension, read from the model.
    """

    spec: str
    dims: int

    def embed_documents(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        """Array [len(texts), dims] float32, L2-normalised; passage prefix applied.
        ``progress(n)`` is called as each n texts are done."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Array [dims] float32, L2-normalised; query prefix applied."""
        ...


@runtime_checkable
class BatchQueries(Protocol):
    """An embedder that embeds many queries in one call (batched forward passes or requests)."""

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Array [len(texts), dims] float32, L2-normalised; query prefix applied."""
        ...


@runtime_checkable
class QueryBatch(Protocol):
    """An embedder that gives several queries the vectors :meth:`Embedder.embed_query` gives
    them, in one forward pass (what a server's concurrent searches share: :meth:`esrag.search.
    searcher.Searcher.embed_query`). Unlike :class:`BatchQueries`, which may embed with the
    passage model's settings for throughput (evaluation), this is the query path itself."""

    def embed_query_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Array [len(texts), dims] float32, L2-normalised, query prefix applied; row i is
        ``embed_query(texts[i])`` (bitwise on OpenVINO, whose padding is masked; within float
        rounding on torch)."""
        ...


def query_batch(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """``embed_query`` of each of ``texts`` as one array [len(texts), dims]: in one pass when
    ``embedder`` is a :class:`QueryBatch`, else one call per text."""
    if isinstance(embedder, QueryBatch):
        return embedder.embed_query_batch(texts)
    return np.stack([embedder.embed_query(t) for t in texts]) if texts else np.zeros((0, embedder.dims), dtype=np.float32)


@runtime_checkable
class ReportsRuntime(Protocol):
    """An embedder that names the runtime computing its vectors (``torch fp32``, ``openvino
    int8``…), for the ingest summary's ``embedder_runtime``."""

    runtime: str


@runtime_checkable
class CacheTagged(Protocol):
    """An embedder whose passage vectors depend on more than its spec (the int8 model, a
    corpus's own prefixes): ``cache_tag`` is added to the spec in embedding-cache keys."""

    cache_tag: str


@dataclass(frozen=True, slots=True)
class Prompts:
    """The query and passage prefixes of one model family (``""`` = none)."""

    family: str
    query: str
    passage: str


@functools.cache
def _prompt_table() -> list[dict[str, Any]]:  # name, match, query, passage: str; flags: bool
    data = (resources.files("esrag") / "data" / "model_prompts.toml").read_text(encoding="utf-8")
    return tomllib.loads(data)["family"]


def prompt_flags(model: str) -> dict[str, bool]:
    """Boolean flags of ``model``'s family row (e.g. ``input_type``: the server adds the prefix
    itself, chosen by the request's ``input_type``; see :mod:`esrag.embedding.remote`); ``{}`` if none."""
    for row in _prompt_table():
        if re.search(row["match"], model, re.IGNORECASE):
            return {k: v for k, v in row.items() if isinstance(v, bool)}
    return {}


def prompts_for(model: str, query: str | None = None, passage: str | None = None) -> Prompts:
    """Prefixes for ``model``: explicit arguments > the family table > none."""
    family = Prompts("none", "", "")
    for row in _prompt_table():
        if re.search(row["match"], model, re.IGNORECASE):
            family = Prompts(row["name"], row.get("query", ""), row.get("passage", ""))
            break
    return Prompts(
        family.family,
        family.query if query is None else query,
        family.passage if passage is None else passage,
    )


def parse_spec(spec: str) -> tuple[str, str]:
    """``"st:MODEL"`` -> ``("st", "MODEL")``; a bare model name means sentence-transformers."""
    backend, sep, model = spec.partition(":")
    if not sep or "/" in backend or not backend.isidentifier():
        return "st", spec
    return backend, model


def normalize_spec(spec: str) -> str:
    """``"all-MiniLM-L6-v2"`` -> ``"st:all-MiniLM-L6-v2"``: the form recorded in an index."""
    backend, model = parse_spec(spec)
    return f"{backend}:{model}"


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows of ``vectors`` scaled to unit L2 norm, as float32 (zero rows stay zero)."""
    return _l2_normalise(vectors)


def _l2_normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)
