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

# needs a service, a model or a subprocess (see tests/conftest.py)
pytestmark = pytest.mark.integration


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


def text_of(result) -> str:
    assert not result.is_error, result.content
    assert len(result.content) == 1 and not result.structured_content  # one copy of what the client reads
    return result.content[0].text


def md_hits(text: str) -> list[tuple[str, str]]:
    """(heading, where) of each hit of a Markdown search_docs response."""
    blocks = [b for b in text.split("\n## ")[0:] if b.strip()]
    blocks[0] = blocks[0].removeprefix("## ")
    return [(b.split("\n")[0], b.split("\n")[1]) for b in blocks]


async def check_schemas(session: ClientSession) -> None:
    """Issue 26: the input schemas state each argument's meaning, default and limits."""
    tools = {t.name: t for t in (await session.list_tools()).tools}
    search = tools["search_docs"].input_schema["properties"]

    def bound(prop: dict, key: str):
        for alt in [prop, *prop.get("anyOf", [])]:
            if key in alt:
                return alt[key]
        return None

    assert bound(search["query"], "maxLength") == 2000 and bound(search["k"], "maximum") == 100 and bound(search["k"], "minimum") == 1
    assert bound(search["token_budget"], "maximum") == 32_000 and bound(search["token_budget"], "minimum") == 100
    assert set(bound(search["format"], "enum")) == {"markdown", "json", "outline"} and set(bound(search["kind"], "enum")) == {"all", "code"}
    page = tools["get_page"].input_schema["properties"]
    assert {"path", "corpus", "doc_version", "section", "offset", "token_budget", "format"} <= set(page)
    assert bound(page["token_budget"], "maximum") == 32_000
    for props in (search, page):
        for name, prop in props.items():
            assert prop.get("description"), name
            assert name in ("query", "path") or "Default" in prop["description"], name


async def exercise(session: ClientSession) -> dict:
    """Every tool, good and bad arguments; returns what was seen."""
    init = await session.initialize()
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == {"search_docs", "get_page", "list_corpora", "resolve_library"}
    assert all(t.annotations and t.annotations.read_only_hint for t in tools.values())
    assert "laravel (680 chunks, 6 pages)" in init.instructions or "laravel (" in init.instructions
    await check_schemas(session)
    corpora = payload(await session.call_tool("list_corpora", {}))["corpora"]
    assert set(corpora) == {"laravel", "evil"} and corpora["laravel"]["sources"] == 6
    assert set(corpora["laravel"]["versions"]) == {""} and corpora["laravel"]["default_version"] == ""
    # the default: compact Markdown, the whole response within token_budget
    md = text_of(
        await session.call_tool("search_docs", {"query": "schedule a task every minute", "corpus": "laravel", "token_budget": 400})
    )
    assert count_tokens(md) <= 400 and not md.lstrip().startswith("{")
    seen = md_hits(md)
    assert seen[0][0].startswith("Task Scheduling") and seen[0][1].startswith("scheduling.md (lines ")
    # the JSON structure on request, within the same budget
    js = text_of(
        await session.call_tool(
            "search_docs", {"query": "schedule a task every minute", "corpus": "laravel", "token_budget": 400, "format": "json"}
        )
    )
    hits = json.loads(js)["hits"]
    assert count_tokens(js) <= 400 and hits[0]["source_path"] == "scheduling.md"
    assert {"section_path", "url", "source_path", "start_line", "end_line", "text"} <= set(hits[0])
    few = json.loads(text_of(await session.call_tool("search_docs", {"query": "queues", "k": 2, "format": "json"})))["hits"]
    assert len(few) == 2
    # a cheap look first (issue 38): one line per hit, each with its section path and where it is
    ask = {"query": "schedule a task every minute", "corpus": "laravel"}
    full, outline = (
        text_of(await session.call_tool("search_docs", ask)),
        text_of(await session.call_tool("search_docs", {**ask, "format": "outline"})),
    )
    entries = [line for line in outline.splitlines() if line.startswith("- **")]
    assert entries and entries[0].startswith("- **Task Scheduling") and all(" — " in e for e in entries)
    assert len(entries) >= len(md_hits(full)) and count_tokens(outline) < count_tokens(full) / 2
    assert all(len(line) <= 162 for line in outline.splitlines() if line.startswith("  "))
    # code examples only, under their sections
    code = text_of(await session.call_tool("search_docs", {**ask, "kind": "code", "token_budget": 1200}))
    blocks = [b for b in ("\n" + code).split("\n## ")[1:]]
    assert blocks and all(b.split("\n", 2)[2].lstrip("\n").startswith(("```", "    ")) for b in blocks), code
    assert "Schedule::" in code and count_tokens(code) <= 1200
    # pages: one copy within the budget, by path, by section, by path without its folder
    page = text_of(await session.call_tool("get_page", {"path": hits[0]["source_path"], "corpus": "laravel"}))
    assert count_tokens(page) <= 4000 and page.startswith("# Task Scheduling") and "->everyMinute()" in page
    small = text_of(await session.call_tool("get_page", {"path": "scheduling.md", "token_budget": 300}))
    assert count_tokens(small) <= 300 and "Continue: get_page(path='scheduling.md', offset=" in small
    offset = int(small.split("offset=")[1].split(")")[0])
    more = text_of(await session.call_tool("get_page", {"path": "scheduling.md", "token_budget": 300, "offset": offset}))
    assert f"Lines {offset}-" in more
    section = json.loads(
        text_of(await session.call_tool("get_page", {"path": "scheduling.md", "format": "json", "section": "Running the Scheduler"}))
    )
    assert "## Running the Scheduler" in section["text"].split("\n")[:2] and section["left_out"]["before"]["sections"] > 0
    assert "## Defining Schedules" not in section["text"] and section["section"] == "Running the Scheduler"
    errors = [
        error_text(await session.call_tool("search_docs", {"query": "  "})),
        error_text(await session.call_tool("search_docs", {"query": "queues", "corpus": "nope"})),
        error_text(await session.call_tool("search_docs", {"query": "queues", "token_budget": -1})),
        error_text(await session.call_tool("search_docs", {"query": "queues", "k": 10**9})),
        error_text(await session.call_tool("get_page", {"path": "../../etc/passwd"})),
        error_text(await session.call_tool("search_docs", {"query": "queues", "k": True})),
        error_text(await session.call_tool("search_docs", {"query": "queues", "token_budget": True})),
        error_text(await session.call_tool("search_docs", {"query": "q" * 2001})),
        error_text(await session.call_tool("get_page", {"path": "scheduler.md"})),
        error_text(await session.call_tool("get_page", {"path": "scheduling.md", "offset": False})),
    ]
    assert "empty" in errors[0] and "unknown corpus 'nope'" in errors[1] and errors[2].startswith("token_budget: ")
    assert errors[3].startswith("k: Input should be less than or equal to 100") and "no indexed page" in errors[4]
    assert errors[5] == "k: Input should be a valid integer (got True)" and errors[6].startswith("token_budget: ")
    assert errors[7].startswith("query: String should have at most 2000 characters")
    assert "nearest: scheduling.md" in errors[8] and "list_corpora" in errors[8] and "esrag " not in errors[8]
    assert errors[9].startswith("offset: ")
    again = text_of(
        await session.call_tool("search_docs", {"query": "schedule a task every minute", "corpus": "laravel", "token_budget": 400})
    )
    assert again == md  # still answering, and the same
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
            return [
                error_text(await session.call_tool("search_docs", {"query": "queues"})),
                error_text(await session.call_tool("list_corpora", {})),
            ]

    texts = anyio.run(main)
    assert all("127.0.0.1:1" in t and "connection refused" in t.lower() for t in texts), texts


def test_http_needs_the_api_key_when_one_is_set(index_env):
    s = Server(["mcp", "--http", "--api-key", "k3y"], index_env, ready_path="/mcp")
    try:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
        }
        headers = {"accept": "application/json, text/event-stream"}
        assert httpx.post(s.url + "/mcp", json=body, headers=headers).status_code == 401
        ok = httpx.post(s.url + "/mcp", json=body, headers={**headers, "authorization": "Bearer k3y"})
        assert ok.status_code == 200
    finally:
        s.stop()


def test_versions_and_urls_through_the_sdk_client(tmp_path):
    """Issues 26 and 30 end to end: list_corpora names each corpus's versions and default; a URL
    that search_docs returns is a path get_page accepts (its version and section with it); a
    page says which version it is."""
    import re
    import shutil
    import time

    from paths import LARAVEL
    from serve_helpers import run_cli

    env = {"ESRAG_DB": str(tmp_path / "v.db")}
    for version in ("11.x", "12.x"):
        root = tmp_path / version
        root.mkdir()
        shutil.copy(LARAVEL / "scheduling.md", root / "scheduling.md")
        run_cli(
            [
                "ingest",
                str(root),
                "--corpus",
                "lv",
                "--site",
                "plain",
                "--base-url",
                "https://laravel.com/docs/{doc_version}/",
                "--doc-version",
                version,
            ],
            env,
        )
        time.sleep(1.1)  # the next version is the more recently ingested one
    params = StdioServerParameters(command=ESRAG, args=["mcp"], env=clean_env(env))

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            lv = payload(await session.call_tool("list_corpora", {}))["corpora"]["lv"]
            assert set(lv["versions"]) == {"11.x", "12.x"} and lv["default_version"] == "12.x"
            md = text_of(
                await session.call_tool("search_docs", {"query": "run the scheduler with cron", "doc_version": "11.x", "token_budget": 800})
            )
            urls = re.findall(r"(?m)^## .+\n(https://\S+)", md)
            assert urls and all(u.startswith("https://laravel.com/docs/11.x/scheduling#") for u in urls)
            page = text_of(await session.call_tool("get_page", {"path": urls[0]}))
            assert "version 11.x (also indexed: 12.x)" in page.split("\n")[1]
            anchor = urls[0].split("#")[1]
            shown = json.loads(text_of(await session.call_tool("get_page", {"path": urls[0], "format": "json"})))
            assert shown["doc_version"] == "11.x" and shown["section"] == anchor and shown["versions"] == ["11.x", "12.x"]
            raw = text_of(await session.call_tool("get_page", {"path": "scheduling.md", "format": "json"}))
            default = json.loads(raw)
            assert default["doc_version"] == "12.x" and count_tokens(raw) <= 4000 and default["left_out"]["next"]["offset"]
            older = json.loads(
                text_of(
                    await session.call_tool(
                        "get_page", {"path": "https://laravel.com/docs/12.x/scheduling", "doc_version": "11.x", "format": "json"}
                    )
                )
            )
            assert older["doc_version"] == "11.x"

    anyio.run(main)


def test_languages_through_the_sdk_client_and_http(tmp_path):
    """Issue 36: a Starlight site with a Japanese translation, ingested as a user would. Without
    a language, MCP search_docs and GET /search answer from the default locale only; with
    ``language`` / ``lang`` from the translation; a bad code is a 422, not a 500."""
    from serve_helpers import run_cli

    site = tmp_path / "site"
    docs = site / "src" / "content" / "docs"
    (docs / "ja").mkdir(parents=True)
    (site / "astro.config.mjs").write_text(
        "import starlight from '@astrojs/starlight';\nexport default { site: 'https://x.dev', integrations: [starlight({ title: 'X', "
        "locales: { root: { label: 'English', lang: 'en' }, ja: { label: 'J' } } })] };\n",
        encoding="utf-8",
    )
    text = "## Formatter options\n\nSet the indent width of the formatter in biome.json with formatter.indentWidth.\n"
    (docs / "formatter.md").write_text("---\ntitle: Formatter\n---\n\n" + text, encoding="utf-8")
    (docs / "ja" / "formatter.md").write_text("---\ntitle: フォーマッター\n---\n\n" + text, encoding="utf-8")
    env = {"ESRAG_DB": str(tmp_path / "l.db")}
    run_cli(["ingest", str(site), "--corpus", "x"], env)
    query = "formatter indent width"
    params = StdioServerParameters(command=ESRAG, args=["mcp"], env=clean_env(env))

    async def main() -> tuple[list[str], list[str]]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            plain = json.loads(text_of(await session.call_tool("search_docs", {"query": query, "format": "json"})))["hits"]
            ja = json.loads(text_of(await session.call_tool("search_docs", {"query": query, "format": "json", "language": "ja"})))["hits"]
            return [h["url"] for h in plain], [h["url"] for h in ja]

    plain, ja = anyio.run(main)
    assert plain and all(u.startswith("https://x.dev/formatter/") for u in plain)
    assert ja and all(u.startswith("https://x.dev/ja/formatter/") for u in ja)
    server = Server(["serve"], env)
    try:
        urls = [h["url"] for h in httpx.get(server.url + "/search", params={"q": query}, timeout=60).json()["hits"]]
        assert urls and not any("/ja/" in u for u in urls)
        urls = [h["url"] for h in httpx.get(server.url + "/search", params={"q": query, "lang": "ja"}, timeout=60).json()["hits"]]
        assert urls and all("/ja/" in u for u in urls)
        bad = httpx.get(server.url + "/search", params={"q": query, "lang": "ja;drop"}, timeout=60)
        assert bad.status_code == 422 and bad.json()["error"].startswith("lang")
    finally:
        server.stop()
