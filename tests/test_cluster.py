"""The Elasticsearch store on a real 3-node cluster (scripts/es-node cluster, 9.2.8, ports
9400-9402; tests/conftest.py ``es_cluster``): the whole store contract with 3 shards and 1
replica, failover between the node URLs, the bulk-load profile, a data node SIGKILLed in the
middle of an ingest and of a loop of searches, and — on a throwaway single node of its own — an
ingest that waits for its node to come back, or fails clearly when it does not."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import threading
import time
import uuid
import warnings
from pathlib import Path

import numpy as np
import pytest
from elasticsearch import Elasticsearch

from conftest import ES_NODE, es_cluster_command
from esrag.chunking.header import HeaderChunker
from esrag.config import SearchSettings, Settings
from esrag.errors import ConfigError, StoreError
from esrag.ingest import Ingester
from esrag.search.searcher import Searcher
from esrag.stores.elastic import ClusterWarning, ElasticStore
from esrag.stores.elastic.cluster import BULK_LOAD_KEY, ClusterOptions
from esrag.stores.sqlite import SQLiteStore
from paths import DATA
from store_suite import StoreContract, make_chunk, meta, unit
from test_store_elastic import HashEmbedder as _HashEmbedder

EMBED = ["section_path", "text"]
BM25 = {"text": 1.0, "section_path": 1.0}
LARAVEL = DATA / "corpora" / "laravel-docs"
REQUESTS = DATA / "corpora" / "requests-docs"
SHARDED = ClusterOptions(shards=3, replicas=1)
LOADING = ClusterOptions(shards=3, replicas=1, bulk_load=True)


def fresh_alias() -> str:
    return f"esrag-c-{uuid.uuid4().hex[:12]}"


def quietly(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClusterWarning)
        return fn(*args, **kw)


@pytest.fixture
def make_cluster_store(es_cluster):
    """Stores on fresh aliases of the cluster (all node URLs); dropped afterwards."""
    made: list[ElasticStore] = []

    def make(index: str | None = None, url: str | None = None, **kw) -> ElasticStore:
        kw.setdefault("cluster", SHARDED)
        s = ElasticStore(url or ",".join(es_cluster), index or fresh_alias(), **kw)
        made.append(s)
        return s

    yield make
    for s in made:
        cleaner = ElasticStore(",".join(es_cluster), s.alias)
        cleaner.drop()
        cleaner.close()
        s.close()


@pytest.fixture
def store(make_cluster_store):
    s = make_cluster_store()
    quietly(s.ensure, meta())
    return s


@pytest.mark.integration
class TestClusterStore(StoreContract):
    """The whole shared store contract on the 3-node cluster, 3 shards and 1 replica."""


# -- index settings, failover, bulk-load profile ----------------------------------------------
def _settings(s: ElasticStore) -> dict:
    index = s._state()["concrete"]
    return s._es.indices.get_settings(index=index).body[index]["settings"]["index"]


def _write(s: ElasticStore, n: int, start: int = 0) -> None:
    chunks = [make_chunk(i, f"chunk {i} about queues") for i in range(start, start + n)]
    report = s.write(chunks, np.stack([unit(i % 8) for i in range(start, start + n)]), ["m"] * n)
    assert not report.failed, report.failed


@pytest.mark.integration
def test_a_first_load_runs_without_refresh_or_replica_and_ends_green(make_cluster_store, es_cluster):
    s = make_cluster_store(batch_size=5, cluster=LOADING)
    quietly(s.ensure, meta())
    got = _settings(s)
    assert (got["number_of_shards"], got["number_of_replicas"], got["auto_expand_replicas"]) == ("3", "1", "false")
    assert "refresh_interval" not in got
    _write(s, 6)  # a first write of at least one batch into the empty index: the profile starts
    got = _settings(s)
    assert (got["refresh_interval"], got["number_of_replicas"]) == ("-1", "0")
    assert BULK_LOAD_KEY in s._state()["raw"]
    assert ElasticStore(",".join(es_cluster), s.alias).stats()["chunks"] == 0  # nothing visible before the end
    _write(s, 4, start=6)  # later writes of the same load change nothing
    quietly(s.refresh)  # the ingest's end: replicas and refresh back, green, then visible
    got = _settings(s)
    assert got["number_of_replicas"] == "1" and "refresh_interval" not in got and got["auto_expand_replicas"] == "false"
    health = s._es.cluster.health(index=s._state()["concrete"]).body
    assert health["status"] == "green" and health["active_shards"] == 6  # 3 primaries + 3 replicas
    fresh = ElasticStore(",".join(es_cluster), s.alias, cluster=LOADING, batch_size=5)
    assert BULK_LOAD_KEY not in fresh._state()["raw"] and fresh.stats()["chunks"] == 10
    _write(fresh, 6, start=10)  # the index is not empty any more: no profile for this store
    assert _settings(fresh)["number_of_replicas"] == "1" and BULK_LOAD_KEY not in fresh._state()["raw"]
    fresh.close()


@pytest.mark.integration
def test_a_small_first_write_and_a_non_empty_index_keep_their_settings(make_cluster_store, es_cluster):
    s = make_cluster_store(cluster=LOADING)  # batch_size 500
    quietly(s.ensure, meta())
    _write(s, 6)
    assert "refresh_interval" not in _settings(s) and BULK_LOAD_KEY not in s._state()["raw"]


@pytest.mark.integration
def test_an_ingest_that_died_mid_load_is_restored_by_the_next(make_cluster_store, es_cluster):
    s = make_cluster_store(batch_size=5, cluster=LOADING)
    quietly(s.ensure, meta())
    _write(s, 6)  # the profile starts; the process "dies" before its refresh
    assert _settings(s)["refresh_interval"] == "-1"
    again = make_cluster_store(index=s.alias)
    quietly(again.ensure, meta())
    got = _settings(again)
    assert got["number_of_replicas"] == "1" and "refresh_interval" not in got
    assert BULK_LOAD_KEY not in again._state()["raw"]
    assert BULK_LOAD_KEY not in ElasticStore(",".join(es_cluster), s.alias)._state()["raw"]


@pytest.mark.integration
def test_the_profile_is_off_by_default_and_replicas_left_to_the_template(make_cluster_store):
    assert ClusterOptions().bulk_load is False and Settings().elasticsearch.bulk_load is False
    s = make_cluster_store(cluster=ClusterOptions(shards=2), batch_size=5)
    quietly(s.ensure, meta())
    _write(s, 6)
    got = _settings(s)
    assert (got["number_of_shards"], got["auto_expand_replicas"]) == ("2", "0-1") and "refresh_interval" not in got
    assert BULK_LOAD_KEY not in s._state()["raw"]


@pytest.mark.integration
def test_a_rebuild_loads_with_the_profile_and_swaps_only_when_green(make_cluster_store, es_cluster):
    s = make_cluster_store(cluster=LOADING, batch_size=20)
    ingest(s, REQUESTS, "requests", HashEmbedder(16))
    first = s._state()["concrete"]
    seen: list[dict] = []

    def look(call: int) -> None:  # the second window of the rebuild: the new index is loading
        if call == 2:
            index = s._state()["concrete"]
            seen.append({"index": index, **s._es.indices.get_settings(index=index).body[index]["settings"]["index"]})

    s.begin_rebuild()
    summary = ingest(s, REQUESTS, "requests", HashEmbedder(32, on_call=look), window=40)
    assert not summary.failures
    assert seen and seen[0]["index"] != first and (seen[0]["refresh_interval"], seen[0]["number_of_replicas"]) == ("-1", "0")
    done = quietly(s.finish_rebuild)
    assert done["swapped"] and done["previous"] == first
    new = done["index"]
    got = s._es.indices.get_settings(index=new).body[new]["settings"]["index"]
    assert got["number_of_replicas"] == "1" and "refresh_interval" not in got
    assert s._es.cluster.health(index=new).body["status"] == "green"
    fresh = ElasticStore(",".join(es_cluster), s.alias)
    assert fresh.meta().dims == 32 and BULK_LOAD_KEY not in fresh._state()["raw"]
    assert fresh.stats()["chunks"] == summary.chunks_new
    fresh.close()


@pytest.mark.integration
def test_the_client_fails_over_past_a_dead_node_url(make_cluster_store, es_cluster):
    dead = f"http://127.0.0.1:{free_port()}"
    s = make_cluster_store(url=",".join([dead, *es_cluster]))
    quietly(s.ensure, meta())
    for _ in range(4):  # every request, whichever node it starts on, is answered
        assert s.stats()["chunks"] == 0
    assert s.url == ",".join([dead, *es_cluster])


@pytest.mark.integration
def test_a_malformed_url_in_the_list_is_named(es_cluster):
    with pytest.raises(ConfigError, match=r"entry 'htp://127\.0\.0\.1:9401' \(node 2 of 3"):
        ElasticStore(f"{es_cluster[0]},htp://127.0.0.1:9401,{es_cluster[2]}", "x")
    with pytest.raises(ConfigError) as err:
        ElasticStore("http://u:s3cret@127.0.0.1:9400,http://u:s3cret@:9401", "x")
    assert "s3cret" not in str(err.value) and "node 2 of 2" in str(err.value)


@pytest.mark.integration
def test_settings_reach_the_store(es_cluster, tmp_path):
    env = {
        "ESRAG_ES_URL": ",".join(es_cluster),
        "ESRAG_ELASTICSEARCH__SHARDS": "3",
        "ESRAG_ELASTICSEARCH__REPLICAS": "1",
        "ESRAG_ELASTICSEARCH__RETRY_SECONDS": "15",
        "ESRAG_ELASTICSEARCH__BULK_LOAD": "true",
    }
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        s = ElasticStore.from_settings(Settings())
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    assert s.cluster == ClusterOptions(shards=3, replicas=1, retry_seconds=15.0, bulk_load=True)
    assert len(s._es.transport.node_pool.all()) == 3
    s.close()


# -- node failures -------------------------------------------------------------------------------
class HashEmbedder(_HashEmbedder):
    """test_store_elastic's bag-of-hashed-words embedder (spec ``test:hash-<dims>``) with a hook:
    ``on_call(batch_number)`` runs before each batch (the test's way into the middle of an
    ingest); batches are numbered from 1."""

    def __init__(self, dims: int = 64, on_call=None) -> None:
        super().__init__(dims, "hash")
        self.batches, self.on_call = 0, on_call

    def embed_documents(self, texts, progress=None):
        self.batches += 1
        if self.on_call:
            self.on_call(self.batches)
        return super().embed_documents(texts, progress)


def ingest(store, tree: Path, corpus: str, emb: HashEmbedder, window: int = 1024):
    return quietly(
        Ingester(store, emb.spec, lambda: emb, HeaderChunker(), EMBED, BM25, window=window).run, tree, corpus, ["*.md", "*.rst"], []
    )


def reference(tmp_path: Path, tree: Path, corpus: str) -> dict[str, str]:
    """What an ingest of ``tree`` must leave in a store: chunk id -> content hash (the real
    embedded SQLite store, the same chunker)."""
    ref = SQLiteStore(tmp_path / f"ref-{corpus}" / "esrag.db")
    ingest(ref, tree, corpus, HashEmbedder())
    out = {i: e.content_hash for entries in ref.manifest(corpus).values() for i, e in entries.items()}
    ref.close()
    return out


def stored(store: ElasticStore, corpus: str) -> tuple[int, dict[str, str], list[str]]:
    """(documents of ``corpus`` counted by the cluster, id -> content hash, every content hash)."""
    store.refresh()
    count = store._es.count(index=store.alias, query={"term": {"corpus": corpus}}).body["count"]
    manifest = store.manifest(corpus)
    ids = {i: e.content_hash for entries in manifest.values() for i, e in entries.items()}
    hashes = [
        h["_source"]["content_hash"]
        for h in store._es.search(index=store.alias, query={"term": {"corpus": corpus}}, size=10_000, source=["content_hash"]).body["hits"][
            "hits"
        ]
    ]
    return count, ids, hashes


def node_pid(url: str) -> int:
    """The process id of the node at ``url`` (it says so itself)."""
    es = Elasticsearch(url)
    nodes = es.nodes.info(node_id="_local", metric="process").body["nodes"]
    es.close()
    return int(next(iter(nodes.values()))["process"]["id"])


def wait_cluster(url: str, nodes: int, status: str = "green", timeout: float = 240) -> dict:
    es = Elasticsearch(url, request_timeout=timeout + 10)
    body = es.options(ignore_status=408).cluster.health(wait_for_nodes=str(nodes), wait_for_status=status, timeout=f"{int(timeout)}s").body
    es.close()
    assert not body["timed_out"] and body["number_of_nodes"] == nodes, body
    return body


@pytest.mark.integration
def test_a_data_node_killed_mid_ingest_and_mid_search_loses_nothing(make_cluster_store, es_cluster, tmp_path):
    s = make_cluster_store(cluster=ClusterOptions(shards=3, replicas=1, retry_seconds=120, bulk_load=False), batch_size=50)
    first = ingest(s, REQUESTS, "requests", HashEmbedder())
    assert first.chunks_new > 50 and not first.failures
    want = {"requests": reference(tmp_path, REQUESTS, "requests"), "laravel": reference(tmp_path, LARAVEL, "laravel")}
    victim = es_cluster[1]
    pid = node_pid(victim)
    killed = threading.Event()

    def kill_mid_ingest(call: int) -> None:
        if call == 3:  # two windows written, the rest to come: kill while bulk requests fly
            threading.Timer(0.05, lambda: (os.kill(pid, 9), killed.set())).start()

    searcher = Searcher(s, lambda: HashEmbedder(), SearchSettings(), BM25)
    answers: list[int] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def search_loop() -> None:
        queries = ["session cookies", "authentication with a custom auth class", "streaming uploads", "timeouts"]
        while not done.is_set():
            for q in queries:
                try:
                    answers.append(len(searcher.search(q, k=5).hits))
                except BaseException as exc:  # noqa: BLE001 - every search must be answered: the test fails below
                    errors.append(exc)

    looper = threading.Thread(target=search_loop, daemon=True)
    looper.start()
    try:
        second = ingest(s, LARAVEL, "laravel", HashEmbedder(on_call=kill_mid_ingest), window=200)
        assert killed.is_set()
        for _ in range(8):  # and searches go on while the node is down
            answers.append(len(searcher.search("how do I schedule a task", k=5).hits))
    finally:
        done.set()
        looper.join(60)
        restart = es_cluster_command("start", ES_KEEP_DATA="1")
    assert restart.returncode == 0, restart.stdout[-2000:]
    assert not errors, errors[:3]
    assert len(answers) >= 8 and all(n == 5 for n in answers)
    assert not second.failures and second.chunks_new == len(want["laravel"])
    wait_cluster(es_cluster[0], 3)
    for corpus, expected in want.items():
        count, ids, hashes = stored(s, corpus)
        assert count == len(expected) == len(ids)  # 0 lost, 0 duplicated by id
        assert ids == expected
        assert sorted(hashes) == sorted(expected.values())  # 0 duplicated by content


# -- one node: the ingest waits for it, then gives up clearly ---------------------------------------
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def free_pair() -> int:
    """A free HTTP port whose transport port (+100) is free too, away from 9200-9499."""
    for _ in range(200):
        port = free_port()
        if 1024 < port < 65000 and not 9200 <= port < 9500:
            with socket.socket() as sock:
                try:
                    sock.bind(("127.0.0.1", port + 100))
                except OSError:
                    continue
            return port
    raise RuntimeError("no free port pair")


def es_single(cmd: str, port: int, **env: str) -> subprocess.CompletedProcess:
    full = {**os.environ, "ES_PORT": str(port), "ES_HEAP": "512m", **env}
    return subprocess.run([str(ES_NODE), cmd, "9.2.8"], env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)


@pytest.fixture
def lone_node(es_cluster):
    """A throwaway single 9.2.8 node on a free port (never the shared 9200/9201), stopped after."""
    port = free_pair()
    started = es_single("start", port)
    assert started.returncode == 0, started.stdout[-2000:]
    try:
        yield port
    finally:
        es_single("stop", port)
        base = os.environ.get("ES_HOME_BASE") or ("/var/cache/esrag/es" if os.geteuid() == 0 else str(Path.home() / ".cache/esrag/es"))
        shutil.rmtree(Path(base) / "nodes" / f"9.2.8-{port}", ignore_errors=True)  # its config, data and logs


@pytest.mark.integration
def test_one_node_ingest_waits_for_its_node_then_fails_clearly(lone_node, tmp_path):
    url = f"http://127.0.0.1:{lone_node}"
    tree = tmp_path / "docs"
    tree.mkdir()
    for name in ("scheduling.md", "queues.md", "cache.md", "validation.md"):
        shutil.copy(LARAVEL / name, tree / name)
    expected = reference(tmp_path, tree, "laravel")

    # one node, replicas 1 and the profile: the replicas can never be assigned; said at once, no wait
    lonely = ElasticStore(url, fresh_alias(), batch_size=5, cluster=ClusterOptions(replicas=1, bulk_load=True))
    quietly(lonely.ensure, meta())
    _write(lonely, 6)
    t0 = time.monotonic()
    with pytest.warns(ClusterWarning, match=r"stays yellow: 1 replicas can never be assigned on 1 data node\(s\)"):
        lonely.refresh()
    assert time.monotonic() - t0 < 20 and _settings(lonely)["number_of_replicas"] == "1"
    lonely.drop()
    lonely.close()

    s = ElasticStore(url, fresh_alias(), batch_size=40, cluster=ClusterOptions(retry_seconds=240))
    back = threading.Event()
    restarted: list[subprocess.CompletedProcess] = []

    def stop_and_restart(call: int) -> None:
        if call == 2:
            os.kill(node_pid(url), 9)

            def later() -> None:
                time.sleep(3)
                restarted.append(es_single("start", lone_node, ES_KEEP_DATA="1"))
                back.set()

            threading.Thread(target=later, daemon=True).start()

    t0 = time.monotonic()
    summary = ingest(s, tree, "laravel", HashEmbedder(on_call=stop_and_restart), window=60)
    ingest_took = time.monotonic() - t0
    # the ingest goes on as soon as the node answers again, which can be before es-node's start returns
    assert back.wait(300) and restarted[0].returncode == 0, restarted and restarted[0].stdout[-2000:]
    assert ingest_took > 3  # it did wait for the node (killed, then started again 3 s later)
    assert not summary.failures and summary.chunks_new == len(expected)
    count, ids, hashes = stored(s, "laravel")
    assert count == len(expected) and ids == expected and sorted(hashes) == sorted(expected.values())
    waited = time.monotonic() - t0

    # the ingest's other requests wait for the node too: the manifest, reading vectors back for a
    # metadata update, the refresh — each started while the node is dead, answered once it is back
    chunk = s.get([next(iter(expected))])[0]
    for step, call in (
        ("manifest", lambda: s.manifest("laravel")),
        ("update_meta", lambda: s.update_meta([chunk], ["changed-meta"])),
        ("refresh", s.refresh),
    ):
        os.kill(node_pid(url), 9)
        again: list[subprocess.CompletedProcess] = []
        later = threading.Timer(3.0, lambda again=again: again.append(es_single("start", lone_node, ES_KEEP_DATA="1")))
        later.start()
        t2 = time.monotonic()
        result = call()
        later.join()
        assert again[0].returncode == 0, again[0].stdout[-2000:]
        assert time.monotonic() - t2 > 3, step
        if step == "manifest":
            assert sum(len(v) for v in result.values()) == len(expected)
        if step == "update_meta":
            assert result.written == 1 and not result.failed
    s.refresh()
    assert stored(s, "laravel")[0] == len(expected)

    # the node does not come back within retry_seconds: the clear error of today, once
    short = ElasticStore(url, s.alias, batch_size=40, cluster=ClusterOptions(retry_seconds=4))
    (tree / "extra.md").write_text("# Extra\n\nA page added later, about " + "retries and backoff " * 30 + "\n")
    for p in tree.glob("*.md"):  # every page changed: the ingest has much to write
        p.write_text(p.read_text() + "\n\nEdited.\n")
    pid = node_pid(url)
    t1 = time.monotonic()
    with pytest.raises(StoreError) as err:
        ingest(short, tree, "laravel", HashEmbedder(on_call=lambda call: call == 1 and os.kill(pid, 9)), window=60)
    took = time.monotonic() - t1
    message = str(err.value)
    cause = r"\((connection refused|connection reset|remote end closed connection|connection aborted)\)"
    # the first request after the kill: the once-per-index write-block check, or a bulk batch
    doing = r"(write a bulk batch \(\d+ documents; |read the index blocks \()"
    assert re.match(
        rf"cannot reach Elasticsearch at {re.escape(url)} {cause} while trying to {doing}"
        r"retried for \d+ s, \[elasticsearch\] retry_seconds\); start it",
        message,
    ), message
    assert "\n" not in message and "Traceback" not in message
    assert 4 <= took < 60, took
    s.close()
    short.close()
    assert waited > 3


@pytest.mark.integration
def test_a_search_with_a_shard_left_without_any_copy_fails_clearly(make_cluster_store, es_cluster):
    s = make_cluster_store(cluster=ClusterOptions(shards=3, replicas=0, bulk_load=False))
    first = ingest(s, REQUESTS, "requests", HashEmbedder())
    assert first.chunks_new > 50
    searcher = Searcher(s, lambda: HashEmbedder(), SearchSettings(), BM25)
    assert len(searcher.search("session cookies", k=5).hits) == 5
    index = s._state()["concrete"]
    holders = {row["node"] for row in s._es.cat.shards(index=index, format="json").body if row["prirep"] == "p"}
    victim = next(u for u in es_cluster if f"esrag-9.2.8-{u.rsplit(':', 1)[1]}" in holders)
    os.kill(node_pid(victim), 9)
    try:
        with pytest.raises(StoreError) as err:
            for _ in range(20):  # until the cluster has noticed the node is gone
                searcher.search("session cookies", k=5)
                time.sleep(0.5)
    finally:
        restart = es_cluster_command("start", ES_KEEP_DATA="1")
    message = str(err.value)
    assert "answered the bm25 leg from only part of the index: 1 of 3 shards did not answer" in message, message
    assert "bring the node back, or set [elasticsearch] replicas >= 1" in message and "\n" not in message
    assert restart.returncode == 0, restart.stdout[-2000:]
    wait_cluster(next(u for u in es_cluster if u != victim), 3)
    assert len(searcher.search("session cookies", k=5).hits) == 5  # the node back with its data: whole again


# -- the bulk retry loop, request by request (a real node behind a stand-in that drops or refuses) --
class Dropped(Exception):
    """Raised by a stand-in rule: the connection closes without an answer (a node that died)."""


@pytest.mark.integration
def test_bulk_sends_a_batch_again_after_dropped_connections_and_refusals(es_cluster):
    from test_store_elastic import StandIn

    seen = {"bulk": 0}

    def rule(method, path, body):
        if "/_bulk" in path:
            seen["bulk"] += 1
            if seen["bulk"] in (2, 3):  # the second batch: two connections dropped mid-request
                raise Dropped
            if 5 <= seen["bulk"] <= 9:  # the third batch: refused with 429 beyond streaming_bulk's retries
                return 429, {"error": {"type": "es_rejected_execution_exception", "reason": "queue full"}, "status": 429}
        return None

    with StandIn(es_cluster[0], rule) as standin:
        s = ElasticStore(
            standin.url,
            fresh_alias(),
            batch_size=5,
            max_retries=2,
            initial_backoff=0.05,
            max_backoff=0.2,
            cluster=ClusterOptions(retry_seconds=30),
        )
        try:
            quietly(s.ensure, meta())
            chunks = [make_chunk(i, f"chunk {i} about retries") for i in range(15)]
            report = s.write(chunks, np.stack([unit(i % 8) for i in range(15)]), ["m"] * 15)
            s.refresh()
            assert not report.failed and report.written == 15
            assert s._es.count(index=s.alias).body["count"] == 15  # every chunk once
            assert seen["bulk"] == 10  # 1 + (2 dropped + 1) + (3 refused + 2 refused again + 1) ... in order
        finally:
            ElasticStore(es_cluster[0], s.alias).drop()
            s.close()


@pytest.mark.integration
def test_bulk_gives_up_on_items_refused_for_longer_than_retry_seconds(es_cluster):
    from test_store_elastic import StandIn

    def rule(method, path, body):
        if "/_bulk" in path:
            return 503, {"error": {"type": "unavailable_shards_exception", "reason": "primary shard is not active"}, "status": 503}
        return None

    with StandIn(es_cluster[0], rule) as standin:
        s = ElasticStore(
            standin.url,
            fresh_alias(),
            batch_size=5,
            max_retries=1,
            initial_backoff=0.1,
            max_backoff=0.4,
            cluster=ClusterOptions(retry_seconds=1.5),
        )
        try:
            quietly(s.ensure, meta())
            t0 = time.monotonic()
            report = s.write([make_chunk(i, f"chunk {i}") for i in range(3)], np.stack([unit(i) for i in range(3)]), ["m"] * 3)
            took = time.monotonic() - t0
            assert report.written == 0 and len(report.failed) == 3
            reason = next(iter(report.failed.values()))
            assert reason.startswith("gave up after 1 retries: 503 unavailable_shards_exception: primary shard is not active (and ")
            assert reason.endswith(" s of retries)") and 1.0 <= took < 10
        finally:
            ElasticStore(es_cluster[0], s.alias).drop()
            s.close()


def test_node_urls_are_split_checked_and_redacted():
    from esrag.stores.elastic.connection import node_urls, redact_url, url_secrets

    urls = node_urls(" http://a:9200 , https://u:pw@b:9243 ")
    assert urls == ["http://a:9200", "https://u:pw@b:9243"] and url_secrets(urls) == ["pw"]
    assert redact_url("http://a:9200,https://u:pw@b:9243") == "http://a:9200,https://b:9243"
    for bad, named in (
        ("http://a:9200,", "''"),
        ("http://a:9200,b:9201", "'b:9201'"),
        ("http://a:99999", "'http://a:99999'"),
        ("http://a:9200,ftp://u:pw@c:21", "'ftp://c:21'"),
    ):
        with pytest.raises(ConfigError) as err:
            node_urls(bad)
        assert f"entry {named}" in str(err.value) and "pw" not in str(err.value) and "\n" not in str(err.value)
