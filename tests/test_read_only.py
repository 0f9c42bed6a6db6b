"""Read-only commands write nothing (issue 26): ``search``, ``ask``, ``page``, ``status``,
``doctor``, ``serve`` and ``mcp`` never create a file or a folder — not the index, not its folder,
not the LLM cache. On a missing index each names where it looked and the command that creates it.

What happens on a missing embedded index:
- ``search``, ``ask``, ``page``: exit 1, one line ``nothing is indexed in <absolute path> (ESRAG_DB)
  yet; `esrag ingest PATH` creates it``;
- ``status``: exit 0, the empty stats, and that line as a note on stderr; ``doctor``: a ``warn`` row;
- ``serve`` and ``mcp``: start, warn with that line, answer searches with 409 (HTTP) / a tool error
  (MCP) naming it, and serve the index as soon as an ingest (another process) creates it.

Everything runs through the real CLI (subprocesses) on the real SQLite store; the file tree is
compared before and after each command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from paths import LARAVEL
from serve_helpers import Server, clean_env

# needs a service, a model or a subprocess (see tests/conftest.py)
pytestmark = pytest.mark.integration

ESRAG = str(Path(sys.executable).with_name("esrag"))
READERS = [["search", "queues"], ["ask", "How do I retry a failed job?"], ["page", "queues.md"], ["status"], ["doctor"]]


def run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    # the LLM of `ask` points at a closed port: it must never be reached on a missing index
    full = {**clean_env(env), "ESRAG_LLM_URL": "http://127.0.0.1:9", "ESRAG_LLM": "ollama:none"}
    return subprocess.run([ESRAG, *args], cwd=cwd, env=full, capture_output=True, text=True, timeout=600)


def tree(root: Path) -> set[str]:
    """Every file and folder under ``root`` (relative paths)."""
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.parametrize("args", READERS, ids=[a[0] for a in READERS])
def test_read_only_command_on_a_missing_index_creates_nothing_and_says_where(tmp_path, args):
    work = tmp_path / "work"
    work.mkdir()
    for env, db in (
        ({"ESRAG_DB": str(tmp_path / "missing" / "sub" / "x.db")}, tmp_path / "missing" / "sub" / "x.db"),
        ({}, work / ".esrag" / "esrag.db"),
    ):  # ESRAG_DB in a missing folder; the default ./.esrag
        before = tree(tmp_path)
        proc = run(args, work, env)
        assert tree(tmp_path) == before, f"esrag {args[0]} created {tree(tmp_path) - before}"
        said = f"nothing is indexed in {db} (ESRAG_DB) yet; `esrag ingest PATH` creates it"
        if args[0] in ("search", "ask", "page"):
            assert proc.returncode == 1 and proc.stderr.splitlines() == [f"Error: {said}"], proc.stderr
        elif args[0] == "status":
            assert proc.returncode == 0 and f"note: {said}" in proc.stderr.splitlines(), proc.stderr
        else:
            rows = json.loads(run(["doctor", "--json"], work, env).stdout)
            assert {
                "name": "index",
                "status": "warn",
                "detail": f"nothing indexed yet: {db} does not exist",
                "way_out": "run `esrag ingest PATH`",
            } in rows
            assert proc.returncode == 0
        assert tree(tmp_path) == before


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("ro") / "laravel"
    folder.mkdir()
    for name in ("queues.md", "scheduling.md"):
        shutil.copy(LARAVEL / name, folder / name)
    return folder


def test_reads_of_an_existing_index_leave_the_tree_as_it_was(tmp_path, docs):
    env = {"ESRAG_DB": str(tmp_path / "db" / "x.db")}
    assert run(["ingest", str(docs), "--json"], tmp_path, env).returncode == 0
    before = tree(tmp_path)
    for args in (["status", "--json"], ["search", "retry failed jobs", "--json"], ["page", "queues.md", "--json"], ["doctor"]):
        proc = run(args, tmp_path, env)
        assert proc.returncode == 0, proc.stderr
        assert tree(tmp_path) == before, f"esrag {args[0]} left {tree(tmp_path) - before}"  # no -wal/-shm, no llm cache


def test_serve_on_a_missing_index_creates_nothing_answers_409_and_picks_up_a_later_ingest(tmp_path, docs):
    db = tmp_path / "missing" / "x.db"
    env = {"ESRAG_DB": str(db)}
    server = Server(["serve"], env, ready_path="/")
    try:
        said = f"nothing is indexed in {db} (ESRAG_DB) yet; `esrag ingest PATH` creates it"
        r = httpx.get(server.url + "/search", params={"q": "queues"}, timeout=60)
        assert r.status_code == 409 and r.json() == {"error": said}
        health = httpx.get(server.url + "/health", timeout=60).json()
        assert health["store_reachable"] is True and health["chunks"] == 0
        assert not (tmp_path / "missing").exists()
        assert f"warning: {said}; serving anyway" in server.output()
        # an ingest by another process creates the index; the running server answers from it
        assert run(["ingest", str(docs), "--json"], tmp_path, env).returncode == 0
        hits = httpx.get(server.url + "/search", params={"q": "retry failed jobs", "k": 3}, timeout=120)
        assert hits.status_code == 200, hits.text
        assert hits.json()["hits"][0]["source_path"] == "queues.md"
    finally:
        server.stop()


def test_mcp_on_a_missing_index_creates_nothing_and_the_tools_say_where(tmp_path):
    db = tmp_path / "missing" / "x.db"
    params = StdioServerParameters(command=ESRAG, args=["mcp"], env=clean_env({"ESRAG_DB": str(db)}))

    async def main() -> tuple[str, dict]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            searched = await session.call_tool("search_docs", {"query": "queues"})
            assert searched.is_error
            listed = await session.call_tool("list_corpora", {})
            return searched.content[0].text, (listed.structured_content or json.loads(listed.content[0].text))

    text, corpora = anyio.run(main)
    assert f"nothing is indexed in {db} (ESRAG_DB) yet" in text and "esrag ingest" in text
    assert not (tmp_path / "missing").exists() and os.listdir(tmp_path) == []
    assert "corpora" not in corpora or not corpora.get("corpora")
