"""``esrag ask`` fits the LLM's context window: the window is read from the server (the stand-in
reports it like Ollama's /api/show, llama.cpp's /props and vLLM's /v1/models, and rejects an
over-long request with HTTP 400 like a real server), and the packed context leaves room for the
prompt and the answer. Also ``POST /ask`` of ``esrag serve``."""

from __future__ import annotations

import json

import httpx
import pytest

from esrag.llm_window import DEFAULT_CONTEXT_TOKENS, context_window
from llm_standin import StandIn
from serve_helpers import Server, ingest, make_docs, run_cli

QUESTION = "How do I run the scheduler every minute with cron on the server?"


@pytest.fixture(scope="module")
def index_env(tmp_path_factory):
    base = tmp_path_factory.mktemp("ask-window")
    docs, evil = make_docs(base / "docs")
    env = {"ESRAG_DB": str(base / "index.db"), "ESRAG_LLM_CACHE": str(base / "llm.db")}
    ingest(env, docs, evil)
    return env


def test_the_window_is_read_from_the_server_or_defaults():
    with StandIn(context_window=2048) as s:
        assert context_window("ollama", s.url, "qwen2.5:7b") == (2048, "ollama /api/show parameters num_ctx")
        assert context_window("openai", s.url + "/v1", "standin") == (2048, "llama.cpp /props n_ctx")
    with StandIn(context_window=8192, report_window=False) as s:
        assert context_window("openai", s.url + "/v1", "standin") == (DEFAULT_CONTEXT_TOKENS, "default")
        assert context_window("ollama", s.url, "qwen2.5:7b")[0] == 4096  # model_info context_length 32768, capped
    assert context_window("openai", "http://127.0.0.1:1/v1", "x") == (DEFAULT_CONTEXT_TOKENS, "default")


def test_standin_rejects_an_over_long_request_like_a_real_server():
    with StandIn(context_window=100) as s:
        r = httpx.post(
            s.url + "/v1/chat/completions",
            json={"model": "standin", "max_tokens": 80, "messages": [{"role": "user", "content": "word " * 40}]},
        )
        assert r.status_code == 400 and "maximum context length is 100 tokens" in r.json()["error"]["message"]


@pytest.mark.integration
@pytest.mark.parametrize("provider,window", [("openai", 4096), ("ollama", 2048)])
def test_ask_fits_the_window_the_server_reports(index_env, provider, window):
    with StandIn(context_window=window) as s:
        url = f"{s.url}/v1" if provider == "openai" else s.url
        env = {**index_env, "ESRAG_LLM": f"{provider}:{'standin' if provider == 'openai' else 'qwen2.5:7b'}", "ESRAG_LLM_URL": url}
        out = run_cli(["ask", QUESTION, "--json", "--budget", "3500"], env)
        answer = json.loads(out.stdout)
        assert answer["abstained"] is False and answer["citations"]
        chat = [c for c in s.calls() if c.path in ("/v1/chat/completions", "/api/chat")][-1]
        asked = s.requested_tokens(chat.path, chat.body, chat.prompt)
        assert window * 0.5 < asked <= window  # the context was packed, and fits with the answer's tokens


@pytest.mark.integration
def test_without_fitting_the_same_ask_is_rejected(index_env):
    """The control: told the window is larger than the server's, ask sends too much and the
    server's 400 comes back as a one-line error."""
    with StandIn(context_window=4096) as s:
        env = {**index_env, "ESRAG_LLM": "openai:standin", "ESRAG_LLM_URL": f"{s.url}/v1", "ESRAG_ANSWER__CONTEXT_TOKENS": "32768"}
        out = run_cli(["ask", QUESTION, "--json", "--budget", "3500"], env, check=False)
        assert out.returncode == 1 and "maximum context length is 4096" in out.stderr, out.stderr


@pytest.mark.integration
def test_post_ask_through_the_server(index_env):
    with StandIn(context_window=4096) as s:
        server = Server(["serve"], {**index_env, "ESRAG_LLM": "openai:standin", "ESRAG_LLM_URL": f"{s.url}/v1"})
        try:
            r = httpx.post(server.url + "/ask", json={"question": QUESTION, "corpus": ["laravel"]}, timeout=120)
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["abstained"] is False and body["citations"][0]["source_path"] == "scheduling.md"
            assert httpx.post(server.url + "/ask", json={"question": QUESTION, "corpus": ["nope"]}).status_code == 404
        finally:
            server.stop()
