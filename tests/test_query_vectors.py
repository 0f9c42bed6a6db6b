"""The searcher keeps recent query vectors (issue 39: a query asked again costs no forward
pass) and embeds the queries that wait for the model together, with the real query model and
the real SQLite store."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from esrag.config import SearchSettings
from esrag.embedding import CachedEmbedder, EmbeddingCache, batches_queries
from esrag.embedding.local import SentenceTransformerEmbedder
from esrag.search import searcher as searcher_module
from esrag.search.searcher import Searcher

pytestmark = pytest.mark.integration  # loads the query model


class CountingQueries:
    """The real embedder, counting the queries it embeds."""

    def __init__(self, inner):
        self.inner, self.spec, self.dims, self.queries = inner, inner.spec, inner.dims, []

    def embed_query(self, text):
        self.queries.append(text)
        return self.inner.embed_query(text)


def test_a_query_asked_again_is_not_embedded_again(sqlite_store, monkeypatch):
    model = CountingQueries(SentenceTransformerEmbedder("all-MiniLM-L6-v2"))
    s = Searcher(sqlite_store, lambda: model, SearchSettings(), {"text": 1.0})
    first = s.embed_query("schedule a task every minute")
    again = s.embed_query("schedule a task every minute")
    assert model.queries == ["schedule a task every minute"] and again is first
    assert np.allclose(first, model.inner.embed_query("schedule a task every minute"))
    with pytest.raises(ValueError):  # shared between requests: nobody may change it in place
        first[0] = 1.0
    assert not np.allclose(s.embed_query("queue workers"), first) and len(model.queries) == 2
    monkeypatch.setattr(searcher_module, "QUERY_VECTORS", 2)
    s.embed_query("a third query")  # the least recently used one ("schedule…") goes
    s.embed_query("schedule a task every minute")
    assert model.queries[-1] == "schedule a task every minute" and len(model.queries) == 4


class GatedBatches:
    """The real embedder's query path, recording each forward pass's queries; the first pass
    waits for ``gate`` (so the queries asked meanwhile queue for the model), and a pass whose
    queries include ``fail_on`` raises."""

    def __init__(self, inner, fail_on: str = ""):
        self.inner, self.spec, self.dims = inner, inner.spec, inner.dims
        self.batches: list[list[str]] = []
        self.gate, self.fail_on = threading.Event(), fail_on

    def embed_query(self, text):
        return self.embed_query_batch([text])[0]

    def embed_query_batch(self, texts):
        self.batches.append(list(texts))
        if len(self.batches) == 1:
            assert self.gate.wait(60)
        if self.fail_on in texts:
            raise RuntimeError("the model went away")
        return self.inner.embed_query_batch(texts)


def queue_behind_the_first(s: Searcher, model: GatedBatches, first: str, others: list[str]):
    """Ask ``first`` (its pass held at the gate), then ``others`` from threads while it runs;
    open the gate once every distinct other query waits. Returns each call's future."""
    pool = ThreadPoolExecutor(len(others) + 1)
    lead = pool.submit(s.embed_query, first)
    deadline = time.monotonic() + 60
    while not model.batches and time.monotonic() < deadline:
        time.sleep(0.005)
    rest = [pool.submit(s.embed_query, q) for q in others]
    while len(s._waiting) < len(set(others) - {first}) and time.monotonic() < deadline:
        time.sleep(0.005)
    model.gate.set()
    pool.shutdown(wait=True)
    return lead, rest


def test_queries_waiting_for_the_model_go_through_it_together(sqlite_store):
    """Issue 39: the queries of concurrent searches that arrive while a forward pass runs are
    embedded in the next pass, all at once, each with the vector it gets alone; a query asked
    twice while it waits, or again while its own pass runs, is embedded once."""
    real = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    model = GatedBatches(real)
    s = Searcher(sqlite_store, lambda: model, SearchSettings(), {"text": 1.0})
    first = "schedule a task every minute"
    others = ["queue workers", "rate limiting", "blade components", "queue workers", "eloquent scopes", first]
    lead, rest = queue_behind_the_first(s, model, first, others)
    assert model.batches[0] == [first]
    assert len(model.batches) == 2 and sorted(model.batches[1]) == sorted(set(others) - {first})
    for query, future in zip([first, *others], [lead, *rest]):
        np.testing.assert_allclose(future.result(), real.embed_query(query), rtol=0, atol=1e-6)
    assert rest[0].result() is rest[3].result() and rest[5].result() is lead.result()  # asked twice: one vector
    before = len(model.batches)
    assert s.embed_query("rate limiting") is rest[1].result() and len(model.batches) == before  # kept


def test_one_querys_failure_is_not_the_others_in_its_pass_and_the_next_ask_embeds_again(sqlite_store):
    """A pass of several queries that fails is tried query by query: only the query the
    embedder fails on gets the error (no thread is left waiting), and asking it again embeds it."""
    model = GatedBatches(SentenceTransformerEmbedder("all-MiniLM-L6-v2"), fail_on="rate limiting")
    s = Searcher(sqlite_store, lambda: model, SearchSettings(), {"text": 1.0})
    lead, (fine, failing) = queue_behind_the_first(s, model, "schedule a task every minute", ["queue workers", "rate limiting"])
    assert lead.result().shape == fine.result().shape == (model.dims,)
    with pytest.raises(RuntimeError, match="went away"):
        failing.result()
    assert sorted(model.batches[1]) == ["queue workers", "rate limiting"] and sorted(model.batches[2:]) == [
        ["queue workers"],
        ["rate limiting"],
    ]
    assert not s._waiting and not s._running
    model.fail_on = ""
    assert s.embed_query("rate limiting").shape == (model.dims,) and model.batches[-1] == ["rate limiting"]


class OneByOne:
    """An embedder with no pass of several queries (as a remote API's): each query alone."""

    spec, dims = "test:one-by-one", 8

    def __init__(self):
        self.calls: list[str] = []

    def embed_query(self, text):
        self.calls.append(text)
        return np.full(8, len(text), dtype=np.float32) / np.sqrt(8 * len(text) ** 2)


def test_queries_are_batched_only_for_an_embedder_that_batches(sqlite_store):
    """Local models batch (also behind the embedding cache); an embedder without a pass of
    several queries embeds each query alone, one at a time, as before."""
    local = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    cache = EmbeddingCache(sqlite_store.path.parent / "cache.db")
    assert batches_queries(local) and batches_queries(CachedEmbedder(local, cache))
    assert not batches_queries(OneByOne()) and not batches_queries(CachedEmbedder(OneByOne(), cache))
    model = OneByOne()
    s = Searcher(sqlite_store, lambda: model, SearchSettings(), {"text": 1.0})
    with ThreadPoolExecutor(8) as pool:
        vectors = list(pool.map(s.embed_query, [f"query {i}" for i in range(16)]))
    assert sorted(model.calls) == sorted(f"query {i}" for i in range(16))  # each once, alone
    assert all(np.allclose(v, model.embed_query(f"query {i}")) for i, v in enumerate(vectors))
