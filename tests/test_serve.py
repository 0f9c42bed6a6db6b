"""``esrag serve``: the real uvicorn server as a subprocess over a real index (six Laravel pages
and one hostile page, ingested by the real CLI into the SQLite store), driven by httpx."""

from __future__ import annotations

import json
import re
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from esrag.tokens import count_tokens
from serve_helpers import ESRAG, Server, clean_env, indexed_env, ingest, make_docs, run_cli

# needs a service, a model or a subprocess (see tests/conftest.py)
pytestmark = pytest.mark.integration

QUERIES = [
    "schedule a task every minute",
    "dispatch a job to a queue",
    "validate a form request",
    "define a route with parameters",
    "cache a value forever",
    "blade components slots",
]


@pytest.fixture(scope="module")
def index_env(tmp_path_factory):
    return indexed_env(tmp_path_factory.mktemp("serve"))


@pytest.fixture(scope="module")
def server(index_env):
    s = Server(["serve"], index_env)
    yield s
    s.stop()


def test_search_get_and_post_give_the_cli_json_hits(server, index_env):
    cli = json.loads(run_cli(["search", QUERIES[0], "-k", "5", "--json"], index_env).stdout)
    got = httpx.get(server.url + "/search", params={"q": QUERIES[0], "k": 5}).json()
    posted = httpx.post(server.url + "/search", json={"q": QUERIES[0], "k": 5}).json()
    assert got["hits"] == cli == posted["hits"]  # the same hits, field for field
    assert cli[0]["source_path"] == "scheduling.md" and set(cli[0]) >= {"section_path", "start_line", "end_line", "legs"}
    assert {"embed", "total", "fetch"} <= set(got["timings_ms"]) and "model_load" not in got["timings_ms"]  # warm
    assert "fusion" not in got


def test_explain_budget_corpus_and_mode(server):
    r = httpx.get(server.url + "/search", params={"q": QUERIES[1], "k": 3, "explain": "true"}).json()
    assert r["fusion"].startswith("rrf") and all(set(h["legs"]) <= {"bm25", "dense"} and h["legs"] for h in r["hits"])
    b = httpx.post(server.url + "/search", json={"q": QUERIES[1], "budget": 300}).json()
    assert 0 < sum(h["tokens"] for h in b["hits"]) <= 300  # whole hits, or one shortened at a block boundary
    evil = httpx.get(server.url + "/search", params={"q": "pwned payloads", "corpus": "evil", "mode": "bm25"}).json()
    assert evil["hits"] and {h["corpus"] for h in evil["hits"]} == {"evil"}
    one = httpx.post(server.url + "/search", json={"q": "pwned payloads", "corpus": "evil", "mode": "bm25"}).json()
    assert one["hits"] == evil["hits"]  # a JSON body may name one corpus as a string


def test_concurrent_requests_get_their_own_results(server):
    """One store and one model behind 8 concurrent clients: each answer equals the sequential one."""
    want = {q: [h["id"] for h in httpx.get(server.url + "/search", params={"q": q, "k": 5}).json()["hits"]] for q in QUERIES}
    jobs = [QUERIES[i % len(QUERIES)] for i in range(48)]

    def one(q: str) -> tuple[str, list[str]]:
        r = httpx.post(server.url + "/search", json={"q": q, "k": 5}, timeout=60)
        assert r.status_code == 200, r.text
        return q, [h["id"] for h in r.json()["hits"]]

    with ThreadPoolExecutor(8) as pool:
        for q, ids in pool.map(one, jobs):
            assert ids == want[q], q


def test_corpora_health_openapi_and_pages(server):
    assert httpx.get(server.url + "/corpora").json()["corpora"]["laravel"]["sources"] == 6
    health = httpx.get(server.url + "/health").json()
    assert health["ok"] and health["store_reachable"] and health["model_loaded"] and health["chunks"] > 600
    paths = httpx.get(server.url + "/openapi.json").json()["paths"]
    assert {"/search", "/ask", "/pages/{path}", "/corpora", "/health"} <= set(paths) and {"get", "post"} <= set(paths["/search"])
    page = httpx.get(server.url + "/pages/scheduling.md", params={"corpus": "laravel"}).json()
    starts = [s["start_line"] for s in page["sections"]]
    assert page["source_path"] == "scheduling.md" and starts == sorted(starts) and len(starts) > 10
    assert page["sections"][0]["section_path"].startswith("Task Scheduling") and "->everyMinute()" in page["text"]
    assert set(page) == {"source_path", "corpus", "doc_version", "title", "url", "sections", "text", "versions"}
    assert page["versions"] == [""] and page["doc_version"] is None


def test_search_token_budget_bounds_the_whole_json_body(server):
    """Issue 30: token_budget counts the whole response; every field of a hit is kept."""
    full = httpx.get(server.url + "/search", params={"q": QUERIES[0], "k": 10}).json()
    every_hit = set.intersection(*(set(h) for h in full["hits"]))  # the fields every hit has (a merged hit adds chunk_ids)
    assert {"id", "source_path", "section_path", "text", "tokens", "url", "alt_urls", "score"} <= every_hit
    tiny = httpx.get(server.url + "/search", params={"q": QUERIES[0], "token_budget": 100})
    assert tiny.status_code == 200 and count_tokens(tiny.text) <= 100 and tiny.json()["left_out"] > 0  # none fits: said so
    for budget in (600, 1200, 4000):
        r = httpx.get(server.url + "/search", params={"q": QUERIES[0], "token_budget": budget})
        assert r.status_code == 200 and count_tokens(r.text) <= budget, (budget, count_tokens(r.text))
        body = r.json()
        assert body["hits"] and set(body) >= {"hits", "timings_ms"} and all(set(h) >= every_hit for h in body["hits"])
        assert body["left_out"] > 0 if budget < 4000 else True
        for h in body["hits"]:  # a shortened hit is cut at a line end: whole lines of its page, from its start
            if h.get("truncated"):
                page = httpx.get(server.url + f"/pages/{h['source_path']}", params={"offset": h["start_line"]}).json()
                assert page["text"].startswith(h["text"]), h["id"]
    posted = httpx.post(server.url + "/search", json={"q": QUERIES[0], "token_budget": 1200}).json()
    assert [h["id"] for h in posted["hits"]] == [
        h["id"] for h in httpx.get(server.url + "/search", params={"q": QUERIES[0], "token_budget": 1200}).json()["hits"]
    ]


def test_pages_by_section_offset_and_budget_keep_the_page_fields(server):
    r = httpx.get(server.url + "/pages/scheduling.md", params={"token_budget": 1500})
    assert r.status_code == 200 and count_tokens(r.text) <= 1500
    page = r.json()
    assert {"source_path", "corpus", "doc_version", "title", "url", "sections", "text", "versions"} <= set(page)
    assert page["complete"] is False and page["left_out"]["next"]["offset"] > page["end_line"]
    nxt = httpx.get(server.url + "/pages/scheduling.md", params={"token_budget": 1500, "offset": page["left_out"]["next"]["offset"]}).json()
    assert nxt["start_line"] == page["left_out"]["next"]["offset"] and nxt["left_out"]["before"]["sections"] >= 1
    section = httpx.get(server.url + "/pages/scheduling.md", params={"section": "running-the-scheduler"}).json()
    assert section["sections"][0]["section_path"] == "Task Scheduling > Running the Scheduler"
    assert all(s["section_path"].startswith("Task Scheduling > Running the Scheduler") for s in section["sections"])
    missing = httpx.get(server.url + "/pages/schedulng.md")
    assert missing.status_code == 404 and "nearest: scheduling.md" in missing.json()["error"] and "/corpora" in missing.json()["error"]
    bad = httpx.get(server.url + "/pages/scheduling.md", params={"section": "nope"})
    assert bad.status_code == 422 and "not on page 'scheduling.md'" in bad.json()["error"]
    corpora = httpx.get(server.url + "/corpora").json()["corpora"]
    assert corpora["laravel"]["versions"][""]["chunks"] == corpora["laravel"]["chunks"] and corpora["laravel"]["default_version"] == ""


HOSTILE = [
    ("GET", "/search", {"params": {"q": "x" * 5000}}, 422),
    ("GET", "/search", {"params": {"q": "routes", "k": 10**9}}, 422),
    ("GET", "/search", {"params": {"q": "routes", "k": 0}}, 422),
    ("GET", "/search", {"params": {"q": "routes", "k": "ten"}}, 422),
    ("GET", "/search", {"params": {"q": "routes", "budget": -5}}, 422),
    ("GET", "/search", {"params": {"q": "routes", "budget": 10**12}}, 422),
    ("GET", "/search", {"params": {"q": "routes", "mode": "evil"}}, 422),
    ("GET", "/search", {"params": {"q": ""}}, 422),
    ("GET", "/search", {"params": {"q": "   "}}, 422),
    ("GET", "/search", {}, 422),
    ("GET", "/search", {"params": {"q": "routes", "expand": "sideways:9"}}, 422),
    ("GET", "/search", {"params": {"q": "routes", "expand": "neighbours:999999"}}, 422),  # was 500 (too many SQL variables)
    ("GET", "/search", {"params": {"q": "routes", "expand": "neighbours:" + "9" * 90}}, 422),
    ("GET", "/search", {"params": {"q": "routes", "corpus": "nope"}}, 404),
    ("POST", "/search", {"content": b"{not json", "headers": {"content-type": "application/json"}}, 422),
    ("POST", "/search", {"content": b"[1, 2]", "headers": {"content-type": "application/json"}}, 422),
    ("POST", "/search", {"json": {"q": "routes", "drop": "tables"}}, 422),
    ("POST", "/search", {"json": {"q": "routes", "k": -1}}, 422),
    ("POST", "/search", {"json": {"q": "routes", "k": True}}, 422),  # a boolean is not an integer (issue 26)
    ("POST", "/search", {"json": {"q": "routes", "budget": False}}, 422),
    ("POST", "/search", {"json": {"q": "routes", "token_budget": True}}, 422),
    ("POST", "/search", {"json": {"q": "routes", "token_budget": 10**9}}, 422),
    ("GET", "/search", {"params": {"q": "routes", "k": "true"}}, 422),
    ("POST", "/ask", {"json": {"question": "routes?", "budget": True}}, 422),
    ("GET", "/pages/scheduling.md", {"params": {"offset": "true"}}, 422),
    ("GET", "/pages/scheduling.md", {"params": {"offset": 10**6}}, 422),
    ("POST", "/search", {"content": b'{"q": "' + b"a" * 200_000 + b'"}', "headers": {"content-type": "application/json"}}, 413),
    ("POST", "/search", {"content": (b"a" * 8192 for _ in range(20)), "headers": {"content-type": "application/json"}}, 413),
    ("POST", "/ask", {"json": {"question": ""}}, 422),
    ("GET", "/pages/../../etc/passwd", {}, 404),
    ("GET", "/pages/%2e%2e/%2e%2e/etc/passwd", {}, 404),
    ("GET", "/pages/..%2f..%2fetc%2fpasswd", {"params": {"corpus": "laravel"}}, 404),
    ("GET", "/pages/scheduling.md", {"params": {"corpus": "nope"}}, 404),
    ("PUT", "/search", {}, 405),
    ("GET", "/nowhere", {}, 404),
]


@pytest.mark.parametrize("method,path,kw,status", HOSTILE, ids=[f"{m} {p} {s}" for m, p, _, s in HOSTILE])
def test_hostile_requests_get_4xx_with_a_one_line_error(server, method, path, kw, status):
    r = httpx.request(method, server.url + path, timeout=30, **kw)
    assert r.status_code == status, r.text[:300]
    body = r.json()
    assert set(body) == {"error"} and "\n" not in body["error"] and len(body["error"]) <= 500
    assert "Traceback" not in r.text and 'File "' not in r.text and "/work/" not in r.text


def test_the_server_keeps_answering_after_the_battery(server):
    for method, path, kw, _ in HOSTILE:
        httpx.request(method, server.url + path, timeout=30, **kw)
    r = httpx.get(server.url + "/search", params={"q": QUERIES[0], "k": 2})
    assert r.status_code == 200 and r.json()["hits"][0]["source_path"] == "scheduling.md"
    assert server.proc.poll() is None


def test_cors_is_off_unless_configured(server):
    r = httpx.get(server.url + "/corpora", headers={"Origin": "https://evil.example"})
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers
    pre = httpx.options(server.url + "/search", headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"})
    assert "access-control-allow-origin" not in pre.headers


def test_page_is_self_contained_with_a_strict_csp(server):
    r = httpx.get(server.url + "/")
    csp = r.headers["content-security-policy"]
    assert r.status_code == 200 and "<script>" in r.text and "default-src 'none'" in csp and "'unsafe-inline'" not in csp
    assert not re.search(r'(src|href)="(https?:)?//|@import|<link ', r.text)  # nothing loaded from elsewhere
    assert "innerHTML" not in r.text and "insertAdjacentHTML" not in r.text


def test_a_non_loopback_bind_needs_an_api_key_and_the_key_is_enforced(index_env):
    proc = subprocess.run(
        [ESRAG, "serve", "--host", "0.0.0.0", "--port", "1"], env=clean_env(index_env), capture_output=True, text=True, timeout=60
    )
    assert proc.returncode != 0 and "needs an API key" in proc.stderr and "--api-key" in proc.stderr
    s = Server(["serve", "--api-key", "s3cret-key"], index_env)
    try:
        assert httpx.get(s.url + "/search", params={"q": "queues"}).status_code == 401
        assert httpx.get(s.url + "/search", params={"q": "queues"}, headers={"X-API-Key": "s3cret-kez"}).status_code == 401
        assert httpx.get(s.url + "/search", params={"q": "queues"}, headers={"Authorization": "Bearer s3cret-key"}).status_code == 200
        assert httpx.get(s.url + "/corpora", headers={"X-API-Key": "s3cret-key"}).status_code == 200
        assert httpx.get(s.url + "/").status_code == 200 and httpx.get(s.url + "/health").status_code == 200
        assert "s3cret" not in httpx.get(s.url + "/openapi.json", headers={"X-API-Key": "s3cret-key"}).text
    finally:
        s.stop()


def test_sigterm_stops_the_server_gracefully_with_status_0(index_env):
    s = Server(["serve"], index_env)
    assert httpx.get(s.url + "/search", params={"q": "queues"}).status_code == 200
    s.proc.send_signal(signal.SIGTERM)
    # graceful: exit status 0, not killed. The 300 s only guards against a hang (a wait with no
    # end); how fast it stops (~1 s on a quiet machine) is measured by benchmarks/bench_serve.py
    assert s.proc.wait(300) == 0
    assert "Shutting down" in s.output() or "Finished server process" in s.output()


# -- on Elasticsearch (both test nodes) ------------------------------------------------------------
@pytest.fixture(scope="module")
def es_served(es_url, tmp_path_factory):
    """The same index on the node under test, served by ``esrag serve`` through a counting proxy."""
    import uuid

    from esrag.stores.elastic import ElasticStore
    from serve_helpers import CountingProxy

    base = tmp_path_factory.mktemp("serve-es")
    docs, evil = make_docs(base / "docs")
    alias = f"esrag-t-{uuid.uuid4().hex[:12]}"
    env = {"ESRAG_ES_URL": es_url, "ESRAG_INDEX": alias, "ESRAG_EMBEDDING_CACHE": str(base / "emb.db")}
    proxy = CountingProxy(es_url)
    server = None
    try:
        ingest(env, docs, evil)
        server = Server(["serve"], {**env, "ESRAG_ES_URL": proxy.url})
        yield server, proxy, env
    finally:
        if server is not None:
            server.stop()
        proxy.stop()
        cleaner = ElasticStore(es_url, alias)
        cleaner.drop()
        cleaner.close()


def test_es_hybrid_search_is_one_msearch_per_request_once_warm(es_served):
    server, proxy, env = es_served
    for params in ({"q": "warm up"}, {"q": "warm up", "corpus": "laravel"}):
        assert httpx.get(server.url + "/search", params=params).status_code == 200  # capability probes, corpora list
    before = proxy.snapshot()
    for i in range(10):
        params = {"q": QUERIES[i % len(QUERIES)], "k": 5, **({"corpus": "laravel"} if i % 2 else {})}
        r = httpx.get(server.url + "/search", params=params)
        assert r.status_code == 200 and r.json()["hits"]
    delta = proxy.snapshot() - before
    # one _msearch per search; a hit too small to stand alone (search.min_hit_tokens) reads its
    # neighbours with one _search of its page (esrag.search.sections)
    searches = sum(n for (m, p), n in delta.items() if p.endswith("/_msearch"))
    assert searches == 10 and all(m == "POST" and p.endswith(("/_msearch", "/_search")) for m, p in delta), delta
    assert r.json()["timings_ms"]["cluster_took"] >= 0 and r.json()["timings_ms"]["round_trip"] >= r.json()["timings_ms"]["cluster_took"]


def test_es_http_equals_cli_and_concurrent_clients_get_their_own_results(es_served):
    server, proxy, env = es_served
    cli = json.loads(run_cli(["search", QUERIES[2], "-k", "5", "--json"], env).stdout)
    assert [h["id"] for h in httpx.get(server.url + "/search", params={"q": QUERIES[2], "k": 5}).json()["hits"]] == [h["id"] for h in cli]
    want = {q: httpx.get(server.url + "/search", params={"q": q, "k": 5}).json()["hits"] for q in QUERIES}

    def one(q: str):
        r = httpx.post(server.url + "/search", json={"q": q, "k": 5}, timeout=60)
        assert r.status_code == 200, r.text
        return q, r.json()["hits"]

    with ThreadPoolExecutor(8) as pool:
        for q, hits in pool.map(one, [QUERIES[i % len(QUERIES)] for i in range(48)]):
            assert [(h["id"], h["text"]) for h in hits] == [(h["id"], h["text"]) for h in want[q]], q


def test_eight_clients_keep_answering_while_another_process_ingests(tmp_path):
    """Searches read on a connection per server thread (issue 39) while the writes of an ingest
    in another process commit: 8 keep-alive clients searching all along get 200 with hits every
    time, the Laravel hits never change (another corpus is written), and once the ingest is done
    the server finds the new corpus (its vector matrix is read again after the commits)."""
    import threading

    env = indexed_env(tmp_path)
    more = tmp_path / "more"
    more.mkdir()
    for i in range(40):
        (more / f"page{i}.md").write_text(f"# Zephyrine page {i}\n\nThe zephyrine widget number {i} hums quietly.\n\n" * 3)
    server = Server(["serve"], env)
    try:
        want = {
            q: [
                h["id"]
                for h in httpx.get(server.url + "/search", params={"q": q, "k": 5, "corpus": "laravel", "mode": "dense"}).json()["hits"]
            ]
            for q in QUERIES
        }
        done = threading.Event()

        def client(n: int) -> list[tuple[int, bool, int]]:
            seen = []
            with httpx.Client(timeout=60) as c:
                while not done.is_set() or len(seen) < 3:
                    q = QUERIES[(n + len(seen)) % len(QUERIES)]
                    r = c.get(server.url + "/search", params={"q": q, "k": 5, "corpus": "laravel", "mode": "dense"})
                    ids = [h["id"] for h in r.json()["hits"]] if r.status_code == 200 else []
                    seen.append((r.status_code, ids == want[q] or r.text, len(ids)))
            return seen

        with ThreadPoolExecutor(8) as pool:
            futures = [pool.submit(client, n) for n in range(8)]
            try:
                run_cli(["ingest", str(more), "--corpus", "more", "--json"], env)
            finally:
                done.set()
            answers = [a for f in futures for a in f.result()]
        assert answers and all(status == 200 and same is True and n > 0 for status, same, n in answers), answers[:5]
        # no corpus filter: the service's corpus list may be up to CORPORA_TTL_S old; the vectors are not
        found = httpx.get(server.url + "/search", params={"q": "zephyrine widget hums", "k": 5, "mode": "dense"}).json()
        assert [h["corpus"] for h in found["hits"]][:3] == ["more"] * 3, found
    finally:
        server.stop()


def test_port_0_announces_the_port_it_got(index_env):
    """``--port 0`` lets the system choose: the banner and ``--json`` name the bound port (not 0),
    and the server answers there."""
    proc = subprocess.Popen(
        [ESRAG, "serve", "--port", "0", "--json"], env=clean_env(index_env), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert proc.stdout is not None
        announced = json.loads(proc.stdout.readline())
        port = int(announced["url"].rsplit(":", 1)[1].strip("/"))
        assert port > 0
        assert httpx.get(announced["url"] + "health", timeout=30).json()["ok"] is True
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
