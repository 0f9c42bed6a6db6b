"""Issue 38, "one version by default", on both real stores (the embedded SQLite store and each
Elasticsearch test node) and through the CLI, HTTP and the official MCP client: a corpus indexed
as two versions answers each section once, from its default version (the most recently ingested,
or ``[corpora.NAME] default_version``); ``doc_version="*"`` / ``--all-versions`` searches every
version; an explicit ``doc_version`` still picks one; an unversioned corpus searches as before;
every hit and response says which version it is from."""

from __future__ import annotations

import json
import shutil
import time
import uuid
import warnings
from collections import Counter

import httpx
import numpy as np
import pytest

from conftest import es_params
from esrag.app import make_chunker
from esrag.config import Settings
from esrag.ingest import meta_hash
from esrag.model import Document
from esrag.service import ALL_VERSIONS, SearchRequest, SearchService, result_json, versions_note
from esrag.stores.base import IndexMeta
from paths import LARAVEL

# needs a service, a model or a subprocess (see tests/conftest.py)
pytestmark = pytest.mark.integration

FIELDS = {"text": 1.0, "section_path": 1.0}
QUERY = "run the scheduler with cron every minute"


def chunks_of(name: str, corpus: str, version: str) -> list:
    doc = Document(path=name, text=(LARAVEL / name).read_text(), corpus=corpus, doc_version=version)
    return make_chunker(Settings(db=None, es_url=None)).chunk(doc)


def write(store, chunks) -> None:
    vectors = np.ones((len(chunks), 4), dtype=np.float32) / 2  # bm25 searches only: any unit vectors
    report = store.write(chunks, vectors, [meta_hash(c) for c in chunks])
    assert not report.failed
    store.refresh()


@pytest.fixture(scope="module", params=["sqlite", *es_params()])
def store(request, tmp_path_factory):
    """A store holding 'lv' (scheduling.md and queues.md as 11.x, then as 12.x one second later:
    the more recently ingested) and the unversioned 'notes' (deployment.md)."""
    if request.param == "sqlite":
        from esrag.stores.sqlite import SQLiteStore

        s = SQLiteStore(tmp_path_factory.mktemp("versions") / "v.db")
    else:
        from esrag.stores.elastic import ClusterWarning, ElasticStore

        s = ElasticStore(request.param, f"esrag-v38-{uuid.uuid4().hex[:10]}")
        warnings.simplefilter("ignore", ClusterWarning)
    s.ensure(IndexMeta("test:unit-vectors", 4, ["text"], FIELDS))
    for version in ("11.x", "12.x"):
        write(s, [c for name in ("scheduling.md", "queues.md") for c in chunks_of(name, "lv", version)])
        time.sleep(1.1)  # indexed_at has whole seconds
    write(s, chunks_of("deployment.md", "notes", ""))
    yield s
    if request.param != "sqlite":
        s.drop()
    s.close()


def search(service: SearchService, doc_version: str | None = None, corpora: tuple[str, ...] = (), k: int = 10):
    return service.search(SearchRequest(QUERY, k=k, mode="bm25", corpora=list(corpora), doc_version=doc_version))


def passages(result) -> Counter:
    """How often each passage (corpus, page, section, first line) comes back: once per version it is read from."""
    return Counter((h.chunk.corpus, h.chunk.source_path, h.chunk.section_path, h.chunk.start_line) for h in result.hits)


def test_a_search_reads_each_corpus_in_its_default_version(store):
    service = SearchService(Settings(db=None, es_url=None), store)
    assert service.default_search_versions() == {"lv": "12.x"}  # 'notes' has one version: not restricted
    default = search(service)
    lv = [h.chunk for h in default.hits if h.chunk.corpus == "lv"]
    assert lv and {c.doc_version for c in lv} == {"12.x"}
    assert max(passages(default).values()) == 1  # each section once
    assert default.versions == {"lv": "12.x"}
    body = result_json(default)
    assert body["versions"] == {"lv": "12.x"} and {h["doc_version"] for h in body["hits"] if h["corpus"] == "lv"} == {"12.x"}
    # every version: the same sections come back from both
    every = search(service, ALL_VERSIONS, k=20)
    assert {h.chunk.doc_version for h in every.hits if h.chunk.corpus == "lv"} == {"11.x", "12.x"}
    assert max(passages(every).values()) == 2 and every.versions == {} and "versions" not in result_json(every)
    # an explicit version still picks that one (and, as before, only chunks of it)
    older = search(service, "11.x")
    assert older.hits and {(h.chunk.corpus, h.chunk.doc_version) for h in older.hits} == {("lv", "11.x")}
    # a fan-out over both corpora restricts each to its own default
    fan = search(service, corpora=("lv", "notes"))
    assert {(h.chunk.corpus, h.chunk.doc_version) for h in fan.hits} == {("lv", "12.x"), ("notes", "")}
    assert fan.versions == {"lv": "12.x"}
    # the unversioned corpus: exactly as a search of every version
    notes, notes_all = search(service, corpora=("notes",)), search(service, ALL_VERSIONS, corpora=("notes",))
    assert notes.hits and [h.chunk.id for h in notes.hits] == [h.chunk.id for h in notes_all.hits] and notes.versions == {}


def test_the_configured_default_version_wins(store):
    settings = Settings(db=None, es_url=None, corpora={"lv": {"default_version": "11.x"}})
    service = SearchService(settings, store)
    hits = search(service, corpora=("lv",)).hits
    assert hits and {h.chunk.doc_version for h in hits} == {"11.x"}
    # a configured default the corpus does not hold falls back to the most recent
    other = SearchService(Settings(db=None, es_url=None, corpora={"lv": {"default_version": "9.x"}}), store)
    assert other.default_search_versions(["lv"]) == {"lv": "12.x"}


def test_versions_note_names_each_version_and_the_way_to_all():
    assert versions_note({"lv": "12.x", "x": ""}, "--all-versions") == (
        "Searched the default version only: 12.x of lv, (unversioned) of x; --all-versions searches every version."
    )


# -- through the CLI, HTTP and MCP (a SQLite index made by the real CLI) -------------------------
@pytest.fixture(scope="module")
def versioned_env(tmp_path_factory):
    from serve_helpers import run_cli

    base = tmp_path_factory.mktemp("cli-versions")
    env = {"ESRAG_DB": str(base / "v.db")}
    for version in ("11.x", "12.x"):
        root = base / version
        root.mkdir()
        shutil.copy(LARAVEL / "scheduling.md", root / "scheduling.md")
        run_cli(
            ["ingest", str(root), "--corpus", "lv", "--site", "plain", "--base-url", "https://laravel.com/docs/{doc_version}/"]
            + ["--doc-version", version],
            env,
        )
        time.sleep(1.1)  # the next version is the more recently ingested one
    return env


def test_cli_searches_the_default_version_unless_all_versions(versioned_env):
    from serve_helpers import run_cli

    def hits(*args: str) -> list[dict]:
        return json.loads(run_cli(["search", QUERY, "--mode", "bm25", "-k", "10", "--json", *args], versioned_env).stdout)

    default = hits()
    assert default and {h["doc_version"] for h in default} == {"12.x"}
    assert max(Counter((h["section_path"], h["start_line"]) for h in default).values()) == 1
    every = hits("--all-versions")
    assert {h["doc_version"] for h in every} == {"11.x", "12.x"}
    assert {h["doc_version"] for h in hits("--doc-version", "11.x")} == {"11.x"}
    both = run_cli(["search", QUERY, "--all-versions", "--doc-version", "11.x"], versioned_env, check=False)
    assert both.returncode == 2 and "--all-versions and --doc-version exclude each other" in both.stderr
    human = run_cli(["search", QUERY, "--mode", "bm25", "-k", "3"], versioned_env)
    assert "version 12.x" in human.stdout and "Searched the default version only: 12.x of lv; --all-versions" in human.stderr


def test_http_and_mcp_say_the_version_and_search_all_with_a_star(versioned_env):
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from serve_helpers import ESRAG, Server, clean_env

    server = Server(["serve"], versioned_env)
    try:
        got = httpx.get(f"{server.url}/search", params={"q": QUERY, "mode": "bm25", "k": 10}, timeout=60).json()
        assert got["versions"] == {"lv": "12.x"} and {h["doc_version"] for h in got["hits"]} == {"12.x"}
        every = httpx.post(f"{server.url}/search", json={"q": QUERY, "mode": "bm25", "k": 10, "doc_version": "*"}, timeout=60).json()
        assert "versions" not in every and {h["doc_version"] for h in every["hits"]} == {"11.x", "12.x"}
        assert set(every) >= {"hits", "timings_ms"}
    finally:
        server.stop()

    async def main() -> None:
        params = StdioServerParameters(command=ESRAG, args=["mcp"], env=clean_env(versioned_env))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            md = (await session.call_tool("search_docs", {"query": QUERY, "token_budget": 1500})).content[0].text
            assert md.startswith('_Searched the default version only: 12.x of lv; doc_version="*" searches every version._')
            assert "version 12.x" in md and "11.x/" not in md
            raw = (
                (await session.call_tool("search_docs", {"query": QUERY, "format": "json", "doc_version": "*", "token_budget": 8000}))
                .content[0]
                .text
            )
            body = json.loads(raw)
            assert "versions" not in body and {h["doc_version"] for h in body["hits"]} == {"11.x", "12.x"}
            raw = (await session.call_tool("search_docs", {"query": QUERY, "format": "json"})).content[0].text
            body = json.loads(raw)
            assert body["versions"] == {"lv": "12.x"} and {h["doc_version"] for h in body["hits"]} == {"12.x"}

    anyio.run(main)


def test_ingest_refuses_the_version_that_means_every_version(tmp_path):
    from esrag.app import make_site
    from esrag.errors import ConfigError

    with pytest.raises(ConfigError, match=r"^--doc-version '\*' is reserved"):
        make_site(Settings(db=None, es_url=None), tmp_path, "lv", doc_version="*")
    configured = Settings(db=None, es_url=None, corpora={"lv": {"doc_version": "*"}})
    with pytest.raises(ConfigError, match=r"^\[corpora.lv\] doc_version '\*' is reserved"):
        make_site(configured, tmp_path, "lv")
    assert make_site(configured, tmp_path, "lv", doc_version="12.x").doc_version == "12.x"
