"""Paired statistics (seed 000 §4.5): the BCa cluster bootstrap against scipy, and Holm, TOST,
the sign-flip permutation test and the verdict rules on hand cases."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from esrag.eval import stats


def singletons(x) -> dict[str, list[float]]:
    return {str(i): [float(v)] for i, v in enumerate(x)}


@pytest.mark.parametrize("seed", [0, 7])
def test_bca_matches_scipy_on_clusters_of_size_one(seed):
    """With one question per cluster the cluster bootstrap is the ordinary bootstrap of the
    mean; drawing from the same generator, the BCa intervals coincide."""
    x = np.random.default_rng(100 + seed).exponential(2.0, size=60)  # skewed: BCa differs from percentile
    ours = stats.cluster_bootstrap(singletons(x), n_resamples=10_000, seed=seed)
    for level in (0.95, 0.90):
        ref = scipy.stats.bootstrap(
            (x,), np.mean, confidence_level=level, n_resamples=10_000, method="BCa", rng=np.random.default_rng(seed)
        )
        lo, hi = ours.bca(level)
        assert lo == pytest.approx(ref.confidence_interval.low, rel=1e-9)
        assert hi == pytest.approx(ref.confidence_interval.high, rel=1e-9)
    assert ours.estimate == pytest.approx(x.mean())
    assert ours.bca(0.95) != pytest.approx(ours.percentile(0.95))


def test_bca_close_to_scipy_with_independent_draws():
    x = np.random.default_rng(3).normal(1.0, 3.0, size=80)
    lo, hi = stats.cluster_bootstrap(singletons(x), seed=1).bca(0.95)
    ref = scipy.stats.bootstrap((x,), np.mean, n_resamples=10_000, method="BCa", rng=np.random.default_rng(99))
    width = ref.confidence_interval.high - ref.confidence_interval.low
    assert abs(lo - ref.confidence_interval.low) < 0.05 * width
    assert abs(hi - ref.confidence_interval.high) < 0.05 * width


def test_cluster_bootstrap_weights_clusters_by_size_and_is_seeded():
    data = {"a": [1.0, 1.0, 1.0], "b": [0.0], "c": [0.5, 0.5]}
    b1 = stats.cluster_bootstrap(data, 2000, seed=5)
    assert b1.estimate == pytest.approx(4.0 / 6.0)
    assert (b1.n_clusters, b1.n_obs) == (3, 6)
    assert np.array_equal(b1.replicates, stats.cluster_bootstrap(data, 2000, seed=5).replicates)
    assert not np.array_equal(b1.replicates, stats.cluster_bootstrap(data, 2000, seed=6).replicates)
    flat = stats.cluster_bootstrap({"a": [2.0], "b": [2.0, 2.0]}, 100)
    assert flat.bca() == (2.0, 2.0)
    with pytest.raises(ValueError, match="no clusters"):
        stats.cluster_bootstrap({})


def test_paired_differences_in_points_by_cluster():
    a = {"q1": 1.0, "q2": 0.5, "q3": 0.0}
    b = {"q1": 0.5, "q2": 0.5, "q3": 1.0}
    clusters = {"q1": "p1", "q2": "p1", "q3": "p2"}
    assert stats.paired_differences(a, b, clusters) == {"p1": [50.0, 0.0], "p2": [-100.0]}
    with pytest.raises(ValueError, match="unpaired"):
        stats.paired_differences(a, {"q1": 0.0}, clusters)


def test_holm_by_hand():
    # sorted: 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> monotone: 0.06
    assert stats.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert stats.holm([]) == []


def test_sign_flip_exact_by_hand():
    # cluster sums 1, 2, 3 (N = 3): |±1±2±3| >= 6 only for all-plus and all-minus: p = 2/8
    assert stats.sign_flip_p({"a": [1.0], "b": [2.0], "c": [3.0]}) == pytest.approx(0.25)
    # whole clusters flip together: sums 2 and -1 over N = 3; |±2±1| >= 1 for every vector
    assert stats.sign_flip_p({"a": [1.0, 1.0], "b": [-1.0]}) == pytest.approx(1.0)


def test_sign_flip_monte_carlo_is_seeded_and_small_for_a_real_shift():
    data = {str(i): [1.0 + 0.1 * (i % 3)] for i in range(30)}  # all positive: exact p = 2 / 2^30
    p = stats.sign_flip_p(data, n_resamples=5000, seed=1)
    assert p == pytest.approx(1 / 5001)
    noisy = singletons(np.random.default_rng(0).normal(0, 1, 40))
    assert stats.sign_flip_p(noisy, 5000, seed=2) == stats.sign_flip_p(noisy, 5000, seed=2) > 0.05


def test_tost_hand_cases_and_duality_with_the_90_ci():
    rng = np.random.default_rng(4)
    near_zero = singletons(rng.normal(0.0, 1.0, 200))
    t = stats.tost(stats.cluster_bootstrap(near_zero), margin=5.0)
    assert t.p < 0.001 and -5 < t.ci[0] < t.ci[1] < 5
    far = singletons(rng.normal(10.0, 1.0, 200))
    assert stats.tost(stats.cluster_bootstrap(far), margin=5.0).p > 0.99
    for shift in (-1.6, -0.9, 0.0, 0.7, 1.4, 2.5):
        boot = stats.cluster_bootstrap(singletons(rng.normal(shift, 4.0, 60)), seed=3)
        t = stats.tost(boot, margin=2.0)
        inside = -2.0 < t.ci[0] and t.ci[1] < 2.0
        assert (t.p < 0.05) == inside, (shift, t)
    with pytest.raises(ValueError, match="positive"):
        stats.tost(boot, 0.0)


def test_verdicts_follow_the_seed_rules():
    positive = stats.compare(singletons(np.random.default_rng(1).normal(3.0, 1.0, 100)), n_resamples=2000)
    null = stats.compare(singletons(np.random.default_rng(2).normal(0.0, 1.0, 100)), n_resamples=2000)
    stats.decide([positive, null])
    assert positive.verdict == "diff." and null.verdict == "n.d."
    assert positive.p_holm >= positive.p_perm and null.p_holm >= null.p_perm
    equivalent = stats.compare(singletons(np.random.default_rng(3).normal(0.0, 1.0, 100)), margin=5.0, n_resamples=2000)
    shifted = stats.compare(singletons(np.random.default_rng(4).normal(8.0, 1.0, 100)), margin=5.0, n_resamples=2000)
    wide = stats.compare(singletons(np.random.default_rng(5).normal(0.0, 40.0, 30)), margin=5.0, n_resamples=2000)
    stats.decide([equivalent, shifted, wide])
    assert (equivalent.verdict, shifted.verdict, wide.verdict) == ("equiv.", "diff.", "incon.")
