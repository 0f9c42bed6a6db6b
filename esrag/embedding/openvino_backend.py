"""The OpenVINO backend of the ``st:`` embedder: a sentence-transformers model exported once to
OpenVINO IR, cached on disk, and run by the OpenVINO runtime (PyPI ``openvino``) with the
model's own tokenizer (PyPI ``tokenizers``, its ``tokenizer.json``). No torch at run time.

Why: on 2 CPU cores without native bf16 (the issue-17 machine class) torch fp32 was slower than
the LangChain + sentence-transformers peer; OpenVINO's fp32 kernels with its graph fusions are
faster on the same cores, and on CPUs with AVX512-BF16/AMX its bf16 inference precision is faster
than ``torch.autocast(bfloat16)`` (``benchmarks/bench_ingest.py`` measures both).

What is exported: models of the plain shape ``Transformer -> Pooling(mean or CLS) [-> Normalize]``
(``modules.json``; all-MiniLM-L6-v2 and most sentence-transformers models), as one graph
``(input_ids, attention_mask, token_type_ids) -> pooled embedding [batch, dims]`` by
``torch.onnx.export`` (TorchScript exporter, opset 17), converted to IR by
``openvino.convert_model`` and saved with fp32 weights (``compress_to_fp16=False``). Other
shapes are not exportable here (:func:`exportable` says why) and stay on torch.

The cache: ``<user cache dir>/esrag/models/<model name>-<model hash>-<library hash>/`` (the user
cache dir is platformdirs' ``user_cache_dir("esrag")``, e.g. ``~/.cache/esrag`` on Linux;
``ESRAG_MODEL_CACHE`` moves it). The model hash is the SHA-256 of the model's files that enter
the export; the library hash covers the versions of torch, transformers, openvino and
:data:`EXPORT_FORMAT`, so a new version of any of them exports afresh. OpenVINO's own compiled
kernels are cached in the same folder (``CACHE_DIR``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import tempfile
import threading
import warnings
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

# bump when the exported graph changes (inputs, pooling), so old exports are not reused
EXPORT_FORMAT = "1"
_MODEL_FILES = (
    "config.json",
    "modules.json",
    "tokenizer.json",
    "model.safetensors",
    "pytorch_model.bin",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
)
_LIBRARIES = ("torch", "transformers", "openvino")


class NotExportable(Exception):
    """The model cannot run on this backend (the message says why)."""


def cache_root() -> Path:
    """Where exported models live: ``$ESRAG_MODEL_CACHE``, else platformdirs'
    ``user_cache_dir("esrag") / "models"``."""
    env = os.environ.get("ESRAG_MODEL_CACHE")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("esrag")) / "models"


def library_versions() -> dict[str, str]:
    """Installed versions of the libraries the export depends on (read from package metadata:
    nothing is imported), plus the export format."""
    out = {"export": EXPORT_FORMAT}
    for name in _LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "missing"
    return out


def model_hash(model_dir: Path) -> str:
    """SHA-256 (hex) over the model files that enter the export (names and bytes)."""
    h = hashlib.sha256()
    for rel in (*_MODEL_FILES, *_pooling_config_path(model_dir)):
        f = model_dir / rel
        if f.is_file():
            h.update(rel.encode() + b"\0")
            with f.open("rb") as fh:
                for block in iter(functools.partial(fh.read, 1 << 20), b""):
                    h.update(block)
    return h.hexdigest()


def _pooling_config_path(model_dir: Path) -> tuple[str, ...]:
    """The pooling config's path when ``modules.json`` puts it elsewhere than ``1_Pooling/`` (it
    decides mean or CLS pooling, so it enters the hash wherever it lives); ``()`` otherwise."""
    try:
        rel = _pooling_config(model_dir)[0]
    except (OSError, ValueError, KeyError, StopIteration, TypeError):
        return ()
    return () if rel in _MODEL_FILES else (rel,)


def _pooling_config(model_dir: Path) -> tuple[str, dict[str, Any]]:
    """The Pooling module's config: its path relative to ``model_dir`` (where ``modules.json``
    puts it) and its contents.

    Raises:
        OSError, ValueError (bad JSON), KeyError, StopIteration (no Pooling module).
    """
    modules = json.loads((model_dir / "modules.json").read_text())
    rel = next(m["path"] for m in modules if m["type"].endswith("Pooling")) + "/config.json"
    return rel, json.loads((model_dir / rel).read_text())


def cache_dir_for(model_dir: Path, versions: dict[str, str] | None = None) -> Path:
    """The cache folder of ``model_dir``'s export under the current library versions."""
    lib = hashlib.sha256(json.dumps(versions or library_versions(), sort_keys=True).encode()).hexdigest()
    return cache_root() / f"{model_dir.name}-{model_hash(model_dir)[:16]}-{lib[:12]}"


def exportable(model_dir: Path) -> None:
    """Raise :class:`NotExportable` unless ``model_dir`` is a local sentence-transformers model of
    the shape ``Transformer -> Pooling(mean or CLS) [-> Normalize]`` with a ``tokenizer.json``."""
    if not (model_dir / "modules.json").is_file():
        raise NotExportable(f"{model_dir} is not a local sentence-transformers model folder (no modules.json)")
    if not (model_dir / "tokenizer.json").is_file():
        raise NotExportable(f"{model_dir} has no tokenizer.json (a fast tokenizer is needed)")
    kinds = [m["type"].rsplit(".", 1)[-1] for m in json.loads((model_dir / "modules.json").read_text())]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise NotExportable(f"modules {kinds} are not Transformer -> Pooling [-> Normalize]")
    cfg = _pooling_config(model_dir)[1]
    modes = [k for k, v in cfg.items() if k.startswith("pooling_mode") and v]
    if modes not in (["pooling_mode_mean_tokens"], ["pooling_mode_cls_token"]):
        raise NotExportable(f"pooling {modes} is neither mean nor CLS pooling")


def pooling_mode(model_dir: Path) -> str:
    """``"mean"`` or ``"cls"``: the pooling of an exportable model (BGE models pool the [CLS]
    token; most sentence-transformers models average the tokens)."""
    return "cls" if _pooling_config(model_dir)[1].get("pooling_mode_cls_token") else "mean"


def max_seq_length(model_dir: Path) -> int:
    """The model's window in wordpieces (``sentence_bert_config.json`` ``max_seq_length``, else 512)."""
    f = model_dir / "sentence_bert_config.json"
    if f.is_file():
        value = json.loads(f.read_text()).get("max_seq_length")
        if value:
            return int(value)
    return 512


_export_lock = threading.Lock()


def exported_model(model_dir: Path) -> Path:
    """The cached IR (``model.xml``) of ``model_dir``, exporting it first when absent (about 10 s
    with torch; later loads read the cache). The folder is written under a temporary name and
    renamed when complete, so an interrupted export is never used.

    Raises:
        NotExportable: the model's shape is not supported (see :func:`exportable`).
    """
    exportable(model_dir)

    def build(tmp: Path) -> None:
        _export(model_dir, tmp)
        (tmp / "versions.json").write_text(json.dumps({"model": str(model_dir), **library_versions()}, indent=1))

    with _export_lock:
        return build_once(cache_dir_for(model_dir), build)


def build_once(target: Path, build: Callable[[Path], None], marker: str = "model.xml") -> Path:
    """``target / marker``, after ``build(tmp)`` has filled a fresh sibling folder ``tmp``
    renamed to ``target`` when complete — only when ``target`` holds no ``marker`` file yet. An
    interrupted build is never used (its temporary folder is removed), and when another process
    finishes first its folder is kept. Callers hold their own in-process lock.

    Raises:
        whatever ``build`` raises; OSError when the rename fails and no finished folder exists.
    """
    xml = target / marker
    if xml.is_file():
        return xml
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        build(tmp)
        try:
            tmp.rename(target)
        except OSError:  # another process finished first
            if not xml.is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return xml


def _export(model_dir: Path, out: Path) -> None:
    import openvino as ov
    import torch
    from transformers import AutoModel

    cls = pooling_mode(model_dir) == "cls"

    class Pooled(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            h = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state
            if cls:
                return h[:, 0]
            mask = attention_mask.unsqueeze(-1).to(h.dtype)
            return (h * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    model = AutoModel.from_pretrained(str(model_dir)).eval()
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]])
    inputs = (ids, (ids > 0).long(), torch.zeros_like(ids))
    names = ["input_ids", "attention_mask", "token_type_ids"]
    onnx_path = out / "model.onnx"
    # the tracer warns about Python booleans it freezes (transformers' causal/padding checks): with
    # an attention mask always given and as long as the inputs, they are constant for every shape
    # (tests/test_embed_backends.py checks the vectors against torch at many lengths)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Pooled(model),
            inputs,
            str(onnx_path),
            input_names=names,
            output_names=["sentence_embedding"],
            dynamic_axes={**{n: {0: "batch", 1: "sequence"} for n in names}, "sentence_embedding": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )
    ov.save_model(ov.convert_model(str(onnx_path)), str(out / "model.xml"), compress_to_fp16=False)
    onnx_path.unlink()


class OpenVINOEncoder:
    """Batches of texts -> pooled vectors (mean or CLS), on OpenVINO's CPU plugin.

    Args:
        model_dir: a local sentence-transformers model folder (see :func:`exportable`).
        precision: ``"bf16"`` or ``"f32"``: OpenVINO's ``INFERENCE_PRECISION_HINT``. ``f32`` runs
            every matrix product in fp32 (no bf16 kernels, even where the CPU has them).
        threads: ``INFERENCE_NUM_THREADS`` (None: the plugin's choice, one per core).
        hint: ``PERFORMANCE_HINT``: ``"THROUGHPUT"`` (default when ``threads`` is None: several
            streams of one thread each, fed by :meth:`encode_batches` with as many requests in
            flight; on 2 cores 2 x 1 thread embedded 400 Laravel chunks 1.6x (fp32) and 1.9x (int8)
            faster than one 2-thread stream, best of 3 on a shared machine) or ``"LATENCY"`` (one
            stream: the default with ``threads``, i.e. for single queries).
        int8: ``ir`` is the int8 model (:func:`esrag.embedding.quantize.quantized_model`: NNCF
            post-training quantization, cached); ``precision`` then applies to the ops left in
            floating point. Recorded as ``self.int8``.
        ir: the OpenVINO IR (``model.xml``) to run; None: the fp32 export (:func:`exported_model`).

    ``encode(texts)`` returns array [len(texts), dims] float32 (not normalised); texts are cut
    to the model's window (``max_seq_length`` wordpieces) by the tokenizer, before padding.
    """

    def __init__(
        self,
        model_dir: Path,
        precision: str = "f32",
        threads: int | None = None,
        int8: bool = False,
        hint: str | None = None,
        ir: Path | None = None,
    ) -> None:
        import openvino as ov
        from tokenizers import Tokenizer

        self.model_dir = model_dir
        self.precision = precision
        self.int8 = int8
        self.max_length = max_seq_length(model_dir)
        self.xml = ir if ir is not None else exported_model(model_dir)
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(self.max_length)
        self._tokenizer.no_padding()
        self._core = ov.Core()
        self.hint = hint or ("LATENCY" if threads else "THROUGHPUT")
        config: dict[str, Any] = {
            "INFERENCE_PRECISION_HINT": precision,
            "PERFORMANCE_HINT": self.hint,
            "CACHE_DIR": str(self.xml.parent / "compiled"),
        }
        if threads:
            config["INFERENCE_NUM_THREADS"] = threads
        self._compiled = self._core.compile_model(str(self.xml), "CPU", config)
        self._request = self._compiled.create_infer_request()
        # requests in flight for encode_batches: what the plugin says its streams can use (1 for LATENCY)
        self.in_flight = max(1, min(8, int(self._compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))))
        self._queue: Any = ov.AsyncInferQueue(self._compiled, self.in_flight) if self.in_flight > 1 else None
        self.dims = int(self._compiled.output(0).get_partial_shape()[1].get_length())

    def token_counts(self, texts: list[str]) -> list[int]:
        """Wordpieces per text after truncation to the window (special tokens included)."""
        return [len(ids) for ids in self.tokenize(texts)]

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        """Token ids per text, cut to the window (``max_seq_length``), not padded."""
        return [e.ids for e in self._tokenizer.encode_batch(texts)]

    def encode(self, texts: list[str]) -> np.ndarray:
        """Array [len(texts), dims] float32: one forward pass over the padded batch."""
        return self.encode_ids(self.tokenize(texts))

    def encode_ids(self, batch: list[list[int]]) -> np.ndarray:
        """Array [len(batch), dims] float32 for token-id lists (from :meth:`tokenize`), padded to
        the longest of the batch: one forward pass."""
        self._request.infer(model_inputs(batch))
        # the output tensor read directly, a copy (the request reuses its buffer): indexing the
        # OVDict ``infer`` returns goes through a singledispatch per call, ~10 % of the time a
        # search holds the interpreter lock under 8 clients (py-spy --gil, issue 39)
        return np.array(self._request.get_output_tensor(0).data, dtype=np.float32)

    def encode_batches(self, batches: list[list[list[int]]]) -> list[np.ndarray]:
        """:meth:`encode_ids` of each batch, with up to ``in_flight`` batches running at once
        (OpenVINO ``AsyncInferQueue``); arrays in the order of ``batches``. Not reentrant:
        callers serialise (the embedder holds a lock)."""
        if self._queue is None or len(batches) < 2:
            return [self.encode_ids(b) for b in batches]
        out: list[np.ndarray | None] = [None] * len(batches)

        def done(request: Any, slot: int) -> None:
            out[slot] = np.array(request.get_output_tensor(0).data, dtype=np.float32)  # a copy: the buffer is reused

        self._queue.set_callback(done)
        for slot, batch in enumerate(batches):
            self._queue.start_async(model_inputs(batch), slot)
        self._queue.wait_all()
        missing = [slot for slot, a in enumerate(out) if a is None]
        if missing:
            raise RuntimeError(f"OpenVINO returned no result for batches {missing}")
        return [a for a in out if a is not None]


def model_inputs(batch: list[list[int]]) -> dict[str, np.ndarray]:
    """The exported graph's inputs for token-id lists, padded to the longest: ``input_ids``,
    ``attention_mask``, ``token_type_ids``, each int64 array [len(batch), longest]."""
    width = max(len(ids) for ids in batch)
    ids = np.zeros((len(batch), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, seq in enumerate(batch):
        ids[row, : len(seq)] = seq
        mask[row, : len(seq)] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def available() -> bool:
    """Whether the ``openvino`` and ``tokenizers`` packages are installed (nothing is imported)."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("openvino", "tokenizers"))
