"""The retrieval levers of issue 29: linear (min-max) fusion, RM3 / Rocchio pseudo-relevance
feedback and parent signals, as functions and through the searcher over a real SQLite store
(BM25 only, so no model is loaded)."""

from __future__ import annotations

import numpy as np
import pytest

from esrag.config import SearchSettings, Settings
from esrag.errors import ConfigError
from esrag.model import Chunk, content_hash
from esrag.search.feedback import parent_boost, rm3_terms, rocchio
from esrag.search.fusion import Fused, fusion, linear
from esrag.search.searcher import Searcher
from esrag.stores.base import IndexMeta
from esrag.stores.sqlite import SQLiteStore


def test_linear_fusion_is_a_weighted_sum_of_minmax_scores():
    legs = {"bm25": [("a", 12.0), ("b", 7.0), ("c", 2.0)], "dense": [("c", 0.9), ("a", 0.5), ("d", 0.1)]}
    out = linear(legs, weights={"bm25": 0.3, "dense": 0.7})
    scores = {f.id: f.score for f in out}
    assert scores["a"] == pytest.approx(0.3 * 1.0 + 0.7 * 0.5)
    assert scores["b"] == pytest.approx(0.3 * 0.5)
    assert scores["c"] == pytest.approx(0.3 * 0.0 + 0.7 * 1.0)
    assert scores["d"] == pytest.approx(0.0)
    assert [f.id for f in out] == ["c", "a", "b", "d"]
    assert out[0].legs["dense"].rank == 1 and out[0].legs["bm25"].score == 2.0
    assert fusion("linear") is linear
    assert {f.score for f in linear({"bm25": [("x", 3.0), ("y", 3.0)]})} == {1.0}
    with pytest.raises(ConfigError, match="unknown fusion 'cosine'; valid: linear, rrf"):
        fusion("cosine")
    with pytest.raises(ValueError, match="unknown fusion"):
        SearchSettings(fusion="cosine")


def test_linear_fusion_window_cuts_each_leg():
    legs = {"bm25": [("a", 3.0), ("b", 2.0), ("c", 1.0)]}
    assert [f.id for f in linear(legs, rank_window_size=2)] == ["a", "b"]


def test_rm3_terms_weight_by_first_pass_score_and_skip_query_and_stop_words():
    texts = ["queue workers restart deploy workers restart", "horizon dashboard metrics"]
    terms = rm3_terms("how to restart queue", texts, [3.0, 1.0], 3)
    assert terms == ["workers", "deploy", "dashboard"]  # 3/4*2/5, 3/4*1/5, then 1/4*1/3 (ties by name)
    assert "restart" not in terms and "how" not in terms
    assert rm3_terms("q", texts, [1.0, 1.0], 0) == []


def test_rocchio_moves_the_query_toward_the_feedback_mean():
    q = np.array([1.0, 0.0], dtype=np.float32)
    moved = rocchio(q, [np.array([0.0, 1.0], dtype=np.float32)], 1.0)
    assert moved == pytest.approx(np.array([1.0, 1.0]) / np.sqrt(2))
    assert rocchio(q, [], 1.0) is q


def _c(cid: str, path: str, section: str) -> Chunk:
    return Chunk(id=cid, text=cid, source_path=path, section_path=section)


def test_parent_boost_adds_the_best_other_score_of_section_and_page():
    chunks = {
        "a": _c("a", "p.md", "Guide > Queues"),
        "b": _c("b", "p.md", "Guide > Mail"),
        "c": _c("c", "p.md", "Guide > Queues > Workers"),
        "d": _c("d", "q.md", "Other"),
    }
    fused = [Fused("a", 1.0), Fused("b", 0.9), Fused("d", 0.85), Fused("c", 0.5)]
    out = parent_boost(fused, chunks, section=0.5, page=0.0, depth=2)
    scores = {f.id: f.score for f in out}
    assert scores == pytest.approx({"a": 1.25, "b": 0.9, "c": 1.0, "d": 0.85})
    assert [f.id for f in out] == ["a", "c", "b", "d"]
    page = {f.id: f.score for f in parent_boost(fused, chunks, section=0.0, page=0.1)}
    assert page == pytest.approx({"a": 1.09, "b": 1.0, "c": 0.6, "d": 0.85})


@pytest.fixture
def store(tmp_path):
    texts = [
        ("q1", "queues.md", "Queues > Workers", "Run queue workers with the queue:work command."),
        ("q2", "queues.md", "Queues > Workers", "Workers are long-lived processes; restart workers after deploy with supervisor."),
        ("q3", "queues.md", "Queues > Failed jobs", "Failed jobs go to the failed_jobs table."),
        ("m1", "mail.md", "Mail > Drivers", "Mail drivers send email through SMTP or an API; supervisor is not needed."),
        ("m2", "mail.md", "Mail > Queueing", "Queue mail messages so the response is not delayed."),
    ]
    chunks = [
        Chunk(id=i, text=t, corpus="c", source_path=p, section_path=s, tokens=len(t.split()), content_hash=content_hash(t))
        for i, p, s, t in texts
    ]
    st = SQLiteStore(tmp_path / "s.db")
    st.ensure(IndexMeta("none", 2, ["text"], {"text": 1.0}, "test"))
    st.write(chunks, np.eye(len(chunks), 2, dtype=np.float32), ["" for _ in chunks])
    yield st
    st.close()


def _searcher(store, **search) -> Searcher:
    return Searcher(store, lambda: None, Settings().search.model_copy(update=search), {"text": 1.0})


def test_searcher_prf_adds_a_bm25_prf_leg_that_finds_feedback_words(store):
    plain = _searcher(store).search("restart workers deploy", k=5, mode="bm25")
    prf = _searcher(store, prf_docs=1, prf_terms=4).search("restart workers deploy", k=5, mode="bm25")
    assert plain.hits[0].chunk.id == prf.hits[0].chunk.id == "q2"
    assert "m1" not in {h.chunk.id for h in plain.hits}  # shares no query word
    assert "m1" in {h.chunk.id for h in prf.hits}  # through "supervisor", one of q2's 4 RM3 terms (lived, long, processes, supervisor)
    assert "bm25_prf" in next(h for h in prf.hits if h.chunk.id == "m1").legs
    assert "feedback from the first 1 hits (bm25_prf)" in prf.fusion


def test_searcher_parent_signal_lifts_the_section_of_the_best_hit(store):
    plain = _searcher(store).search("queue workers command", k=5, mode="bm25")
    boosted = _searcher(store, parent_section=1.0).search("queue workers command", k=5, mode="bm25")
    before = {h.chunk.id: h.score for h in plain.hits}
    after = {h.chunk.id: h.score for h in boosted.hits}
    assert set(before) == set(after) == {"q1", "q2", "m2"}
    assert after["q1"] == pytest.approx(before["q1"] + before["q2"])  # q1 and q2 share a section
    assert after["q2"] == pytest.approx(before["q2"] + before["q1"])
    assert after["m2"] == pytest.approx(before["m2"])  # alone in its section
    assert [h.chunk.id for h in boosted.hits][:2] == ["q1", "q2"]
    assert "parent signals (section 1, page 0)" in boosted.fusion
