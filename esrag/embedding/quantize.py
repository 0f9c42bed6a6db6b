"""The int8 model of the ``st:`` embedder's OpenVINO backend: the fp32 export
(:func:`esrag.embedding.openvino_backend.exported_model`) quantized once by NNCF's post-training
quantization (PyPI ``nncf``, ``nncf.quantize``), calibrated on a fixed set of passages that ships
with esrag, and cached beside the fp32 export.

Why: CPUs without native bf16 matrix units (AVX-512 or AVX2 with VNNI: most laptops, CI runners
and cloud VMs without AMX) multiply int8 with VNNI at several times the fp32 rate; OpenVINO runs
the quantized graph's MatMuls in int8 and everything else in fp32.

The recipe (:data:`RECIPE`): ``nncf.quantize(model, dataset, model_type=TRANSFORMER,
preset=MIXED, subset_size=300, ignored_scope=...)``: per-channel symmetric int8 weights,
asymmetric int8 activations (MIXED), NNCF's SmoothQuant and fast bias correction (on by default
for transformers). Left in fp32 (the ignored scope), chosen on Qasper rec@512t against torch fp32
(benchmarks/README.md "Embedding backends and precisions"): the feed-forward output MatMuls (``layer.N/output/dense``, whose inputs are the
GELU outputs with outlier channels) and the two activation x activation MatMuls of attention
(``attention/self/MatMul``: Q.K^T, ``MatMul_1``: softmax.V). With only the FFN outputs kept,
vectors were at cosine 0.998 mean / 0.992 min to fp32 and hybrid rec@512t fell 1.0 point; with
attention kept too, 0.999 / 0.998 and rec@512t within 0.5 point. Softmax and LayerNorm are never
quantized by NNCF's transformer model type.

The calibration set (``esrag/embedding/data/calibration.json``): 300 passages as esrag embeds
them (section path + chunk text of the default header-led chunker), evenly spaced over the
Pydantic docs (pydantic/pydantic ``docs/``, MIT) and the Rust async book (rust-lang/async-book,
MIT OR Apache-2.0), both in ``../shared/data/corpora``. It is never drawn from the user's own
tree, and no hub is asked for anything.

The cache: ``<fp32 export folder>/int8-<key>/model.xml``; the fp32 folder's name already covers
the model bytes and the versions of torch, transformers and openvino; ``<key>`` adds the SHA-256
of the calibration set, the recipe and the installed ``nncf`` version, so any change quantizes
afresh.
"""

from __future__ import annotations

import hashlib
import json
import threading
from functools import cache
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from esrag.embedding.openvino_backend import build_once, exported_model, max_seq_length, model_inputs

# The quantization recipe; part of the cache key (change it and the model is quantized afresh).
RECIPE: dict[str, Any] = {
    "format": "1",
    "model_type": "TRANSFORMER",
    "preset": "MIXED",
    "subset_size": 300,
    # node names of the exported graph (torch.onnx.export of transformers' BertModel)
    "ignored_patterns": [r".*/layer\.\d+/output/dense/MatMul", r".*/attention/self/MatMul(_1)?$"],
}


@cache
def calibration_texts() -> tuple[str, ...]:
    """The shipped calibration passages (see the module docstring for their sources)."""
    raw = (resources.files("esrag.embedding") / "data" / "calibration.json").read_text(encoding="utf-8")
    return tuple(json.loads(raw)["texts"])


def calibration_hash() -> str:
    """SHA-256 (hex) of the calibration passages, in order."""
    h = hashlib.sha256()
    for t in calibration_texts():
        h.update(t.encode("utf-8") + b"\0")
    return h.hexdigest()


def nncf_version() -> str:
    """The installed ``nncf`` version (package metadata), or ``"missing"``."""
    try:
        return metadata.version("nncf")
    except metadata.PackageNotFoundError:
        return "missing"


def available() -> bool:
    """Whether NNCF is installed (nothing is imported)."""
    return nncf_version() != "missing"


def quantization_key(recipe: dict[str, Any] | None = None) -> str:
    """16 hex digits over the recipe, the calibration set's hash and the nncf version."""
    blob = json.dumps({"recipe": recipe or RECIPE, "calibration": calibration_hash(), "nncf": nncf_version()}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def int8_dir_for(model_dir: Path) -> Path:
    """The cache folder of ``model_dir``'s int8 model (inside its fp32 export folder)."""
    return exported_model(model_dir).parent / f"int8-{quantization_key()}"


_lock = threading.Lock()


def quantized_model(model_dir: Path) -> Path:
    """The cached int8 IR (``model.xml``) of ``model_dir``, quantizing it first when absent (about
    1-2 min on 2 cores: NNCF runs the fp32 model over the calibration set; later loads read the
    cache). Written under a temporary name and renamed when complete.

    Raises:
        NotExportable: the model's shape is not supported.
        ImportError: ``nncf`` is not installed.
    """

    def build(tmp: Path) -> None:
        _quantize(model_dir, exported_model(model_dir), tmp / "model.xml")
        (tmp / "recipe.json").write_text(
            json.dumps(
                {"recipe": RECIPE, "calibration_sha256": calibration_hash(), "nncf": nncf_version(), "texts": len(calibration_texts())},
                indent=1,
            )
        )

    with _lock:
        return build_once(int8_dir_for(model_dir), build)


def _quantize(model_dir: Path, fp32_xml: Path, out: Path) -> None:
    import contextlib
    import logging
    import sys

    import nncf
    import openvino as ov
    from tokenizers import Tokenizer

    logging.getLogger("nncf").setLevel(logging.WARNING)  # it logs every ignored node at INFO
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(max_seq_length(model_dir))
    tokenizer.no_padding()
    ids = [e.ids for e in tokenizer.encode_batch(list(calibration_texts()))]
    dataset = nncf.Dataset(ids, lambda one: model_inputs([one]))  # one passage per item, its own length
    # NNCF draws progress bars on stdout: keep stdout for the caller (``esrag ingest --json``)
    with contextlib.redirect_stdout(sys.stderr):
        quantized = nncf.quantize(
            ov.Core().read_model(str(fp32_xml)),
            dataset,
            model_type=nncf.ModelType[RECIPE["model_type"]],
            preset=nncf.QuantizationPreset[RECIPE["preset"]],
            subset_size=RECIPE["subset_size"],
            ignored_scope=nncf.IgnoredScope(patterns=list(RECIPE["ignored_patterns"])),
        )
    ov.save_model(quantized, str(out), compress_to_fp16=False)
