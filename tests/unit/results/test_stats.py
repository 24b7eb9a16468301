"""results/stats.py against independent computations: scipy's binomtest (McNemar's exact test is a binomial test
of the discordant units at 1/2), statsmodels' proportion_confint (Wilson) and multipletests (Holm), scipy's
t distribution (the t interval)."""

from __future__ import annotations

import pytest
import numpy as np
from scipy.stats import binomtest, sem, t
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from pytest_gotchas.results.stats import (MIN_LEVEL, discordant_needed, holm, level_computable, mcnemar,
                                          smallest_difference, t_interval, t_quantile, wilson)


@pytest.mark.parametrize(("k", "n"), [(0, 6), (2, 6), (6, 6), (3, 7), (1, 1), (17, 40)])
@pytest.mark.parametrize("level", [0.05, 0.01, 0.1])
def test_wilson_is_statsmodels_wilson(k: int, n: int, level: float) -> None:
    interval = wilson(k, n, level)
    low, high = proportion_confint(k, n, alpha=level, method="wilson")
    assert interval.low == pytest.approx(low, abs=1e-12) and interval.high == pytest.approx(high, abs=1e-12)
    assert (interval.k, interval.n, interval.confidence, interval.method) == (k, n, 1 - level, "wilson")


def test_the_intervals_a_small_chapter_gets() -> None:
    assert (wilson(0, 6).low, round(wilson(0, 6).high, 3)) == (0.0, 0.39)  # type: ignore[arg-type]
    two = wilson(2, 6)
    assert (round(two.low, 3), round(two.high, 3)) == (0.097, 0.7)  # type: ignore[arg-type]
    six = wilson(6, 6)
    assert (round(six.low, 3), six.high) == (0.61, 1.0)  # type: ignore[arg-type]


def test_an_empty_chapter_has_no_interval() -> None:
    empty = wilson(0, 0)
    assert (empty.k, empty.n, empty.low, empty.high) == (0, 0, None, None)


def test_a_count_outside_its_total_is_refused() -> None:
    with pytest.raises(ValueError, match=r"a count must be between 0 and n: 7/6"):
        wilson(7, 6)


@pytest.mark.parametrize(("a", "b"), [(0, 0), (6, 0), (5, 0), (3, 4), (1, 9), (10, 2), (20, 20)])
def test_mcnemar_is_scipys_exact_binomial_test(a: int, b: int) -> None:
    expected = 1.0 if a + b == 0 else binomtest(a, a + b, 0.5).pvalue
    assert mcnemar(a, b) == pytest.approx(expected, rel=1e-12)


def test_holm_on_a_known_list() -> None:
    p = [0.01, 0.04, 0.03, 0.005, 0.2]
    # by hand: sorted 0.005*5, 0.01*4, 0.03*3, 0.04*2, 0.2*1 -> 0.025, 0.04, 0.09, 0.09 (monotone), 0.2
    assert holm(p) == pytest.approx([0.04, 0.09, 0.09, 0.025, 0.2])
    assert holm(p) == pytest.approx(list(multipletests(p, method="holm")[1]))
    assert holm([]) == [] and holm([0.9, 0.8]) == [1.0, 1.0]


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 6, 9, 13, 29, 120])
@pytest.mark.parametrize("level", [0.05, 0.01, 0.2])
def test_the_t_quantile_is_scipys(df: int, level: float) -> None:
    assert t_quantile(df, level) == pytest.approx(t.ppf(1 - level / 2, df), rel=1e-9)


def test_the_t_interval_is_scipys() -> None:
    diffs = [0.5, -0.2, 1.3, 0.0, 0.7, 2.1, -0.4]
    ours = t_interval(diffs)
    low, high = t.interval(0.95, len(diffs) - 1, loc=float(np.mean(diffs)), scale=sem(diffs))
    assert (ours.n, ours.confidence, ours.method) == (7, 0.95, "t")
    assert ours.mean == pytest.approx(sum(diffs) / 7)
    assert ours.low == pytest.approx(low, rel=1e-9) and ours.high == pytest.approx(high, rel=1e-9)


def test_the_t_interval_of_too_few_units_has_no_interval() -> None:
    assert t_interval([]).mean is None
    one = t_interval([0.3])
    assert (one.mean, one.low, one.high) == (0.3, None, None)
    same = t_interval([0.3, 0.3])
    assert same.low == pytest.approx(0.3) and same.high == pytest.approx(0.3)  # no spread: no width


def test_what_a_chapter_can_show() -> None:
    assert discordant_needed(0.05) == 6 and discordant_needed(0.01) == 8
    assert smallest_difference(7) == pytest.approx(6 / 7)
    assert smallest_difference(5) is None  # no split of 5 pairs reaches 0.05
    assert smallest_difference(60, 0.05) == pytest.approx(0.1)


def test_every_statistic_computes_at_the_smallest_level_and_wilson_fails_below_it() -> None:
    """Issue 50, item 6: the bound the options' range check and a report's reader hold a level to."""
    assert level_computable(MIN_LEVEL) and not level_computable(1e-16) and not level_computable(1e-320)
    assert wilson(3, 6, MIN_LEVEL).low is not None
    assert t_interval([0.1, 0.2, 0.4], MIN_LEVEL).low is not None
    assert discordant_needed(MIN_LEVEL) == 51
    with pytest.raises(ValueError):  # why the bound: 1 - 1e-16 / 2 is 1.0, whose quantile is infinite
        wilson(3, 6, 1e-16)
