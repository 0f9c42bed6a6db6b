"""Issue 39, many clients at once: a process runs at most ``[serve] search_concurrency``
searches at a time (auto: the CPUs it may use, on the embedded store with a local embedder;
:func:`esrag.service.search_concurrency`), the others wait their turn — in the service (the
Python API, MCP tools) and in front of ``esrag serve``'s worker threads — and every search
still answers."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest

from esrag.config import Settings
from esrag.service import SearchRequest, SearchService, search_concurrency
from esrag.stores.sqlite import SQLiteStore
from serve_helpers import Server, indexed_env
from store_suite import make_chunk, meta, unit

# needs a service, a model or a subprocess (see tests/conftest.py)
pytestmark = pytest.mark.integration


@pytest.fixture
def store(tmp_path):
    s = SQLiteStore(tmp_path / "slots.db")
    s.ensure(meta())
    texts = [f"queue worker {i} runs jobs from the scheduler" for i in range(12)]
    s.write([make_chunk(i, t) for i, t in enumerate(texts)], np.stack([unit(i % 8) for i in range(12)]), ["m"] * 12)
    yield s
    s.close()


def test_auto_is_the_cpus_on_the_embedded_store_with_a_local_embedder(store):
    cpus = len(os.sched_getaffinity(0))
    assert search_concurrency(Settings(db=None, es_url=None), store) == cpus
    assert search_concurrency(Settings(db=None, es_url=None, serve={"search_concurrency": 3}), store) == 3
    # a remote embedder: each search mostly waits on the network, so no limit
    assert search_concurrency(Settings(db=None, es_url=None, embedder="openai:text-embedding-3-small"), store) == 0
    # a search that waits on an LLM or a reranker server: no limit either; a local cross-encoder is CPU work here
    assert search_concurrency(Settings(db=None, es_url=None, search={"reformulate": 2}), store) == 0
    assert search_concurrency(Settings(db=None, es_url=None, search={"rerank": "http://127.0.0.1:9/rerank"}), store) == 0
    assert search_concurrency(Settings(db=None, es_url=None, search={"rerank": "cross-encoder:some-model"}), store) == cpus
    assert SearchService(Settings(db=None, es_url=None), store).search_slots == cpus


def test_settings_refuse_a_negative_concurrency():
    with pytest.raises(ValueError, match="search_concurrency"):
        Settings(db=None, es_url=None, serve={"search_concurrency": -1})


@pytest.mark.parametrize("slots", [1, 3])
def test_the_service_runs_at_most_its_slots_at_once(store, slots):
    service = SearchService(Settings(db=None, es_url=None, serve={"search_concurrency": slots}), store)
    pipeline = service.pipeline(None)
    real = pipeline.search
    running, most, lock = [0], [0], threading.Lock()

    def counted(*args, **kwargs):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            time.sleep(0.02)  # long enough for the other threads to arrive
            return real(*args, **kwargs)
        finally:
            with lock:
                running[0] -= 1

    pipeline.search = counted
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda i: service.search(SearchRequest(f"queue worker {i}", k=3, mode="bm25")), range(24)))
    assert all(r.hits for r in results)
    assert most[0] == slots  # never more, and the slots are used


def test_serve_with_one_slot_answers_every_concurrent_client(tmp_path):
    """A real ``esrag serve`` holding searches to one at a time: 8 keep-alive clients all get
    their answers (none fails, none waits forever), and the page and health routes still answer
    while searches queue."""
    env = indexed_env(tmp_path)
    config = tmp_path / "esrag.toml"
    config.write_text("[serve]\nsearch_concurrency = 1\n", encoding="utf-8")
    env["ESRAG_CONFIG"] = str(config)
    server = Server(["serve"], env)
    try:

        def client(i: int) -> list[int]:
            with httpx.Client(timeout=60) as c:
                return [c.get(server.url + "/search", params={"q": f"queue worker retry {i} {j}", "k": 3}).status_code for j in range(5)]

        with ThreadPoolExecutor(8) as pool:
            futures = [pool.submit(client, i) for i in range(8)]
            assert httpx.get(server.url + "/health", timeout=60).status_code == 200
            codes = [code for f in futures for code in f.result()]
        assert codes == [200] * 40
    finally:
        assert server.stop(timeout=60) == 0


class UnitQueries:
    """A query embedder for the fixture's 8-dimension index (its vectors are one-hot), recording
    each forward pass's queries; the first pass waits for ``gate``."""

    spec, dims = "test:unit-vectors", 8

    def __init__(self):
        self.batches: list[list[str]] = []
        self.gate = threading.Event()

    def embed_documents(self, texts, progress=None):
        return np.stack([unit(len(t) % 8) for t in texts])

    def embed_query(self, text):
        return self.embed_query_batch([text])[0]

    def embed_query_batch(self, texts):
        self.batches.append(list(texts))
        if len(self.batches) == 1:
            assert self.gate.wait(60)
        return np.stack([unit(len(t) % 8) for t in texts])


def test_searches_waiting_for_a_slot_embed_their_queries_together(store):
    """Issue 39: with every slot taken, a search embeds its query while it waits, in one pass
    with the other waiting searches' queries; in its slot it finds the vector kept (``embed``
    0 ms) and searches as usual. A search finding a slot free embeds in it."""
    service = SearchService(Settings(db=None, es_url=None, serve={"search_concurrency": 1}), store)
    pipeline = service.pipeline(None)
    model = UnitQueries()
    pipeline.searcher._embedder = model
    real, held, holding = pipeline.search, threading.Event(), threading.Event()

    def hold_the_slot(*args, **kwargs):
        if args[0] == "queue worker hold":
            holding.set()
            assert held.wait(60)
        return real(*args, **kwargs)

    pipeline.search = hold_the_slot
    with ThreadPoolExecutor(6) as pool:
        holder = pool.submit(service.search, SearchRequest("queue worker hold", k=3, mode="bm25"))
        assert holding.wait(60)
        queries = [f"queue worker {i}" for i in range(5)]
        deadline = time.monotonic() + 60
        waiting = [pool.submit(service.search, SearchRequest(queries[0], k=3, mode="hybrid"))]
        while not model.batches and time.monotonic() < deadline:  # its pass holds the model (the gate)
            time.sleep(0.005)
        waiting += [pool.submit(service.search, SearchRequest(q, k=3, mode="hybrid")) for q in queries[1:]]
        while len(pipeline.searcher._waiting) < 4 and time.monotonic() < deadline:
            time.sleep(0.005)
        model.gate.set()  # the first waiting search's pass ends: the other four go in one
        while sum(len(b) for b in model.batches) < 5 and time.monotonic() < deadline:
            time.sleep(0.005)
        held.set()
        results = [f.result() for f in waiting]
        assert holder.result().hits
    assert [len(b) for b in model.batches] == [1, 4] and sorted(q for b in model.batches for q in b) == queries
    assert all(r.hits and r.mode == "hybrid" and r.timings_ms["embed"] == 0.0 for r in results)
    alone = service.search(SearchRequest("queue worker alone", k=3, mode="hybrid"))  # a free slot: embedded in it
    assert model.batches[-1] == ["queue worker alone"] and alone.timings_ms["embed"] > 0.0
