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
    while len(s._waiting) < len(set(others)) and time.monotonic() < deadline:
        time.sleep(0.005)
    model.gate.set()
    pool.shutdown(wait=True)
    return lead, rest


def test_queries_waiting_for_the_model_go_through_it_together(sqlite_store):
    """Issue 39: the queries of concurrent searches that arrive while a forward pass runs are
    embedded in the next pass, all at once, each with the vector it gets alone; a query asked
    twice at once is embedded once."""
    real = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    model = GatedBatches(real)
    s = Searcher(sqlite_store, lambda: model, SearchSettings(), {"text": 1.0})
    others = ["queue workers", "rate limiting", "blade components", "queue workers", "eloquent scopes"]
    lead, rest = queue_behind_the_first(s, model, "schedule a task every minute", others)
    assert model.batches[0] == ["schedule a task every minute"]
    assert len(model.batches) == 2 and sorted(model.batches[1]) == sorted(set(others))
    for query, future in zip(["schedule a task every minute", *others], [lead, *rest]):
        np.testing.assert_allclose(future.result(), real.embed_query(query), rtol=0, atol=1e-6)
    assert rest[0].result() is rest[3].result()  # the query asked twice: one vector
    before = len(model.batches)
    assert s.embed_query("rate limiting") is rest[1].result() and len(model.batches) == before  # kept


def test_a_failed_pass_fails_each_of_its_queries_and_the_next_ask_embeds_again(sqlite_store):
    model = GatedBatches(SentenceTransformerEmbedder("all-MiniLM-L6-v2"), fail_on="rate limiting")
    s = Searcher(sqlite_store, lambda: model, SearchSettings(), {"text": 1.0})
    lead, rest = queue_behind_the_first(s, model, "schedule a task every minute", ["queue workers", "rate limiting"])
    assert lead.result().shape == (model.dims,)
    for future in rest:  # both were in the failed pass: neither thread is left waiting
        with pytest.raises(RuntimeError, match="went away"):
            future.result()
    assert not s._waiting
    model.fail_on = ""
    assert s.embed_query("rate limiting").shape == (model.dims,)
