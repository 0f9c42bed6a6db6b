"""Least privilege, checked on the wire (issue 27): every HTTP request esrag sends to
Elasticsearch — recorded by a forwarding proxy (:class:`test_store_elastic.StandIn`) in front of
each test node while the real CLI runs — needs only what docs/elasticsearch.md "Elasticsearch privileges" grants
the role of that use: ``esrag_search`` for search/page/status (never a write), ``esrag_ingest``
for a re-ingest and ``remove``, ``esrag_admin`` for setup, the first ingest, ``--rebuild`` and
``drop``. The roles are read from that page itself, so the document and the code cannot drift
apart.

Each request is mapped to the Elasticsearch privilege that authorizes its action (from the
cluster and index privilege definitions in Elasticsearch's ``ClusterPrivilegeResolver`` and
``IndexPrivilege``); the index names it touches (in the path, and in ``_bulk`` / ``_aliases``
bodies) must match the role's name patterns."""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
from pathlib import Path

import pytest

from esrag.stores.elastic import ElasticStore
from paths import LARAVEL
from serve_helpers import run_cli
from test_store_elastic import StandIn, fresh_alias

# needs a service, a model or a subprocess (see tests/conftest.py)
pytestmark = pytest.mark.integration

PRIVILEGES = Path(__file__).resolve().parents[1] / "docs" / "elasticsearch.md"  # the roles (moved there from README.md)
#: index privileges that a broader one includes (IndexPrivilege: manage = indices:admin/* + monitor)
IMPLIED = {
    "manage": {
        "view_index_metadata",
        "maintenance",
        "create_index",
        "delete_index",
        "indices:admin/mapping/put",
        "indices:admin/settings/update",
        "indices:admin/aliases",
        "manage",
    },
    "all": {"*"},
    # cluster (ClusterPrivilegeResolver: manage_ingest_pipelines = cluster:admin/ingest/pipeline/*)
    "manage_ingest_pipelines": {"read_pipeline"},
}
READS = {("index", "read"), ("index", "view_index_metadata")}


def readme_role(name: str, alias: str) -> dict:
    """The body of ``PUT _security/role/<name>`` in docs/elasticsearch.md, with ``esrag`` renamed ``alias``."""
    text = PRIVILEGES.read_text(encoding="utf-8")
    start = text.index(f"PUT _security/role/{name}\n")
    body, _ = json.JSONDecoder().raw_decode(text[text.index("{", start) :])
    for entry in body.get("indices", []):
        entry["names"] = [alias + n[len("esrag") :] for n in entry["names"]]
    return body


def required(method: str, path: str, body: bytes) -> list[tuple[str, str, str | None]]:
    """``(scope, privilege, index name or None)`` for each action of one request."""
    route = path.split("?")[0].strip("/")
    parts = route.split("/")
    first = parts[0]
    if route in ("_search/scroll",):
        return [("index", "read", None)]  # a scroll continues (or clears) a search the same user started
    if first == "_cluster" or first == "_nodes" or first == "_license":
        return [("cluster", "monitor", None)]
    if first in ("_component_template", "_index_template"):
        return [("cluster", "monitor" if method == "GET" else "manage_index_templates", None)]
    if first == "_ingest":
        return [("cluster", "read_pipeline" if method == "GET" else "manage_ingest_pipelines", None)]
    if first == "_analyze":
        return [("cluster", "cluster:admin/analyze", None)]
    if first == "_alias":
        return [("index", "view_index_metadata", parts[1])]
    if first == "_bulk":
        actions = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
        return [
            ("index", "write", meta["_index"])
            for a in actions
            for op, meta in a.items()
            if op in ("index", "create", "update", "delete") and isinstance(meta, dict) and "_index" in meta
        ]
    if first == "_aliases":
        acts = json.loads(body)["actions"]
        return [("index", "indices:admin/aliases", v[k]) for a in acts for v in a.values() for k in ("index", "alias") if k in v]
    index, api = first, (parts[1] if len(parts) > 1 else "")
    if api in ("_search", "_msearch", "_count", "_mget") or (api == "_doc" and method == "GET"):
        return [("index", "read", index)]
    if api == "_mapping":
        return [("index", "view_index_metadata" if method == "GET" else "indices:admin/mapping/put", index)]
    if api == "_settings":
        return [("index", "view_index_metadata" if method == "GET" else "indices:admin/settings/update", index)]
    if api == "_refresh":
        return [("index", "maintenance", index)]
    if api == "":
        return [
            (
                "index",
                {"GET": "view_index_metadata", "HEAD": "view_index_metadata", "PUT": "create_index", "DELETE": "delete_index"}[method],
                index,
            )
        ]
    raise AssertionError(f"unclassified request {method} {path}: add it to required() and to the roles of docs/elasticsearch.md")


def allowed(role: dict, scope: str, privilege: str, index: str | None) -> bool:
    if scope == "cluster":
        return any(privilege == g or privilege in IMPLIED.get(g, ()) for g in role.get("cluster", []))
    for entry in role.get("indices", []):
        if index is not None and not any(fnmatch.fnmatchcase(index, pattern) for pattern in entry["names"]):
            continue
        granted = set(entry["privileges"])
        if privilege in granted or any(privilege in IMPLIED.get(g, ()) or "*" in IMPLIED.get(g, ()) for g in granted):
            return True
    return False


def check(proxy: StandIn, role: dict, what: str) -> list[tuple[str, str]]:
    """Every recorded request is authorized by ``role``; returns ``(method, path)`` seen."""
    seen = []
    for method, path, body in proxy.requests:
        for scope, privilege, index in required(method, path, body):
            assert allowed(role, scope, privilege, index), f"{what}: {method} {path} needs {scope} privilege {privilege!r} on {index}"
        seen.append((method, path.split("?")[0]))
    proxy.requests.clear()
    return seen


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("lp") / "laravel"
    folder.mkdir()
    for name in ("queues.md", "scheduling.md", "cache.md"):
        shutil.copy(LARAVEL / name, folder / name)
    return folder


def test_each_use_sends_only_what_its_readme_role_grants_and_a_search_never_writes(es_url, docs, tmp_path):
    alias = fresh_alias()
    roles = {name: readme_role(name, alias) for name in ("esrag_search", "esrag_ingest", "esrag_admin")}
    api_key_body = PRIVILEGES.read_text(encoding="utf-8").split("POST _security/api_key\n", 1)[1]
    key, _ = json.JSONDecoder().raw_decode(api_key_body[api_key_body.index("{") :])
    assert key["role_descriptors"]["esrag_search"] == readme_role("esrag_search", "esrag")  # the key body is the role's
    tree = tmp_path / "laravel"
    shutil.copytree(docs, tree)
    try:
        with StandIn(es_url) as proxy:
            env = {"ESRAG_ES_URL": proxy.url, "ESRAG_INDEX": alias, "ESRAG_DB": str(tmp_path / "x.db")}
            run_cli(["setup"], env)
            run_cli(["ingest", str(tree), "--corpus", "laravel", "--json"], env)
            admin = check(proxy, roles["esrag_admin"], "setup + first ingest")
            assert ("PUT", f"/{alias}-000001") in admin  # it did create the index

            (tree / "queues.md").write_text((tree / "queues.md").read_text() + "\n## Added\n\nWorkers retry jobs.\n")
            (tree / "cache.md").unlink()
            summary = json.loads(run_cli(["ingest", str(tree), "--corpus", "laravel", "--json"], env).stdout)
            assert summary["chunks_deleted"] > 0 and summary["chunks_new"] + summary["chunks_changed"] > 0
            check(proxy, roles["esrag_ingest"], "re-ingest")

            def searches() -> list[tuple[str, str]]:
                hits = json.loads(run_cli(["search", "retry failed jobs", "--json", "--explain", "--expand", "neighbours:1"], env).stdout)[
                    "hits"
                ]
                assert hits and hits[0]["source_path"] == "queues.md"
                run_cli(["search", "schedule a task every minute", "--mode", "bm25", "--json"], env)
                run_cli(["page", "queues.md", "--json"], env)
                run_cli(["status", "--json"], env)
                seen = [(m, p) for m, p, _ in proxy.requests]
                for method, path, body in proxy.requests:
                    assert {(s, p) for s, p, _ in required(method, path, body)} <= READS, f"a search sent {method} {path}"
                check(proxy, roles["esrag_search"], "search")
                return seen

            seen = searches()
            assert any(p.endswith("/_msearch") for _, p in seen) and all(m in ("GET", "POST") for m, _ in seen)

            run_cli(["ingest", str(tree), "--corpus", "laravel", "--rebuild", "--json"], env)
            rebuilt = check(proxy, roles["esrag_admin"], "rebuild")
            assert ("POST", "/_aliases") in rebuilt
            searches()  # through the alias on the rebuilt index

            run_cli(["remove", "--corpus", "laravel", "--yes"], env)
            check(proxy, roles["esrag_ingest"], "remove")
            run_cli(["drop", "--yes"], env)
            dropped = check(proxy, roles["esrag_admin"], "drop")
            assert ("DELETE", f"/_index_template/{alias}") in dropped
    finally:
        ElasticStore(es_url, alias).drop()


def test_a_role_denial_is_one_line_pointing_at_the_privileges(es_url, tmp_path):
    denied = {
        "error": {
            "root_cause": [
                {
                    "type": "security_exception",
                    "reason": "action [indices:admin/mappings/get] is unauthorized for API key id [x] of user [searcher]",
                }
            ],
            "type": "security_exception",
            "reason": "unauthorized",
        },
        "status": 403,
    }
    with StandIn(es_url, rule=lambda m, p, b: (403, denied)) as proxy:
        proc = run_cli(
            ["search", "queues"], {"ESRAG_ES_URL": proxy.url, "ESRAG_INDEX": fresh_alias(), "ESRAG_ES_API_KEY": "K-XYZ"}, check=False
        )
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 1 and len(lines) == 1 and "K-XYZ" not in proc.stderr
    assert re.search(r"denied permission \(403: security_exception: action \[indices:admin/mappings/get\] is unauthorized", lines[0])
    assert 'docs/elasticsearch.md "Elasticsearch privileges"' in lines[0]
