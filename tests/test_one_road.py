"""One road from a query to the store (issue 28): in esrag/, only :mod:`esrag.search.legs` and
the stores themselves call a store's ``bm25``/``knn`` — checked on the source with ``ast``,
nothing imported or run — and the searcher's hybrid search over the real embedded SQLite store
ranks exactly as the legs run and fused by hand, whether the BM25 leg overlaps the query
embedding (embedder loaded) or not (first search), with one store call per leg."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

import numpy as np
import pytest

from esrag.config import Settings
from esrag.model import Chunk, content_hash
from esrag.search.legs import bm25_leg, fuse, hybrid, knn_leg
from esrag.search.searcher import Searcher
from esrag.stores.base import Filters, IndexMeta
from esrag.stores.sqlite import SQLiteStore

PACKAGE = Path(__file__).resolve().parents[1] / "esrag"
LEG_METHODS = {"bm25", "knn"}
#: the modules allowed to call a store's legs: the leg loop and the stores
ALLOWED = ("search/legs.py", "stores/")


def leg_calls(source: str) -> list[int]:
    """Lines of ``source`` that call an attribute named ``bm25`` or ``knn`` (``X.bm25(...)``)."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in LEG_METHODS
    ]


def test_the_checker_finds_leg_calls_and_nothing_else():
    assert leg_calls("def f(store):\n    return store.bm25('q', 5, None, {})\n") == [2]
    assert leg_calls("x = self.store.knn(v, 5, f, 100)\ny = [s.knn(v) for s in stores]\n") == [1, 2]
    assert leg_calls("bm25 = 1\nleg = store.bm25\nstore.bm25_fields()\nknn(v)\n") == []  # no attribute call of a leg


def test_only_legs_and_the_stores_call_a_store_leg():
    offenders = []
    checked = 0
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        lines = leg_calls(path.read_text(encoding="utf-8"))
        if rel.startswith(ALLOWED):
            continue
        checked += 1
        offenders += [f"esrag/{rel}:{line}" for line in lines]
    assert checked > 50  # the walk saw the package
    assert not offenders, "call the store's legs through esrag.search.legs (bm25_leg, knn_leg):\n" + "\n".join(offenders)
    assert leg_calls((PACKAGE / "search" / "legs.py").read_text(encoding="utf-8"))  # the one road does call them


# -- the searcher over the real embedded store -------------------------------------------------
VOCAB = ["queue", "worker", "mail", "cache", "route"]
TEXTS = {
    "q1": "Run queue workers with the queue:work command.",
    "q2": "Restart queue workers after deploy; workers are long-lived.",
    "m1": "Mail drivers send email through SMTP; queue mail to respond fast.",
    "c1": "Cache drivers: redis, file, database. Clear the cache after deploy.",
    "r1": "Route caching speeds up route registration; cache routes on deploy.",
    "w1": "Worker processes and queue priorities for mail jobs.",
}


def bag(text: str) -> np.ndarray:
    """A deterministic unit vector [len(VOCAB)] float32: counts of the vocabulary's stems."""
    v = np.array([text.lower().count(w) for w in VOCAB], dtype=np.float32) + 0.01
    return v / np.linalg.norm(v)


class BagEmbedder:
    """A tiny deterministic query embedder (no model) that records the threads it ran on."""

    spec = "test:bag"
    dims = len(VOCAB)

    def __init__(self) -> None:
        self.threads: list[str] = []

    def embed_documents(self, texts, progress=None) -> np.ndarray:
        return np.stack([bag(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        self.threads.append(threading.current_thread().name)
        return bag(text)


class CountingStore(SQLiteStore):
    """The real SQLite store, counting its leg calls and the thread each BM25 call ran on."""

    def __init__(self, path) -> None:
        super().__init__(path)
        self.calls: list[str] = []
        self.bm25_threads: list[str] = []

    def bm25(self, query, k, filters, fields):
        self.calls.append("bm25")
        self.bm25_threads.append(threading.current_thread().name)
        return super().bm25(query, k, filters, fields)

    def knn(self, vector, k, filters, num_candidates=0):
        self.calls.append("knn")
        return super().knn(vector, k, filters, num_candidates)


@pytest.fixture
def store(tmp_path):
    chunks = [
        Chunk(id=i, text=t, corpus="c", source_path=f"{i}.md", section_path=i, tokens=len(t.split()), content_hash=content_hash(t))
        for i, t in TEXTS.items()
    ]
    st = CountingStore(tmp_path / "s.db")
    st.ensure(IndexMeta(BagEmbedder.spec, BagEmbedder.dims, ["text"], {"text": 1.0}, "test"))
    st.write(chunks, np.stack([bag(t) for t in TEXTS.values()]), ["" for _ in chunks])
    yield st
    st.close()


def test_searcher_hybrid_equals_the_legs_fused_by_hand_with_and_without_the_overlap(store):
    emb = BagEmbedder()
    settings = Settings().search.model_copy(update={"rank_window_size": 4})
    searcher = Searcher(store, lambda: emb, settings, {"text": 1.0})
    query, k, window, fields = "queue workers deploy", 3, 4, {"text": 1.0}
    vector = bag(query)
    by_hand = fuse(
        {
            "bm25": bm25_leg(store, query, window, Filters(), fields),
            "dense": knn_leg(store, vector, window, Filters(), max(settings.num_candidates, window)),
        },
        settings.rrf_k,
        settings.weights,
        window,
    )[:k]
    assert [f.id for f in hybrid(store, query, vector, k=k, fields=fields, rank_window_size=window).fused[:k]] == [f.id for f in by_hand]
    store.calls.clear()
    store.bm25_threads.clear()

    first = searcher.search(query, k=k, mode="hybrid")  # loads the embedder: legs in turn
    again = searcher.search(query, k=k, mode="hybrid")  # its vector kept: no forward pass, legs in turn
    fresh = Searcher(store, lambda: emb, settings, {"text": 1.0})
    fresh.load_embedder()
    parallel = fresh.search(query, k=k, mode="hybrid")  # loaded, not kept: BM25 runs while the query embeds
    for result in (first, again, parallel):
        assert [(h.chunk.id, h.score) for h in result.hits] == [(f.id, pytest.approx(f.score)) for f in by_hand]
        assert [set(h.legs) for h in result.hits] == [set(f.legs) for f in by_hand]
        assert result.fusion == "rrf (client-side)"
    assert store.calls[:4] == ["bm25", "knn", "bm25", "knn"] and sorted(store.calls[4:]) == ["bm25", "knn"]  # one call per leg and search
    assert store.bm25_threads[:2] == [threading.current_thread().name] * 2
    # the third search takes the parallel road (BM25 on a leg thread while the query embeds); the
    # second found the vector the first kept (Searcher.embed_query): one forward pass for both
    assert store.bm25_threads[2].startswith("esrag-leg") and emb.threads == [threading.current_thread().name] * 2
    assert list(first.timings_ms) == ["model_load", "embed", "bm25", "knn", "fuse", "fetch", "total"]
    assert again.timings_ms["embed"] == 0.0 and set(again.timings_ms) == {"embed", "bm25", "knn", "fuse", "fetch", "total"}
    assert set(parallel.timings_ms) == {"embed", "bm25", "knn", "fuse", "fetch", "total"}


def test_single_leg_modes_take_k_hits_and_feedback_legs_go_through_the_store_once_each(store):
    emb = BagEmbedder()
    searcher = Searcher(store, lambda: emb, Settings().search, {"text": 1.0})
    bm25 = searcher.search("cache deploy", k=2, mode="bm25")
    assert [h.chunk.id for h in bm25.hits] == [i for i, _ in store.bm25("cache deploy", 2, Filters(), {"text": 1.0})]
    assert "model_load" not in bm25.timings_ms and "embed" not in bm25.timings_ms
    dense = searcher.search("mail", k=2, mode="dense")
    assert [h.chunk.id for h in dense.hits] == [i for i, _ in store.knn(bag("mail"), 2, Filters(), 100)]
    assert list(dense.timings_ms)[:3] == ["model_load", "embed", "knn"]
    store.calls.clear()
    prf = Searcher(
        store, lambda: emb, Settings().search.model_copy(update={"prf_docs": 2, "prf_terms": 3, "rocchio_beta": 0.5}), {"text": 1.0}
    ).search("queue workers", k=3, mode="hybrid")
    assert store.calls == ["bm25", "knn", "bm25", "knn"]  # the first legs, then bm25_prf and dense_prf
    assert "feedback from the first 2 hits (bm25_prf, dense_prf)" in prf.fusion


def test_a_budgeted_search_embeds_its_query_once_however_often_it_asks_for_more(store):
    """A budget the first hits do not fill makes the pipeline ask again for 4x as many hits;
    the query is embedded by the searcher once (the vector comes back on the result and is
    handed to the next ask), and every ask reaches the store's legs once each."""
    from esrag.search.pipeline import Pipeline

    emb = BagEmbedder()
    settings = Settings().model_copy(update={"search": Settings().search.model_copy(update={"rank_window_size": 1})})
    searcher = Searcher(store, lambda: emb, settings.search, {"text": 1.0})
    pipeline = Pipeline(settings, store, searcher)
    store.calls.clear()
    result = pipeline.search("queue workers deploy", k=1, mode="hybrid", budget=10_000, sections=False)
    asks = store.calls.count("bm25")
    assert asks >= 2, store.calls  # the budget asked again (6 chunks hold far fewer than 10,000 tokens)
    assert store.calls.count("knn") == asks
    assert len(emb.threads) == 1, f"the query was embedded {len(emb.threads)} times over {asks} asks"
    assert {h.chunk.id for h in result.hits} == set(TEXTS)  # every chunk fits the budget
    assert "embed" in result.timings_ms and "search.embed" in result.timings_ms

    direct = searcher.search("queue workers deploy", k=2, mode="hybrid", vector=bag("queue workers deploy"))
    assert len(emb.threads) == 1  # a given vector is not embedded again
    assert np.array_equal(direct.vector, bag("queue workers deploy"))
    assert searcher.search("queue", k=2, mode="bm25").vector is None
