"""LLM providers over real HTTP: the official ``ollama`` and ``openai`` clients against the local
stand-in server (tests/llm_standin.py), which speaks both wire formats. No mocks: every call is
a real request on a real socket; failures are real 500s, real timeouts, real garbage bodies."""

from __future__ import annotations

import socket
import threading

import pytest

from esrag import plugins
from esrag.config import Settings
from esrag.errors import EsragError, PluginError
from esrag.llm.cache import CachedLLM, LLMCache, cache_key
from esrag.llm.clients import LLMError, LLMOptions, OllamaLLM, OpenAILLM, make_llm, parse_llm_spec
from esrag.tokens import count_tokens
from llm_standin import Reply, StandIn

MSG = [{"role": "user", "content": "Return a JSON object with a title."}]


@pytest.fixture
def standin():
    with StandIn() as s:
        yield s


def ollama(s: StandIn, **kw) -> OllamaLLM:
    return OllamaLLM("qwen2.5:7b", s.url, **{"timeout": 5, **kw})


def openai_llm(s: StandIn, **kw) -> OpenAILLM:
    return OpenAILLM("standin-model", s.url + "/v1", **{"api_key": "sk-test", "timeout": 5, **kw})


# -- request bodies: determinism, JSON mode, output limits --------------------------------------
def test_ollama_chat_sends_temperature_seed_json_and_limits(standin):
    standin.queue('{"title": "x"}')
    reply = ollama(standin).chat(MSG, LLMOptions(max_tokens=77, num_ctx=8192))
    body = standin.calls("/api/chat")[0].body
    assert body["model"] == "qwen2.5:7b" and body["stream"] is False and body["format"] == "json"
    assert body["options"] == {"temperature": 0.0, "seed": 0, "num_predict": 77, "num_ctx": 8192}
    assert body["messages"] == MSG
    assert reply.text == '{"title": "x"}'
    assert reply.tokens_in == count_tokens(MSG[0]["content"]) and reply.tokens_out == count_tokens('{"title": "x"}')
    assert not reply.estimated and reply.seconds > 0


def test_ollama_generate_endpoint_and_seed_override(standin):
    standin.queue("plain text")
    reply = ollama(standin).complete("situate this chunk", LLMOptions(seed=3, json=False, max_tokens=120))
    req = standin.calls("/api/generate")[0]
    assert req.body["prompt"] == "situate this chunk" and req.seed == 3
    assert req.body["options"]["num_predict"] == 120 and not req.body.get("format")
    assert reply.text == "plain text"


def test_openai_chat_sends_response_format_seed_and_max_tokens(standin):
    standin.queue('{"a": 1}')
    reply = openai_llm(standin).chat(MSG, LLMOptions(max_tokens=55, seed=2))
    req = standin.calls("/v1/chat/completions")[0]
    assert req.body["response_format"] == {"type": "json_object"}
    assert (req.body["temperature"], req.body["seed"], req.body["max_tokens"]) == (0.0, 2, 55)
    assert req.body["model"] == "standin-model" and req.body["messages"] == MSG
    assert reply.tokens_in == count_tokens(MSG[0]["content"]) and reply.tokens_out == count_tokens('{"a": 1}')


def test_openai_plain_text_mode_has_no_response_format(standin):
    standin.queue("context sentence")
    assert openai_llm(standin).complete("x", LLMOptions(json=False)).text == "context sentence"
    assert "response_format" not in standin.calls()[0].body


def test_openai_key_is_sent_as_bearer_and_never_shown(standin):
    llm = openai_llm(standin, api_key="sk-SECRET-123")
    assert "SECRET" not in repr(llm) and "SECRET" not in str(llm.__dict__.get("url"))
    settings = Settings(llm_api_key="sk-SECRET-123")
    assert "SECRET" not in repr(settings) and "SECRET" not in str(settings.model_dump())


# -- failures: 500s, timeouts, garbage, connection refused, fatal statuses -----------------------
@pytest.mark.parametrize("make", [ollama, openai_llm], ids=["ollama", "openai"])
def test_500_is_retried_then_raised(standin, make):
    standin.queue(Reply(status=500), Reply('{"ok": true}'))
    assert make(standin, retries=1).chat(MSG, LLMOptions()).text == '{"ok": true}'
    standin.queue(Reply(status=500), Reply(status=500))
    with pytest.raises(LLMError, match="HTTP 500") as err:
        make(standin, retries=1).chat(MSG, LLMOptions())
    assert err.value.status == 500 and not err.value.fatal
    assert len(standin.requests) == 4


@pytest.mark.parametrize("make", [ollama, openai_llm], ids=["ollama", "openai"])
def test_timeout_raises_llm_error_naming_the_setting(standin, make):
    standin.queue(Reply("late", delay=2.0))
    with pytest.raises(LLMError, match="no reply within 0.5s.*ESRAG_LLM_TIMEOUT"):
        make(standin, timeout=0.5, retries=0).chat(MSG, LLMOptions())


@pytest.mark.parametrize("make", [ollama, openai_llm], ids=["ollama", "openai"])
def test_body_that_is_not_json_raises_llm_error(standin, make):
    standin.queue(Reply(raw=b"<html>proxy error</html>"))
    with pytest.raises(LLMError):
        make(standin, retries=0).chat(MSG, LLMOptions())


@pytest.mark.parametrize("make", [ollama, openai_llm], ids=["ollama", "openai"])
def test_null_and_empty_content_come_back_as_empty_text(standin, make):
    standin.queue(Reply(None), Reply(""))
    llm = make(standin)
    assert llm.chat(MSG, LLMOptions()).text == ""
    assert llm.chat(MSG, LLMOptions()).text == ""


@pytest.mark.parametrize("make", [ollama, openai_llm], ids=["ollama", "openai"])
def test_404_is_fatal(standin, make):
    standin.queue(Reply(status=404))
    with pytest.raises(LLMError) as err:
        make(standin, retries=3).chat(MSG, LLMOptions())
    assert err.value.fatal and err.value.status == 404
    assert len(standin.requests) == 1  # fatal errors are not retried


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_connection_refused_names_the_way_out():
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(LLMError, match="cannot connect.*ollama serve"):
        OllamaLLM("qwen2.5:7b", url, retries=0).chat(MSG, LLMOptions())
    with pytest.raises(LLMError, match="cannot connect.*ESRAG_LLM_URL"):
        OpenAILLM("m", url + "/v1", retries=0).chat(MSG, LLMOptions())


def test_usage_missing_falls_back_to_cl100k_estimates(standin):
    standin.queue(Reply("abc def", tokens_in=0, tokens_out=0))
    reply = openai_llm(standin).chat(MSG, LLMOptions())
    assert reply.estimated and reply.tokens_in == count_tokens(MSG[0]["content"]) and reply.tokens_out == count_tokens("abc def")


# -- bounded concurrency ---------------------------------------------------------------------------
@pytest.mark.parametrize("make", [ollama, openai_llm], ids=["ollama", "openai"])
def test_at_most_concurrency_calls_in_flight(standin, make):
    standin.queue(*[Reply("{}", delay=0.2) for _ in range(9)])
    llm = make(standin, concurrency=3)
    threads = [threading.Thread(target=llm.chat, args=(MSG, LLMOptions())) for _ in range(9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert standin.max_in_flight == 3 and len(standin.requests) == 9


def test_concurrency_must_be_positive(standin):
    with pytest.raises(EsragError, match="ESRAG_LLM_CONCURRENCY"):
        ollama(standin, concurrency=0)


# -- registry, specs, settings ---------------------------------------------------------------------
def test_providers_are_entry_points():
    assert {"ollama", "openai"} <= set(plugins.names("esrag.llms"))
    assert plugins.load("esrag.llms", "ollama") is OllamaLLM
    assert plugins.load("esrag.llms", "openai") is OpenAILLM


def test_spec_parsing():
    assert parse_llm_spec("ollama:qwen2.5:7b") == ("ollama", "qwen2.5:7b")
    assert parse_llm_spec("openai:gpt-4o-mini") == ("openai", "gpt-4o-mini")
    assert parse_llm_spec("ollama") == ("ollama", "")
    with pytest.raises(EsragError, match="--llm"):
        parse_llm_spec("")


def test_make_llm_from_settings_and_environment(standin, monkeypatch):
    monkeypatch.setenv("ESRAG_LLM_URL", standin.url)
    monkeypatch.setenv("ESRAG_LLM_CONCURRENCY", "2")
    monkeypatch.setenv("ESRAG_LLM_TIMEOUT", "7.5")
    settings = Settings()
    llm = make_llm(settings.llm, settings)
    assert isinstance(llm, OllamaLLM) and llm.spec == "ollama:qwen2.5:7b" and llm.concurrency == 2 and llm.timeout == 7.5
    assert OllamaLLM("").model == "qwen2.5:7b"
    standin.queue("{}")
    assert llm.chat(MSG, LLMOptions()).text == "{}"
    o = make_llm("openai:standin-model", Settings(llm_url=standin.url + "/v1", llm_api_key="k"))
    assert isinstance(o, OpenAILLM) and o.url == standin.url + "/v1"
    with pytest.raises(PluginError, match="installed: .*ollama"):
        make_llm("nosuch:model", settings)


# -- the cache in front of a provider -------------------------------------------------------------
def test_cache_hit_makes_no_call_and_other_seed_or_model_misses(standin, tmp_path):
    cache = LLMCache(tmp_path / "llm_cache.db")
    c = CachedLLM(ollama(standin), cache)
    first = c.chat(MSG, LLMOptions(), "p" * 64, "enrich")
    again = c.chat(MSG, LLMOptions(), "p" * 64, "enrich")
    assert len(standin.requests) == 1 and again.cached and again.text == first.text
    c.chat(MSG, LLMOptions(seed=1), "p" * 64, "enrich")
    c.chat(MSG, LLMOptions(), "q" * 64, "enrich")
    CachedLLM(OllamaLLM("llama3.2:1b", standin.url), cache).chat(MSG, LLMOptions(), "p" * 64, "enrich")
    assert len(standin.requests) == 4
    t = c.ledger.totals()
    assert (t.llm_calls, t.llm_cache_hits) == (3, 1)
    assert cache_key("ollama", "m", "a", "b", LLMOptions()) != cache_key("ollama", "m", "a", "b", LLMOptions(max_tokens=5))


def test_errors_are_not_cached_and_the_breaker_stops_calling(standin, tmp_path):
    c = CachedLLM(ollama(standin, retries=0), LLMCache(tmp_path / "c.db"), max_consecutive_errors=3)
    standin.queue(*[Reply(status=500)] * 3)
    for _ in range(3):
        with pytest.raises(LLMError):
            c.chat(MSG, LLMOptions(), "p", "enrich")
    assert c.gave_up and "3 errors in a row" in c.gave_up
    with pytest.raises(LLMError, match="not calling"):
        c.chat(MSG, LLMOptions(), "p", "enrich")
    assert len(standin.requests) == 3
    assert c.ledger.totals().llm_errors == 4
