"""results/stats.py against independent computations: scipy's binomtest (McNemar's exact test is a binomial test
of the discordant units at 1/2), statsmodels' proportion_confint (Wilson) and multipletests (Holm)."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from pytest_gotchas.results.stats import (MIN_LEVEL, discordant_needed, holm, level_computable, mcnemar,
                                          paired_bootstrap, smallest_difference, wilson)


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


def test_the_bootstrap_is_reproducible_with_its_seed_and_records_it() -> None:
    diffs = [0.5, -0.2, 1.3, 0.0, 0.7, 2.1, -0.4]
    one, again = paired_bootstrap(diffs, seed=7), paired_bootstrap(diffs, seed=7)
    assert one == again
    assert (one.seed, one.resamples, one.n, one.confidence) == (7, 2000, 7, 0.95)
    assert one.mean == pytest.approx(sum(diffs) / 7)
    assert one.low is not None and one.high is not None and one.low < one.mean < one.high  # type: ignore[operator]
    other = paired_bootstrap(diffs, seed=8)
    assert (other.low, other.high) != (one.low, one.high)


def test_the_bootstrap_agrees_with_scipys() -> None:
    from scipy.stats import bootstrap

    diffs = [0.5, -0.2, 1.3, 0.0, 0.7, 2.1, -0.4, 0.9, 1.1, -0.1]
    ours = paired_bootstrap(diffs, resamples=20000, seed=1)
    theirs = bootstrap((diffs,), lambda x: sum(x) / len(x), n_resamples=20000, method="percentile",
                       vectorized=False, rng=1).confidence_interval
    # two generators: the percentiles agree to Monte Carlo error, not to the bit
    assert ours.low == pytest.approx(theirs.low, abs=0.05) and ours.high == pytest.approx(theirs.high, abs=0.05)


def test_the_bootstrap_of_too_few_units_has_no_interval() -> None:
    assert paired_bootstrap([]).mean is None
    one = paired_bootstrap([0.3])
    assert (one.mean, one.low, one.high) == (0.3, None, None)


def test_what_a_chapter_can_show() -> None:
    assert discordant_needed(0.05) == 6 and discordant_needed(0.01) == 8
    assert smallest_difference(7) == pytest.approx(6 / 7)
    assert smallest_difference(5) is None  # no split of 5 pairs reaches 0.05
    assert smallest_difference(60, 0.05) == pytest.approx(0.1)


def test_every_statistic_computes_at_the_smallest_level_and_wilson_fails_below_it() -> None:
    """Issue 50, item 6: the bound the options' range check and a report's reader hold a level to."""
    assert level_computable(MIN_LEVEL) and not level_computable(1e-16) and not level_computable(1e-320)
    assert wilson(3, 6, MIN_LEVEL).low is not None
    assert paired_bootstrap([0.1, 0.2, 0.4], MIN_LEVEL).low is not None
    assert discordant_needed(MIN_LEVEL) == 51
    with pytest.raises(ValueError):  # why the bound: 1 - 1e-16 / 2 is 1.0, whose quantile is infinite
        wilson(3, 6, 1e-16)
