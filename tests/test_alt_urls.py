"""``alt_urls``: a section's other published addresses (old anchors, labels, aliases) from the
site layer through both real stores to every JSON a user scripts against (``esrag search
--json``, the HTTP API, the MCP tool through the official client, ``esrag page --json``).

The data is a real page of the Rust book (mdBook): ``ch08-02-strings.md`` keeps the old anchor
``<a id="bytes-and-scalar-values-and-grapheme-clusters-oh-my"></a>`` above the renamed header
"Bytes, Scalar Values, and Grapheme Clusters"; mdBook gives the header its own id, so the hit
links there and the old anchor is an alternative."""

from __future__ import annotations

import json
import shutil
import sqlite3
import uuid
import warnings

import anyio
import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from esrag.chunking.header import HeaderChunker
from esrag.embedding import SentenceTransformerEmbedder
from esrag.ingest import Ingester, meta_hash
from esrag.model import Chunk, Hit
from esrag.sites import resolve_site
from esrag.stores.elastic import ElasticStore
from esrag.stores.sqlite import SQLiteStore
from paths import DATA
from serve_helpers import ESRAG, Server, clean_env, run_cli

BOOK = DATA / "corpora" / "rust-book"
BASE = "https://doc.rust-lang.org/book/"
PAGE = BASE + "ch08-02-strings.html"
SECTION = "Storing UTF-8 Encoded Text with Strings > Indexing into Strings > Bytes, Scalar Values, and Grapheme Clusters"
OWN = PAGE + "#bytes-scalar-values-and-grapheme-clusters"
OLD = PAGE + "#bytes-and-scalar-values-and-grapheme-clusters-oh-my"
QUERY = "bytes scalar values and grapheme clusters of a Hindi word"


def book(tmp_path):
    root = tmp_path / "book"
    (root / "src").mkdir(parents=True)
    (root / "book.toml").write_text('[book]\ntitle = "The Rust Programming Language"\n')
    shutil.copy(BOOK / "src" / "ch08-02-strings.md", root / "src" / "ch08-02-strings.md")
    return root


@pytest.fixture(scope="module")
def embedder():
    return SentenceTransformerEmbedder("all-MiniLM-L6-v2")


def ingest(store, emb, root):
    site = resolve_site(root, "mdbook", BASE)
    ing = Ingester(store, emb.spec, lambda: emb, HeaderChunker(), ["section_path", "text"], {"text": 1.0}, site=site)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = ing.run(root, "rust-book", ["**/*.md"], [])
    assert not summary.failures
    return summary


def check_store(store, emb, root):
    assert ingest(store, emb, root).chunks_new > 5
    chunks = store.get(sorted(cid for e in store.manifest("rust-book").values() for cid in e))
    section = [c for c in chunks if c.section_path == SECTION]
    assert section and all(c.url == OWN and c.alt_urls == [OLD] for c in section)
    by_path = {c.section_path: c for c in chunks}
    assert by_path["Storing UTF-8 Encoded Text with Strings > Defining Strings"].alt_urls == [PAGE + "#what-is-a-string"]
    # one address: no alternatives
    assert by_path["Storing UTF-8 Encoded Text with Strings > Updating a String"].alt_urls == []
    assert Hit(section[0], 1.0).to_dict()["alt_urls"] == [OLD]


@pytest.mark.integration
def test_alt_urls_round_trip_sqlite(embedder, tmp_path):
    store = SQLiteStore(tmp_path / "x.db")
    check_store(store, embedder, book(tmp_path))
    store.close()


@pytest.mark.integration
def test_alt_urls_round_trip_elasticsearch(es_url, embedder, tmp_path):
    store = ElasticStore(es_url, f"esrag-t-{uuid.uuid4().hex[:12]}")
    try:
        check_store(store, embedder, book(tmp_path))
        # a mapped keyword field (the index is "dynamic": false): filterable and shown in Kibana
        (mapping,) = store._es.indices.get_mapping(index=store.alias).body.values()
        assert mapping["mappings"]["properties"]["alt_urls"]["type"] == "keyword"
        found = store._es.search(index=store.alias, query={"term": {"alt_urls": OLD}}, size=5)["hits"]["hits"]
        assert found and all(h["_source"]["section_path"] == SECTION for h in found)
    finally:
        store.drop()
        store.close()


@pytest.mark.integration
def test_sqlite_store_made_before_alt_urls_gains_the_column(embedder, tmp_path):
    root = book(tmp_path)
    db = tmp_path / "old.db"
    store = SQLiteStore(db)
    ingest(store, embedder, root)
    store.close()
    with sqlite3.connect(db) as conn:  # the shape of a store written before alt_urls existed
        conn.execute("ALTER TABLE chunks DROP COLUMN alt_urls")
        # its fingerprint then did not cover alt_urls
        n = conn.execute("UPDATE chunks SET meta_hash='' WHERE section_path=?", (SECTION,)).rowcount
    again = SQLiteStore(db)
    summary = ingest(again, embedder, root)  # re-ingest: only the section with an alternative changes
    assert n >= 1 and summary.chunks_moved == n and summary.embeddings_computed == 0
    chunks = again.get(sorted(cid for e in again.manifest("rust-book").values() for cid in e))
    assert {tuple(c.alt_urls) for c in chunks if c.section_path == SECTION} == {(OLD,)}
    again.close()


def test_meta_hash_covers_alt_urls_only_when_set():
    c = Chunk(id="x", text="t", url="https://e.org/p#a", anchor="a")
    before = meta_hash(c)
    c.alt_urls = ["https://e.org/p#old"]
    assert meta_hash(c) != before
    c.alt_urls = []
    assert meta_hash(c) == before


@pytest.mark.integration
def test_cli_http_and_mcp_json_carry_alt_urls(tmp_path):
    root = book(tmp_path)
    env = {"ESRAG_DB": str(tmp_path / "x.db")}
    run_cli(["ingest", str(root), "--site", "mdbook", "--base-url", BASE, "--corpus", "rust-book", "--json"], env)
    hits = json.loads(run_cli(["search", QUERY, "--json", "-k", "5"], env).stdout)
    assert all("alt_urls" in h and isinstance(h["alt_urls"], list) for h in hits)
    mine = [h for h in hits if h["section_path"] == SECTION]
    assert mine and mine[0]["url"] == OWN and mine[0]["alt_urls"] == [OLD]
    page = json.loads(run_cli(["page", mine[0]["source_path"], "--json"], env).stdout)
    assert [s["alt_urls"] for s in page["sections"] if s["section_path"] == SECTION][0] == [OLD]

    server = Server(["serve"], env)
    try:
        got = httpx.get(server.url + "/search", params={"q": QUERY, "k": 5}).json()
        assert [h["alt_urls"] for h in got["hits"] if h["section_path"] == SECTION][0] == [OLD]
    finally:
        assert server.stop() == 0

    async def main() -> list:
        params = StdioServerParameters(command=ESRAG, args=["mcp"], env=clean_env(env))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("search_docs", {"query": QUERY, "k": 5, "format": "json"})
            assert not result.is_error, result.content
            data = result.structured_content or json.loads(result.content[0].text)
            return data["hits"]

    mcp_hits = anyio.run(main)
    assert [h["alt_urls"] for h in mcp_hits if h["section_path"] == SECTION][0] == [OLD]


@pytest.mark.integration
def test_expanded_and_merged_hits_keep_the_link_of_their_first_section(embedder, tmp_path):
    """A hit grown to its neighbours (``neighbours:1``) or to its parent section, or merged with
    an adjacent hit, links to the first chunk it holds, with that chunk's alt_urls and version."""
    from esrag.search.expand import expand_hits, parse_expand
    from esrag.search.sections import shape_hits

    store = SQLiteStore(tmp_path / "x.db")
    ingest(store, embedder, book(tmp_path))
    chunks = sorted(store.get(sorted(cid for e in store.manifest("rust-book").values() for cid in e)), key=lambda c: c.position)
    i = next(n for n, c in enumerate(chunks) if c.section_path == SECTION)
    before, mine, after = chunks[i - 1], chunks[i], chunks[i + 1]
    for spec in ("neighbours:1", "parent"):
        grown = expand_hits([Hit(mine, 1.0, {})], store, lambda h, spec=spec: parse_expand(spec))[0]
        first = next(c for c in chunks if c.id == grown.chunk.metadata["chunks"][0][0])
        assert grown.chunk.url == first.url and grown.chunk.alt_urls == first.alt_urls, spec
        assert grown.chunk.doc_version == mine.doc_version and grown.chunk.anchor == first.anchor, spec
    merged = shape_hits([Hit(mine, 2.0, {}), Hit(after, 1.0, {})], store, min_tokens=0, max_tokens=None)
    assert len(merged) == 1 and merged[0].chunk.url == OWN and merged[0].chunk.alt_urls == [OLD]
    led = shape_hits([Hit(after, 2.0, {}), Hit(mine, 1.0, {})], store, min_tokens=0, max_tokens=None)
    assert len(led) == 1 and led[0].chunk.url == OWN and led[0].chunk.alt_urls == [OLD]  # by position, not rank
    assert before.url != OWN
    store.close()
