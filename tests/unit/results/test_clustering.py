"""results/clustering.py against independent computations: the design effect from statsmodels' cluster-robust
standard error of a mean, Wilson's interval from statsmodels' proportion_confint at the level whose normal quantile is
scipy's t quantile, the sign-flip test by enumerating every assignment of signs with numpy, the cluster-robust t
interval from statsmodels' OLS with cluster covariance and scipy's t, the families needed by a plain loop over scipy's
t; each statistic equal to today's (results/stats.py) where every unit is its own family; and a simulation of the
interval's coverage on families whose instances share their rate."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy.stats import binomtest, norm
from scipy.stats import t as student
from statsmodels.stats.proportion import proportion_confint

from bench import coverage as bench_coverage
from bench.coverage import bootstrap_coverage, coverage

from pytest_gotchas.results.clustering import (MOST_FAMILIES, cluster_t_interval, clustered_wilson, design_effect,
                                               families_needed, sign_flip)
from pytest_gotchas.results.stats import mcnemar, t_interval, wilson
from pytest_gotchas.results.vocabulary import IntervalMethod

# (passed, instances) per family: unequal sizes, a family of one, shares from none to all
COUNTS = [
    [(3, 5), (5, 5), (0, 4), (2, 6), (1, 1)],
    [(18, 20), (12, 20), (20, 20), (5, 20), (15, 20), (9, 20)],
    [(1, 3), (2, 3)],
    [(7, 10), (3, 10), (10, 12), (0, 2), (4, 4), (6, 9), (1, 1), (1, 1), (0, 1)],
]


def units_of(counts: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Each instance's outcome (1 passed) and its family's index."""
    y = np.concatenate([np.r_[np.ones(k), np.zeros(n - k)] for k, n in counts])
    groups = np.concatenate([np.full(n, g) for g, (_, n) in enumerate(counts)])
    return y, groups


def reference_design_effect(counts: list[tuple[int, int]]) -> float:
    """statsmodels: the cluster-robust variance of the mean (no small-sample factor) over the binomial one."""
    y, groups = units_of(counts)
    fit = sm.OLS(y, np.ones_like(y)).fit(cov_type="cluster", cov_kwds={"groups": groups, "use_correction": False})
    p = y.mean()
    return max(1.0, float(fit.bse[0] ** 2 / (p * (1 - p) / len(y))))


def plain_wilson(p: float, n: float, z: float) -> tuple[float, float]:
    """Wilson's score interval as its textbook writes it: the roots in q of (p - q)^2 = z^2 q (1 - q) / n."""
    a, b, c = 1 + z * z / n, -(2 * p + z * z / n), p * p
    roots = np.roots([a, b, c]).real
    return max(0.0, float(roots.min())), min(1.0, float(roots.max()))


@pytest.mark.parametrize("counts", COUNTS)
@pytest.mark.parametrize("level", [0.05, 0.01, 0.2])
def test_the_clustered_interval_is_wilson_on_the_effective_count_with_t(counts, level: float) -> None:
    found = clustered_wilson(counts, level)
    k, n, families = sum(c for c, _ in counts), sum(m for _, m in counts), len(counts)
    deff = reference_design_effect(counts)
    assert found.design_effect == pytest.approx(deff, rel=1e-9)
    # Wilson's interval on the effective count, at the level whose normal quantile is t(families - 1)'s
    quantile = student.ppf(1 - level / 2, families - 1)
    alpha = 2 * norm.sf(quantile)  # 0.0 where t(1) at 0.01 (63.7) is too far out for a normal tail in floats
    if alpha > 0:
        low, high = proportion_confint(k / deff, n / deff, alpha=alpha, method="wilson")
        assert (found.low, found.high) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9))
    assert (found.low, found.high) == pytest.approx(plain_wilson(k / n, n / deff, quantile), abs=1e-9)
    assert (found.k, found.n, found.clusters, found.method) == (k, n, families, IntervalMethod.WILSON_CLUSTERED)
    assert found.effective_n == pytest.approx(n / deff)


@pytest.mark.parametrize(("k", "n"), [(0, 6), (2, 6), (6, 6), (17, 40), (1, 1), (0, 0)])
@pytest.mark.parametrize("level", [0.05, 0.01])
def test_with_every_unit_its_own_family_the_interval_is_todays_wilson(k: int, n: int, level: float) -> None:
    found = clustered_wilson([(1, 1)] * k + [(0, 1)] * (n - k), level)
    plain = wilson(k, n, level)
    assert (found.k, found.n, found.low, found.high, found.confidence) == (k, n, plain.low, plain.high,
                                                                           plain.confidence)
    assert (found.clusters, found.design_effect, found.method) == (n, 1.0, IntervalMethod.WILSON)


def test_a_share_of_none_or_all_takes_the_bound_of_families_alike() -> None:
    """At 0 or 1 the spread between families cannot be estimated: every unit of a family alike, sum(m^2) / n."""
    assert design_effect([(5, 5), (4, 4), (1, 1)]) == pytest.approx((25 + 16 + 1) / 10)
    assert design_effect([(0, 3), (0, 3)]) == 3.0
    found = clustered_wilson([(5, 5)] * 6)
    assert found.effective_n == pytest.approx(6.0) and found.high == 1.0
    # six families all passing: Wilson on 6 units with t(5) in place of 1.96
    low, _ = proportion_confint(6, 6, alpha=2 * norm.sf(student.ppf(0.975, 5)), method="wilson")
    assert found.low == pytest.approx(low, abs=1e-9)


def test_one_family_has_no_interval_and_none_counted_has_none() -> None:
    one = clustered_wilson([(3, 5)])
    assert (one.low, one.high, one.clusters, one.method) == (None, None, 1, IntervalMethod.WILSON_CLUSTERED)
    empty = clustered_wilson([])
    assert (empty.k, empty.n, empty.low, empty.high, empty.clusters) == (0, 0, None, None, 0)
    assert clustered_wilson([(0, 0), (2, 3), (1, 2)]).clusters == 2  # a family with nothing counted is left out


def reference_sign_flip(differences: list[int]) -> float:
    """Every assignment of signs, enumerated."""
    d = np.array(differences, dtype=float)
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=len(d))))
    sums = np.abs(signs @ d)
    return float(np.mean(sums >= abs(d.sum()) - 1e-9))


@pytest.mark.parametrize("differences", [
    [3, 1, 2, 0, 4, 2], [5, -1, 2, 3, 1, 2, 4], [2, -2, 1, 0], [0, 0, 0], [7], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
    [-3, -1, -4, 2, -5, -1, -2, -6, 1], [2, 2, 2, 2, 2, 2],
])
def test_the_sign_flip_test_is_every_assignment_of_signs_enumerated(differences: list[int]) -> None:
    assert sign_flip(differences) == pytest.approx(reference_sign_flip(differences), rel=1e-12)


@pytest.mark.parametrize(("a", "b"), [(0, 0), (6, 0), (5, 0), (3, 4), (1, 9), (10, 2), (20, 20)])
def test_with_every_unit_its_own_family_the_sign_flip_test_is_exact_mcnemar(a: int, b: int) -> None:
    singles = [1] * a + [-1] * b + [0] * 5  # units right for both or neither differ by 0
    expected = 1.0 if a + b == 0 else binomtest(a, a + b, 0.5).pvalue
    assert sign_flip(singles) == mcnemar(a, b) == pytest.approx(expected, rel=1e-12)


def test_random_families_against_the_enumeration() -> None:
    rng = np.random.default_rng(54)
    for _ in range(40):
        differences = rng.integers(-6, 7, rng.integers(1, 12)).tolist()
        assert sign_flip(differences) == pytest.approx(reference_sign_flip(differences), rel=1e-12), differences


def test_the_least_families_all_one_way_reach_the_level() -> None:
    """The exact test needs 6 families all one way at 0.05, whatever each one's difference: 2 / 2**6."""
    assert sign_flip([4, 1, 9, 2, 3, 1]) == pytest.approx(2 / 64)
    assert sign_flip([4, 1, 9, 2, 3]) == pytest.approx(2 / 32)


def reference_cluster_t(groups: list[list[float]], level: float) -> tuple[float, float, float]:
    """statsmodels' cluster-robust standard error of an intercept (its default small-sample factor, G / (G - 1) for
    one regressor) with scipy's t on G - 1 degrees of freedom."""
    y = np.concatenate([np.array(g, dtype=float) for g in groups])
    labels = np.concatenate([np.full(len(g), n) for n, g in enumerate(groups)])
    fit = sm.OLS(y, np.ones_like(y)).fit(cov_type="cluster", cov_kwds={"groups": labels})
    half = student.ppf(1 - level / 2, len(groups) - 1) * fit.bse[0]
    return float(fit.params[0]), float(fit.params[0] - half), float(fit.params[0] + half)


@pytest.mark.parametrize("level", [0.05, 0.01])
def test_the_cluster_robust_t_interval_is_statsmodels(level: float) -> None:
    rng = np.random.default_rng(7)
    for sizes in ([3, 5, 1, 4], [10, 10, 10, 10, 10, 10], [2, 1, 1, 1, 6, 3, 2]):
        groups = [rng.normal(rng.normal(0.3, 1.0), 0.5, size).tolist() for size in sizes]
        found = cluster_t_interval(groups, level)
        mean, low, high = reference_cluster_t(groups, level)
        d = found.difference
        assert (d.mean, d.low, d.high) == (pytest.approx(mean, abs=1e-12), pytest.approx(low, abs=1e-9),
                                           pytest.approx(high, abs=1e-9))
        assert (found.clusters, d.n, d.method) == (len(sizes), sum(sizes), IntervalMethod.T_CLUSTERED)


def test_with_every_case_its_own_family_the_interval_is_todays_t() -> None:
    values = [0.4, -1.2, 2.5, 0.3, 0.9, 1.1, -0.2]
    found = cluster_t_interval([[v] for v in values])
    assert found.difference == t_interval(values) and found.clusters == 7
    assert cluster_t_interval([[1.5]]).difference == t_interval([1.5])


def test_one_family_gives_a_mean_and_no_interval() -> None:
    found = cluster_t_interval([[0.5, 1.5, 1.0]])
    assert (found.difference.mean, found.difference.low, found.difference.high, found.clusters) == (1.0, None, None, 1)


def reference_needed(differences: list[int], level: float) -> int | None:
    """The smallest G >= 6 families (at 0.05; 10 at 0.01: the exact test's least, all one way) at which the mean
    difference over the families' standard deviation times sqrt(G) reaches scipy's t(G - 1)."""
    d = np.array(differences, dtype=float)
    if d.sum() == 0:
        return None
    least = next(g for g in itertools.count(1) if 2 / 2 ** g < level)
    if len(d) < 2 or np.all(d == d[0]):
        return least
    mean, sd = d.mean(), d.std(ddof=1)
    return next(g for g in itertools.count(least) if abs(mean) * math.sqrt(g) / sd >= student.ppf(1 - level / 2,
                                                                                                   g - 1))


@pytest.mark.parametrize("differences", [
    [3, 1, 2, 0, 4, 2], [2, -1, 0, 1], [1, 0, 0, 0, 0, 0, 0, -1, 1], [5, 5, 5], [0, 1], [1, -1, 0, 2, -1, 1, 3],
])
@pytest.mark.parametrize("level", [0.05, 0.01])
def test_the_families_needed_are_a_plain_search_over_scipys_t(differences: list[int], level: float) -> None:
    assert families_needed(differences, level) == reference_needed(differences, level)


def test_no_difference_seen_needs_nothing_and_a_tiny_one_is_capped() -> None:
    assert families_needed([1, -1, 2, -2]) is None and families_needed([]) is None
    # a mean of 1/100001 against a spread near 1: far more families than any chapter holds, said as a bound
    assert families_needed([1] + [1, -1] * 50_000) == MOST_FAMILIES + 1


# -- coverage: families whose instances share their rate (bench/coverage.py prints the docs' table) ----------------


@pytest.mark.parametrize(("families", "size", "rate", "icc"), [
    (6, 20, 0.7, 0.2), (10, 10, 0.7, 0.3), (8, 30, 0.5, 0.1), (20, 5, 0.8, 0.2),
])
def test_the_clustered_interval_covers_near_95_percent_where_the_naive_one_falls_short(families, size, rate,
                                                                                         icc) -> None:
    clustered, naive = coverage(families, size, rate, icc, draws=2000, seed=families * size)
    assert 0.92 <= clustered <= 0.975, clustered  # 2000 draws: one standard error is 0.005
    assert naive < 0.85, naive


def test_without_correlation_the_clustered_interval_still_covers() -> None:
    """Independent instances (icc near 0): the floor of 1 on the design effect keeps it near Wilson's."""
    clustered, naive = coverage(10, 10, 0.6, 1e-6, draws=2000, seed=3)
    assert 0.94 <= clustered <= 0.99 and 0.93 <= naive <= 0.97, (clustered, naive)


def test_a_cluster_bootstrap_over_a_chapters_few_families_falls_short() -> None:
    """What the clustered interval was chosen over (docs/models.md, "Families: claims from instances")."""
    assert bootstrap_coverage(5, 20, 0.6, 0.3, draws=2000, seed=5) < 0.9
    clustered, _ = coverage(5, 20, 0.6, 0.3, draws=2000, seed=5)
    assert clustered > 0.92


def test_the_bench_prints_the_table(capsys) -> None:
    assert bench_coverage.main(["--draws", "50", "--bootstrap-draws", "20"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| families x instances, rate, icc | clustered | Wilson, independent | cluster bootstrap |"
    assert len(lines) == 2 + len(bench_coverage.SCENARIOS) and lines[2].startswith("| 6 x 20, 0.7, 0.2 | ")
