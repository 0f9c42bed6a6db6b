"""Session memory for agents (issue 38) through the official MCP client: ``esrag mcp
--session-memory`` over stdio and streamable HTTP on a real index made by the real CLI. Within one
session a repeated search leaves out every block the first sent in full and names it, the freed
budget goes to further hits, get_page leaves out what a search sent, ``resend=true`` sends it
again, and two sessions never share a memory. (With memory off a repeated call answers the same:
tests/test_mcp.py's ``again == md``.)"""

from __future__ import annotations

import json
from contextlib import asynccontextmanager

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from esrag.serve.session_memory import Sent, SessionMemory
from esrag.tokens import count_tokens
from serve_helpers import ESRAG, Server, clean_env, indexed_env

pytestmark = pytest.mark.integration

QUERY = {"query": "schedule a task every minute", "corpus": "laravel", "token_budget": 1200}


@pytest.fixture(scope="module")
def index_env(tmp_path_factory):
    return indexed_env(tmp_path_factory.mktemp("memory"))


def text_of(result) -> str:
    assert not result.is_error, result.content
    return result.content[0].text


async def search(session: ClientSession, **extra) -> dict:
    return json.loads(text_of(await session.call_tool("search_docs", {**QUERY, "format": "json", **extra})))


async def one_session(session: ClientSession) -> dict:
    """The memory's contract within one session; returns the first response's hits."""
    await session.initialize()
    first = await search(session)
    whole = [h for h in first["hits"] if not h.get("truncated")]
    assert whole and "already_sent" not in first
    raw = text_of(await session.call_tool("search_docs", {**QUERY, "format": "json"}))
    second = json.loads(raw)
    for h in whole:  # every block the first sent in full is left out, and named
        assert h["text"].strip() not in "\n".join(x["text"] for x in second["hits"]), h["section_path"]
    gone = second["already_sent"]
    assert gone["total"] >= len(whole) and "resend=true" in gone["resend"]
    assert {(h["source_path"], h["start_line"]) for h in whole} <= {(g["source_path"], g["start_line"]) for g in gone["listed"]}
    for g in gone["listed"]:  # only what the first sent is left out: never the unsent part of a hit cut to fit
        assert any(
            h["source_path"] == g["source_path"] and h["start_line"] <= g["start_line"] <= g["end_line"] <= h["end_line"]
            for h in first["hits"]
        ), g
    # the freed budget went to further hits, still within the budget
    assert second["hits"] and count_tokens(raw) <= QUERY["token_budget"]
    assert not {(h["source_path"], h["start_line"]) for h in second["hits"]} & {(h["source_path"], h["start_line"]) for h in whole}
    # Markdown: the left-out hits named one line each (section path — where), how to get them again
    md = text_of(await session.call_tool("search_docs", QUERY))
    assert "already sent in this session (resend=true sends them again)" in md and count_tokens(md) <= QUERY["token_budget"]
    listed = [line for line in md.splitlines() if line.startswith("- ") and " — " in line]
    assert any(
        line.startswith(f"- {whole[0]['section_path']} — {whole[0]['source_path']} (lines {whole[0]['start_line']}-") for line in listed
    )
    # resend=true sends them again
    again = await search(session, resend=True)
    assert whole[0]["text"].strip() in "\n".join(h["text"] for h in again["hits"]) and "already_sent" not in again
    # get_page after the searches: the sections sent are one line each in their place, the rest in full
    top = whole[0]
    snippet = max(top["text"].split("\n\n"), key=len).strip()  # one paragraph: inside one chunk
    page = text_of(await session.call_tool("get_page", {"path": top["source_path"], "corpus": "laravel", "token_budget": 8000}))
    assert snippet not in page and count_tokens(page) <= 8000
    marker = f"[Already sent in this session: {top['section_path']} — {top['source_path']}; get_page("
    assert marker in page and "resend=true) sends it again]" in page
    assert page.startswith("# Task Scheduling")
    full = text_of(
        await session.call_tool("get_page", {"path": top["source_path"], "corpus": "laravel", "token_budget": 8000, "resend": True})
    )
    assert snippet in full and "[Already sent in this session" not in full
    # what get_page sent whole is not sent again by get_page either
    twice = text_of(await session.call_tool("get_page", {"path": top["source_path"], "corpus": "laravel", "token_budget": 8000}))
    assert count_tokens(twice) < count_tokens(full) / 2
    # outline and code examples are unaffected (nothing left out, nothing recorded)
    outline = text_of(await session.call_tool("search_docs", {**QUERY, "format": "outline"}))
    assert top["section_path"] in outline
    return first


def test_stdio_session_memory(index_env):
    params = StdioServerParameters(command=ESRAG, args=["mcp", "--session-memory"], env=clean_env(index_env))

    async def main() -> dict:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            return await one_session(session)

    assert anyio.run(main)["hits"]


def test_settings_key_turns_it_on(index_env, tmp_path):
    """``[mcp] session_memory = true`` (here as its variable ESRAG_MCP__SESSION_MEMORY) is the flag."""
    env = {**index_env, "ESRAG_MCP__SESSION_MEMORY": "true"}
    params = StdioServerParameters(command=ESRAG, args=["mcp"], env=clean_env(env))

    async def main() -> tuple[dict, dict]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            assert "Session memory is on" in init.instructions
            return await search(session), await search(session)

    first, second = anyio.run(main)
    assert second["already_sent"]["total"] >= 1 and first["hits"] != second["hits"]


def test_http_sessions_do_not_share_memory(index_env):
    """Over streamable HTTP behind an API key: each MCP session (mcp-session-id) has its own memory."""
    s = Server(["mcp", "--http", "--session-memory", "--api-key", "k3y"], index_env, ready_path="/mcp")

    @asynccontextmanager
    async def connect():
        client = create_mcp_http_client(headers={"Authorization": "Bearer k3y"})
        async with (
            client,
            streamable_http_client(s.url + "/mcp", http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            yield session

    async def main() -> None:
        async with connect() as a:
            first = await one_session(a)
            async with connect() as b:
                await b.initialize()
                fresh = await search(b)  # another session: nothing of a's left out
                assert fresh == first
                assert "already_sent" in await search(b)  # its own memory works
            assert "already_sent" in await search(a)

    try:
        anyio.run(main)
    finally:
        assert s.stop() == 0


def test_memory_bounds():
    """At most max_sessions sessions (least recently used out) and max_blocks blocks per session (oldest out)."""
    memory = SessionMemory(max_sessions=2, max_blocks=3)
    a = memory.session(("", "a"))
    for i in range(5):
        a.add(f"k{i}")
    assert len(a) == 3 and "k0" not in a and "k4" in a
    memory.session(("", "b"))
    assert memory.session(("", "a")) is a  # used: now the most recent
    memory.session(("", "c"))  # b is forgotten, not a
    assert len(memory) == 2 and memory.session(("", "a")) is a and len(memory.session(("", "b"))) == 0
    assert isinstance(memory.session(("key1", "a")), Sent) and memory.session(("key1", "a")) is not a  # keys never share
