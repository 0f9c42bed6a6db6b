"""``esrag mcp`` through the official SDK's own client (PyPI ``mcp`` 2.x): over stdio (spawning
``.venv/bin/esrag mcp`` with an environment pointing at a real test index) and over streamable
HTTP (``esrag mcp --http``, with and without the API key)."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from esrag.tokens import count_tokens
from serve_helpers import ESRAG, Server, clean_env, indexed_env


@pytest.fixture(scope="module")
def index_env(tmp_path_factory):
    return indexed_env(tmp_path_factory.mktemp("mcp"))


def payload(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content if result.structured_content else json.loads(result.content[0].text)


def error_text(result) -> str:
    assert result.is_error
    text = result.content[0].text
    assert "\n" not in text and "Traceback" not in text
    return text


async def exercise(session: ClientSession) -> dict:
    """Every tool, good and bad arguments; returns what was seen."""
    init = await session.initialize()
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == {"search_docs", "get_page", "list_corpora"}
    assert all(t.annotations and t.annotations.read_only_hint for t in tools.values())
    assert "laravel (680 chunks, 6 pages)" in init.instructions or "laravel (" in init.instructions
    corpora = payload(await session.call_tool("list_corpora", {}))["corpora"]
    assert set(corpora) == {"laravel", "evil"} and corpora["laravel"]["sources"] == 6
    hits = payload(await session.call_tool("search_docs", {"query": "schedule a task every minute", "corpus": "laravel",
                                                           "token_budget": 400}))["hits"]
    assert hits[0]["source_path"] == "scheduling.md" and hits[0]["section_path"].startswith("Task Scheduling")
    assert {"section_path", "url", "source_path", "start_line", "end_line", "text"} <= set(hits[0])
    assert sum(h["tokens"] for h in hits) == 400 and sum(count_tokens(h["text"]) for h in hits) <= 400 + len(hits)
    few = payload(await session.call_tool("search_docs", {"query": "queues", "k": 2}))["hits"]
    assert len(few) == 2
    page = payload(await session.call_tool("get_page", {"path": hits[0]["source_path"], "corpus": "laravel"}))
    assert page["source_path"] == "scheduling.md" and len(page["sections"]) > 10 and "->everyMinute()" in page["text"]
    errors = [
        error_text(await session.call_tool("search_docs", {"query": "  "})),
        error_text(await session.call_tool("search_docs", {"query": "queues", "corpus": "nope"})),
        error_text(await session.call_tool("search_docs", {"query": "queues", "token_budget": -1})),
        error_text(await session.call_tool("search_docs", {"query": "queues", "k": 10**9})),
        error_text(await session.call_tool("get_page", {"path": "../../etc/passwd"})),
    ]
    assert "empty" in errors[0] and "unknown corpus 'nope'" in errors[1] and "token_budget" in errors[2]
    assert "k must be" in errors[3] and "no indexed page" in errors[4]
    again = payload(await session.call_tool("search_docs", {"query": "schedule a task every minute", "corpus": "laravel",
                                                            "token_budget": 400}))["hits"]
    assert again == hits  # still answering, and the same
    return {"hits": hits}


def test_stdio_through_the_sdk_client(index_env):
    params = StdioServerParameters(command=ESRAG, args=["mcp"], env=clean_env(index_env))

    async def main() -> dict:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            return await exercise(session)

    seen = anyio.run(main)
    assert seen["hits"]


def test_streamable_http_through_the_sdk_client(index_env):
    s = Server(["mcp", "--http"], index_env, ready_path="/mcp")

    async def main() -> dict:
        async with streamable_http_client(s.url + "/mcp") as (read, write), ClientSession(read, write) as session:
            return await exercise(session)

    try:
        assert anyio.run(main)["hits"]
    finally:
        assert s.stop() == 0


def test_store_down_is_a_tool_error_not_a_crash(tmp_path):
    env = {"ESRAG_ES_URL": "http://127.0.0.1:1", "ESRAG_INDEX": "esrag-mcp-down"}
    params = StdioServerParameters(command=ESRAG, args=["mcp"], env=clean_env(env))

    async def main() -> list[str]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            assert "unknown right now" in init.instructions
            return [error_text(await session.call_tool("search_docs", {"query": "queues"})),
                    error_text(await session.call_tool("list_corpora", {}))]

    texts = anyio.run(main)
    assert all("127.0.0.1:1" in t and "connection refused" in t.lower() for t in texts), texts


def test_http_needs_the_api_key_when_one_is_set(index_env):
    s = Server(["mcp", "--http", "--api-key", "k3y"], index_env, ready_path="/mcp")
    try:
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        headers = {"accept": "application/json, text/event-stream"}
        assert httpx.post(s.url + "/mcp", json=body, headers=headers).status_code == 401
        ok = httpx.post(s.url + "/mcp", json=body, headers={**headers, "authorization": "Bearer k3y"})
        assert ok.status_code == 200
    finally:
        s.stop()
