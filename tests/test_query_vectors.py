"""The searcher keeps recent query vectors (issue 39: a query asked again costs no forward
pass), with the real query model and the real SQLite store."""

from __future__ import annotations

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
