"""Keys per corpus (issue 39): ``[serve.keys.NAME]`` made by ``esrag keys add``, enforced alike by
``esrag serve`` (/corpora, /search, /pages) and ``esrag mcp --http`` (list_corpora, search_docs,
get_page through the official MCP client), on a real SQLite index with two corpora."""

from __future__ import annotations

import hashlib
import json
import tomllib
import uuid
from pathlib import Path

import anyio
import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from esrag.errors import ConfigError
from esrag.serve.security import KeyRing, resolve_api_key
from serve_helpers import Server, indexed_env, ingest, make_docs, run_cli

# needs a subprocess, a model and a real index (see tests/conftest.py)
pytestmark = pytest.mark.integration

OWN = {"lara": "laravel", "ev": "evil"}  # key name -> the one corpus it may read
MASTER = "master-key-not-per-corpus"


def with_keys(base, env: dict[str, str]) -> tuple[dict[str, str], dict[str, str], Path]:
    """(env, {name: key}, config path): ``env`` plus an esrag.toml under ``base`` holding
    settings of its own and two keys made by ``esrag keys add``."""
    config = base / "esrag.toml"
    config.write_text(
        '# the team\'s settings\n[search]\nk = 8\n\n[corpora.laravel]\naliases = ["Laravel framework"]\ndescription = "The PHP framework"\n',
        encoding="utf-8",
    )
    env["ESRAG_CONFIG"] = str(config)
    keys = {}
    for name, corpus in OWN.items():
        proc = run_cli(["keys", "add", name, "--corpus", corpus], env)
        keys[name] = proc.stdout.strip()
        assert keys[name].startswith("esrag_") and len(keys[name]) > 40
    return env, keys, config


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    """The SQLite index of serve_helpers.indexed_env (corpora laravel and evil) with two keys."""
    base = tmp_path_factory.mktemp("keys")
    return with_keys(base, indexed_env(base))


@pytest.fixture(scope="module")
def keyed_es(es_url, tmp_path_factory):
    """The same corpora in a fresh index on the Elasticsearch node under test, with two keys."""
    from esrag.stores.elastic import ElasticStore

    base = tmp_path_factory.mktemp("keys-es")
    alias = f"esrag-t-{uuid.uuid4().hex[:12]}"
    env = {"ESRAG_ES_URL": es_url, "ESRAG_INDEX": alias, "ESRAG_EMBEDDING_CACHE": str(base / "emb.db")}
    try:
        ingest(env, *make_docs(base / "docs"))
        yield with_keys(base, env)
    finally:
        cleaner = ElasticStore(es_url, alias)
        cleaner.drop()
        cleaner.close()


def test_keys_add_round_trip_writes_only_the_hash(keyed):
    env, keys, config = keyed
    text = config.read_text(encoding="utf-8")
    assert text.startswith("# the team's settings\n[search]\nk = 8\n")  # the rest of the file kept
    data = tomllib.loads(text)
    assert data["search"] == {"k": 8}
    for name, key in keys.items():
        assert key not in text
        assert data["serve"]["keys"][name] == {"sha256": hashlib.sha256(key.encode()).hexdigest(), "corpora": [OWN[name]]}
    again = run_cli(["keys", "add", "lara", "--corpus", "evil"], env, check=False)
    assert again.returncode != 0 and "'lara' exists already" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1 and "Traceback" not in again.stderr
    assert config.read_text(encoding="utf-8") == text  # refused: nothing written
    made = run_cli(
        ["keys", "add", "both", "--corpus", "laravel", "--corpus", "evil", "--json"],
        {**env, "ESRAG_CONFIG": str(config) + ".2"},
        check=False,
    )
    assert made.returncode == 0, made.stderr  # a missing file is created
    out = json.loads(made.stdout)
    assert out["corpora"] == ["laravel", "evil"] and out["key"] not in (config.parent / "esrag.toml.2").read_text()


def test_non_loopback_bind_is_allowed_with_keys_per_corpus():
    assert resolve_api_key("0.0.0.0", None, keys_configured=True) is None
    with pytest.raises(ConfigError, match="needs an API key"):
        resolve_api_key("0.0.0.0", None, keys_configured=False)
    ring = KeyRing(None, {"a": (hashlib.sha256(b"ka").hexdigest(), ["x"])})
    assert ring.access("ka").corpora == frozenset({"x"}) and ring.access("kb") is None and ring.access("") is None


@pytest.fixture(scope="module")
def http_server(keyed):
    env, keys, _ = keyed
    s = Server(["serve", "--api-key", MASTER], env)
    yield s, keys
    s.stop()


def get(s: Server, path: str, key: str | None, **params) -> httpx.Response:
    return httpx.get(s.url + path, params=params, headers={"Authorization": f"Bearer {key}"} if key else {}, timeout=60)


def test_http_each_key_sees_only_its_corpora(http_server):
    check_http_scoping(*http_server)


def check_http_scoping(s: Server, keys: dict[str, str]) -> None:
    """Each key sees only its corpus through /corpora, /search and /pages; an outside corpus
    answers as one that does not exist; the single --api-key sees both."""
    for name, key in keys.items():
        own, other = OWN[name], next(c for n, c in OWN.items() if n != name)
        assert set(get(s, "/corpora", key).json()["corpora"]) == {own}
        hits = get(s, "/search", key, q="scheduling tasks every minute").json()["hits"]
        assert hits and {h["corpus"] for h in hits} == {own}
        assert {h["corpus"] for h in get(s, "/search", key, q="scheduling", corpus=own).json()["hits"]} == {own}
        hidden, absent = get(s, "/search", key, q="scheduling", corpus=other), get(s, "/search", key, q="scheduling", corpus="nosuch")
        assert hidden.status_code == absent.status_code == 404
        assert hidden.json()["error"].replace(other, "X") == absent.json()["error"].replace("nosuch", "X")
        assert other not in hidden.json()["error"].replace(f"'{other}'", "")  # named only as asked, never listed
        p_hidden, p_absent = get(s, "/pages/x.md", key, corpus=other), get(s, "/pages/x.md", key, corpus="nosuch")
        assert p_hidden.status_code == p_absent.status_code == 404
        assert p_hidden.json()["error"].replace(other, "X") == p_absent.json()["error"].replace("nosuch", "X")
        # the llms.txt routes: the key's corpus only; an outside corpus answers as an absent one
        root = get(s, "/llms.txt", key)
        assert root.status_code == 200 and root.text.startswith("# ") and f"corpora/{other}/" not in root.text
        assert get(s, "/llms-full.txt", key).status_code == 200
        for tail in ("llms.txt", "llms-full.txt", "x.md"):
            l_hidden, l_absent = get(s, f"/corpora/{other}/{tail}", key), get(s, f"/corpora/nosuch/{tail}", key)
            assert l_hidden.status_code == l_absent.status_code == 404, tail
            assert l_hidden.json()["error"].replace(other, "X") == l_absent.json()["error"].replace("nosuch", "X"), tail
        assert get(s, f"/corpora/{own}/llms.txt", key).status_code == 200
    assert get(s, "/pages/routing.md", keys["lara"]).json()["corpus"] == "laravel"
    refused = get(s, "/pages/routing.md", keys["ev"])
    said = refused.json()["error"]
    assert refused.status_code == 404 and "laravel" not in said and "routing" not in said.partition("nearest")[2]  # no laravel path named
    assert get(s, "/pages/evil.md", keys["ev"]).json()["corpus"] == "evil"
    assert get(s, "/pages/evil.md", keys["lara"]).status_code == 404
    assert set(get(s, "/corpora", MASTER).json()["corpora"]) == {"laravel", "evil"}  # the single --api-key sees everything


def test_http_resolve_library_sees_only_the_keys_corpora(http_server):
    s, keys = http_server
    found = get(s, "/corpora", keys["lara"], q="Laravel Framework 12").json()
    assert [h["corpus"] for h in found["libraries"]] == ["laravel"] and list(found["corpora"]) == ["laravel"]
    assert found["libraries"][0]["matched"] == "Laravel framework"
    assert get(s, "/corpora", keys["ev"], q="laravel").json() == {"corpora": {}, "libraries": []}
    assert get(s, "/corpora", MASTER, q="evil").json()["libraries"][0]["corpus"] == "evil"
    assert get(s, "/corpora", keys["ev"], q="").status_code == 422


def test_http_wrong_or_missing_key_is_401_and_keys_never_logged(http_server):
    s, keys = http_server
    for path in ("/corpora", "/search", "/pages/routing.md"):
        assert get(s, path, None, q="x").status_code == 401
        assert get(s, path, keys["lara"][:-1] + "!", q="x").status_code == 401
    assert httpx.get(s.url + "/corpora", headers={"X-API-Key": keys["ev"]}).json()["corpora"].keys() == {"evil"}
    # a request cannot forge or break log lines: the decoded path's newline and NUL are escaped
    get(s, "/pages/x%0AINFO:%20%20%20%20%20forged%00line", keys["lara"])
    log = s.output()
    assert "key lara" in log and "key ev" in log
    assert "\nINFO:     forged" not in log and "\x00" not in log and "/pages/x\\nINFO:     forged\\x00line" in log
    assert not any(k in log for k in keys.values()) and MASTER not in log


def test_mcp_over_http_each_key_sees_only_its_corpora(keyed):
    check_mcp_scoping(*keyed[:2])


def test_es_keys_per_corpus_over_http_and_mcp(keyed_es):
    env, keys, _ = keyed_es
    s = Server(["serve", "--api-key", MASTER], env)
    try:
        check_http_scoping(s, keys)
        assert get(s, "/corpora", None).status_code == 401
    finally:
        s.stop()
    check_mcp_scoping(env, keys)


def check_mcp_scoping(env: dict[str, str], keys: dict[str, str]) -> None:
    """list_corpora, search_docs, get_page and resolve_library through the official client, per key."""
    s = Server(["mcp", "--http", "--json"], env, ready_path="/mcp")

    async def as_key(key: str) -> dict:
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
        async with (
            client,
            streamable_http_client(s.url + "/mcp", http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            init = await session.initialize()
            seen = {"instructions": init.instructions or ""}
            listed = await session.call_tool("list_corpora", {})
            seen["corpora"] = (
                set(json.loads(listed.content[0].text)["corpora"])
                if not listed.structured_content
                else set(listed.structured_content["corpora"])
            )
            found = await session.call_tool("search_docs", {"query": "scheduling tasks every minute", "format": "json"})
            seen["hits"] = {h["corpus"] for h in json.loads(found.content[0].text)["hits"]}
            for corpus in ("laravel", "evil", "nosuch"):
                r = await session.call_tool("search_docs", {"query": "scheduling", "corpus": corpus, "format": "json"})
                seen[f"search:{corpus}"] = r.content[0].text if r.is_error else "ok"
                r = await session.call_tool("get_page", {"path": "x.md", "corpus": corpus})
                seen[f"page:{corpus}"] = r.content[0].text if r.is_error else "ok"
            resolved = await session.call_tool("resolve_library", {"name": "laravel framework"})
            seen["resolved"] = (
                [h["corpus"] for h in json.loads(resolved.content[0].text)["libraries"]]
                if not resolved.structured_content
                else [h["corpus"] for h in resolved.structured_content["libraries"]]
            )
            for path in ("routing.md", "evil.md"):
                r = await session.call_tool("get_page", {"path": path, "format": "json"})
                seen[f"read:{path}"] = "error" if r.is_error else json.loads(r.content[0].text)["corpus"]
            return seen

    try:
        lara, ev = anyio.run(as_key, keys["lara"]), anyio.run(as_key, keys["ev"])
        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        headers = {"accept": "application/json, text/event-stream"}
        assert httpx.post(s.url + "/mcp", json=body, headers=headers).status_code == 401
        assert httpx.post(s.url + "/mcp", json=body, headers={**headers, "x-api-key": keys["ev"] + "x"}).status_code == 401
        log = s.output()
    finally:
        s.stop()
    for seen, own, other in ((lara, "laravel", "evil"), (ev, "evil", "laravel")):
        assert seen["corpora"] == {own} and seen["hits"] == {own}
        assert other not in seen["instructions"] and own not in seen["instructions"]  # the same words for every key
        assert seen[f"search:{own}"] == "ok"
        assert seen[f"search:{other}"].replace(other, "X") == seen["search:nosuch"].replace("nosuch", "X")
        assert seen[f"page:{other}"].replace(other, "X") == seen["page:nosuch"].replace("nosuch", "X")
    assert lara["resolved"] == ["laravel"] and ev["resolved"] == []
    assert lara["read:routing.md"] == "laravel" and lara["read:evil.md"] == "error"
    assert ev["read:evil.md"] == "evil" and ev["read:routing.md"] == "error"
    assert "key ev: POST /mcp" in log and not any(k in log for k in keys.values())
