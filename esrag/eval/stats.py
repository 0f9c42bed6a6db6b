"""Paired statistics of seed 000, §4.5: differences A − B in points, BCa cluster-bootstrap
intervals, TOST equivalence, Holm adjustment within a named family, and the cluster sign-flip
permutation test.

Data are per-question values grouped by cluster (``{cluster: [v_q1, v_q2, …]}``): papers on
Qasper, questions elsewhere (a cluster of size 1). The estimate is the mean over all questions
(clusters weighted by their size); resampling and sign flips act on whole clusters.

* Bootstrap: ``n_resamples`` (10,000) draws of C clusters with replacement from
  ``numpy.random.default_rng(seed)``; the statistic of a draw is (sum of drawn cluster sums) /
  (sum of drawn cluster sizes). BCa (Efron & Tibshirani 1993, §14.3): bias correction
  ``z0 = Φ⁻¹(mid-rank share of replicates below the estimate)``, acceleration from the
  leave-one-cluster-out jackknife, ``a = Σd³ / (6 (Σd²)^1.5)``, ``d = mean(θ₍ᵢ₎) − θ₍ᵢ₎``; the
  interval's ends are linear-interpolated quantiles of the replicates at the adjusted levels.
  With clusters of size 1 this is exactly ``scipy.stats.bootstrap(method="BCa")`` on the mean.
* TOST (Lakens 2017) with margin ±Δ: two one-sided p-values obtained by inverting the same BCa
  bootstrap, so ``p_TOST < α`` exactly when the (1 − 2α) BCa interval lies inside (−Δ, +Δ).
* Sign-flip permutation: two-sided, statistic |mean|, every cluster's differences flip sign
  together; exact over all 2^C sign vectors when 2^C <= ``n_resamples``, else Monte Carlo with
  ``(1 + #{|T*| >= |T|}) / (1 + n)``.
* Holm (1979) step-down adjusted p-values within a family.

Decision rules (§4.5): a TOST row is ``equiv.`` when its Holm-adjusted TOST p < 0.05, else
``diff.`` when its 95% CI excludes 0, else ``incon.``; a two-sided row is ``diff.`` when its 95%
CI excludes 0 and its Holm-adjusted sign-flip p < 0.05, else ``n.d.`` (no difference detected).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri

RESAMPLES = 10_000
ALPHA = 0.05


def by_cluster(values: Mapping[str, float], clusters: Mapping[str, str]) -> dict[str, list[float]]:
    """Per-question ``values`` grouped by cluster: ``{cluster: [values in question order]}``."""
    out: dict[str, list[float]] = {}
    for qid, v in values.items():
        out.setdefault(clusters[qid], []).append(float(v))
    return out


def paired_differences(
    a: Mapping[str, float], b: Mapping[str, float], clusters: Mapping[str, str], scale: float = 100.0
) -> dict[str, list[float]]:
    """Per-question A − B, times ``scale`` (100: metric shares in [0, 1] become points), by cluster.

    Raises:
        ValueError: A and B do not cover the same questions (the comparison must be paired).
    """
    if set(a) != set(b):
        raise ValueError(f"unpaired comparison: {len(set(a) ^ set(b))} questions are scored in only one of A and B")
    return by_cluster({q: scale * (a[q] - b[q]) for q in a}, clusters)


def _sums(per_cluster: Mapping[str, Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    if not per_cluster:
        raise ValueError("no clusters to resample")
    sums = np.array([float(np.sum(v)) for v in per_cluster.values()])
    sizes = np.array([len(v) for v in per_cluster.values()], dtype=float)
    if np.any(sizes == 0):
        raise ValueError("a cluster holds no questions")
    return sums, sizes


@dataclass
class Bootstrap:
    """A cluster bootstrap of the mean.

    Attributes:
        estimate: mean over all questions (units of the input, e.g. points).
        n_clusters, n_obs: clusters and questions.
        replicates: array [n_resamples] of resampled means.
        z0, acceleration: the BCa bias correction and acceleration.
    """

    estimate: float
    n_clusters: int
    n_obs: int
    replicates: np.ndarray
    z0: float
    acceleration: float

    def _flat(self) -> bool:
        return bool(np.ptp(self.replicates) == 0)

    def bca(self, confidence: float = 0.95) -> tuple[float, float]:
        """The two-sided BCa interval at ``confidence`` (e.g. 0.95)."""
        if self._flat():
            return self.estimate, self.estimate
        alpha = (1 - confidence) / 2
        levels = [self._adjusted(ndtri(alpha)), self._adjusted(ndtri(1 - alpha))]
        lo, hi = np.quantile(self.replicates, levels)
        return float(lo), float(hi)

    def percentile(self, confidence: float = 0.95) -> tuple[float, float]:
        """The plain percentile interval at ``confidence``."""
        alpha = (1 - confidence) / 2
        lo, hi = np.quantile(self.replicates, [alpha, 1 - alpha])
        return float(lo), float(hi)

    def _adjusted(self, z: float) -> float:
        num = self.z0 + z
        return float(ndtr(self.z0 + num / (1 - self.acceleration * num)))

    def p_below(self, value: float) -> float:
        """One-sided p for H0: θ <= ``value`` (small when the BCa lower bound clears it)."""
        return float(ndtr(self._inverted(value))) if not self._flat() else float(self.estimate <= value)

    def p_above(self, value: float) -> float:
        """One-sided p for H0: θ >= ``value`` (small when the BCa upper bound stays below it)."""
        return 1.0 - float(ndtr(self._inverted(value))) if not self._flat() else float(self.estimate >= value)

    def _inverted(self, value: float) -> float:
        """The z whose BCa-adjusted level puts the interval's end at ``value``."""
        b = len(self.replicates)
        below = (np.count_nonzero(self.replicates < value) + np.count_nonzero(self.replicates <= value)) / (2 * b)
        share = min(max(float(below), 1 / (b + 1)), b / (b + 1))
        w = float(ndtri(share)) - self.z0
        return w / (1 + self.acceleration * w) - self.z0


def cluster_bootstrap(per_cluster: Mapping[str, Sequence[float]], n_resamples: int = RESAMPLES, seed: int = 0) -> Bootstrap:
    """Resample whole clusters ``n_resamples`` times (seeded); see the module docstring.

    Raises:
        ValueError: no clusters, or an empty cluster.
    """
    sums, sizes = _sums(per_cluster)
    c = len(sums)
    estimate = float(sums.sum() / sizes.sum())
    idx = np.random.default_rng(seed).integers(0, c, (n_resamples, c))
    replicates = sums[idx].sum(axis=1) / sizes[idx].sum(axis=1)
    share = (np.count_nonzero(replicates < estimate) + np.count_nonzero(replicates <= estimate)) / (2 * n_resamples)
    z0 = float(ndtri(share))
    return Bootstrap(estimate, c, int(sizes.sum()), replicates, z0, _acceleration(sums, sizes))


def _acceleration(sums: np.ndarray, sizes: np.ndarray) -> float:
    if len(sums) < 3:
        return 0.0
    jack = (sums.sum() - sums) / (sizes.sum() - sizes)
    d = jack.mean() - jack
    den = 6.0 * float(np.sum(d**2)) ** 1.5
    return float(np.sum(d**3) / den) if den > 0 else 0.0


@dataclass
class Tost:
    """Two one-sided tests of |θ| < margin: each side's p, ``p`` = the larger, and the
    (1 − 2α) BCa interval they correspond to."""

    margin: float
    p_lower: float
    p_upper: float
    p: float
    ci: tuple[float, float]


def tost(boot: Bootstrap, margin: float, alpha: float = ALPHA) -> Tost:
    """TOST with equivalence margin ±``margin`` (same units as the data, e.g. points).

    Raises:
        ValueError: ``margin`` <= 0.
    """
    if margin <= 0:
        raise ValueError(f"an equivalence margin must be positive, got {margin}")
    lower, upper = boot.p_below(-margin), boot.p_above(margin)
    return Tost(margin, lower, upper, max(lower, upper), boot.bca(1 - 2 * alpha))


def sign_flip_p(per_cluster: Mapping[str, Sequence[float]], n_resamples: int = RESAMPLES, seed: int = 0) -> float:
    """Two-sided cluster sign-flip permutation p of the mean difference (module docstring)."""
    sums, sizes = _sums(per_cluster)
    c, n = len(sums), sizes.sum()
    observed = abs(sums.sum()) / n
    tol = 1e-12 * max(1.0, observed)
    if c <= 20 and 2**c <= n_resamples:
        signs = ((np.arange(2**c)[:, None] >> np.arange(c)) & 1) * 2 - 1
        return float(np.mean(np.abs(signs @ sums) / n >= observed - tol))
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, n_resamples, 2000):
        signs = rng.integers(0, 2, (min(2000, n_resamples - start), c)) * 2 - 1
        hits += int(np.count_nonzero(np.abs(signs @ sums) / n >= observed - tol))
    return (1 + hits) / (1 + n_resamples)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values, in input order (monotone, capped at 1)."""
    m = len(pvalues)
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(sorted(range(m), key=lambda i: pvalues[i])):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


@dataclass
class Comparison:
    """One paired contrast A − B (points) with its interval and tests.

    ``ci95`` is the BCa 95% interval; ``tost`` is set when a margin was given; ``p_perm`` is the
    sign-flip p; ``p_holm`` (Holm-adjusted p of the row's test within its family) and
    ``verdict`` are filled by :func:`decide`.
    """

    estimate: float
    ci95: tuple[float, float]
    p_perm: float
    n_clusters: int
    n_obs: int
    tost: Tost | None = None
    p_holm: float | None = None
    verdict: str = ""

    @property
    def test_p(self) -> float:
        """The p the family adjusts: TOST p for equivalence rows, sign-flip p otherwise."""
        return self.tost.p if self.tost else self.p_perm


def compare(
    per_cluster: Mapping[str, Sequence[float]], margin: float | None = None, n_resamples: int = RESAMPLES, seed: int = 0
) -> Comparison:
    """Bootstrap CI, sign-flip p and (with ``margin``) TOST of paired differences."""
    boot = cluster_bootstrap(per_cluster, n_resamples, seed)
    return Comparison(
        boot.estimate,
        boot.bca(0.95),
        sign_flip_p(per_cluster, n_resamples, seed),
        boot.n_clusters,
        boot.n_obs,
        tost(boot, margin) if margin else None,
    )


def decide(family: Sequence[Comparison], alpha: float = ALPHA) -> None:
    """Holm-adjust the rows' test p within one family and set each row's verdict (§4.5)."""
    for row, p in zip(family, holm([r.test_p for r in family])):
        row.p_holm = p
        excludes_zero = row.ci95[0] > 0 or row.ci95[1] < 0
        if row.tost:
            row.verdict = "equiv." if p < alpha else "diff." if excludes_zero else "incon."
        else:
            row.verdict = "diff." if excludes_zero and p < alpha else "n.d."
