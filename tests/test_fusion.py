"""Reciprocal rank fusion (Cormack et al., 2009) as implemented in esrag.search.fusion."""

from __future__ import annotations

import pytest

from esrag.errors import ConfigError
from esrag.search.fusion import fusion, rrf


def test_scores_are_sum_of_reciprocal_ranks():
    fused = rrf({"bm25": [("x", 9.0), ("y", 5.0), ("z", 1.0)], "dense": [("z", 0.9), ("x", 0.8)]}, k=60)
    scores = {f.id: f.score for f in fused}
    assert scores["x"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["z"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["y"] == pytest.approx(1 / 62)
    assert [f.id for f in fused] == ["x", "z", "y"]


def test_legs_keep_rank_and_raw_score():
    fused = rrf({"bm25": [("a", 3.5), ("b", 2.0)], "dense": [("b", 0.7)]})
    b = next(f for f in fused if f.id == "b")
    assert (b.legs["bm25"].rank, b.legs["bm25"].score) == (2, 2.0)
    assert (b.legs["dense"].rank, b.legs["dense"].score) == (1, 0.7)
    a = next(f for f in fused if f.id == "a")
    assert set(a.legs) == {"bm25"}


def test_rank_constant_changes_the_order():
    # a: rank 1 in one leg; b: rank 4 in both. b wins iff 2/(k+4) > 1/(k+1), i.e. k > 2.
    legs = {"bm25": [("a", 1), ("x1", 1), ("x2", 1), ("b", 1)], "dense": [("y1", 1), ("y2", 1), ("y3", 1), ("b", 1)]}

    def order(k):
        ids = [f.id for f in rrf(legs, k=k)]
        return ids.index("a") < ids.index("b")

    assert order(1) is True
    assert order(60) is False


def test_weights_scale_and_zero_weight_removes_leg_from_score():
    legs = {"bm25": [("a", 1.0)], "dense": [("b", 1.0)]}
    assert [f.id for f in rrf(legs, weights={"bm25": 2.0})] == ["a", "b"]
    assert [f.id for f in rrf(legs, weights={"bm25": 0.5})] == ["b", "a"]
    zero = {f.id: f.score for f in rrf(legs, weights={"dense": 0.0})}
    assert zero["b"] == 0.0 and zero["a"] == pytest.approx(1 / 61)


def test_window_cuts_each_leg():
    legs = {"bm25": [("a", 3), ("b", 2), ("c", 1)], "dense": [("c", 3), ("d", 2)]}
    ids = {f.id for f in rrf(legs, rank_window_size=1)}
    assert ids == {"a", "c"}
    c = next(f for f in rrf(legs, rank_window_size=1) if f.id == "c")
    assert set(c.legs) == {"dense"}


def test_duplicate_ids_in_a_leg_keep_best_rank():
    fused = rrf({"bm25": [("a", 5), ("a", 4), ("b", 3)]})
    assert {f.id: f.legs["bm25"].rank for f in fused} == {"a": 1, "b": 2}


def test_ties_are_deterministic():
    legs = {"bm25": [("p", 1), ("q", 1)], "dense": [("q", 1), ("p", 1)]}
    first = [f.id for f in rrf(legs)]
    assert first == [f.id for f in rrf(dict(reversed(list(legs.items()))))]
    assert first == ["p", "q"]


def test_empty_legs():
    assert rrf({}) == [] and rrf({"bm25": []}) == []


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"k": 0}, "rank constant"),
        ({"rank_window_size": 0}, "rank_window_size"),
        ({"weights": {"bm25": -1}}, "weights"),
    ],
)
def test_bad_settings_are_named(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        rrf({"bm25": [("a", 1)]}, **kwargs)


def test_unknown_fusion_lists_valid_names():
    assert fusion("rrf") is rrf
    with pytest.raises(ConfigError, match="valid: linear, rrf"):
        fusion("borda")
