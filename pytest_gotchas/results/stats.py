"""The statistics behind every claim a report makes, pure: an interval on a count, the exact McNemar test, Holm's
correction of a family of tests, a paired bootstrap interval, and what a chapter of n pairs can show at all.

Written out rather than imported: each is a few lines of exact arithmetic, and scipy or statsmodels at run time would
add about 100 MB to a plugin that runs on CI boxes; tests/unit/results/test_stats.py checks every figure against
scipy.stats.binomtest, statsmodels' proportion_confint and multipletests (the `test` extra).

Intervals are Wilson score intervals. With the 6-7 pairs of a chapter, the exact Clopper-Pearson interval
guarantees its coverage only by being wider than needed (at n = 6 it covers 98.9% on average over the true rate
where 95% is asked), so 2/6 reads [4.3%, 77.7%] against Wilson's [9.7%, 70.0%]; Wilson's covers 95.5% on average
there (less for some rates), and it is what inspect_ai ships for small binary samples. No interval is ever given
for 0/0: nothing was counted.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from statistics import NormalDist

from pydantic.dataclasses import dataclass

LEVEL = 0.05  # the default significance level; intervals are at 1 - level
# The smallest level every statistic here can be computed at. Below about 2.2e-16, 1 - level / 2 rounds to 1.0 in
# double precision and its normal quantile (wilson's z) is infinite, which NormalDist refuses; 1e-15 is the round
# number above that edge. The options' range check (settings/options.py) and a report's reader refuse a smaller one.
MIN_LEVEL = 1e-15
RESAMPLES = 2000  # the paired bootstrap's default number of resamples
SEED = 0  # and its default seed: the same data give the same interval


@dataclass(frozen=True)
class Interval:
    """A count `k` of `n` with its Wilson interval at `confidence`; `low`/`high` are None when n = 0."""

    k: int
    n: int
    low: float | None
    high: float | None
    confidence: float  # 0.95
    method: str = "wilson"


def level_computable(level: float) -> bool:
    """Whether every interval and test here can be computed at `level` (nan and infinities are not)."""
    return MIN_LEVEL <= level < 1


def wilson(k: int, n: int, level: float = LEVEL) -> Interval:
    """The Wilson score interval of k successes in n at confidence 1 - level."""
    if not 0 <= k <= n:
        raise ValueError(f"a count must be between 0 and n: {k}/{n}")
    if n == 0:
        return Interval(k, n, None, None, 1 - level)
    z = NormalDist().inv_cdf(1 - level / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # at k = 0 or k = n the formula's bound is 0 or 1 up to rounding: state it exactly
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return Interval(k, n, low, high, 1 - level)


def mcnemar(a_only: int, b_only: int) -> float:
    """Exact two-sided p of `a_only` against `b_only` discordant units under no difference (each 1/2)."""
    n = a_only + b_only
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(a_only, b_only) + 1)) / 2**n
    return min(1.0, 2 * tail)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: the i-th smallest of m is multiplied by m - i, made
    monotone, capped at 1. Controls the family-wise error rate under any dependence between the tests (the
    comparisons of one run share models and chapters, so independence cannot be assumed)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


@dataclass(frozen=True)
class BootstrapInterval:
    """The mean of paired differences with its percentile bootstrap interval; None bounds for fewer than 2 units."""

    n: int
    mean: float | None
    low: float | None
    high: float | None
    confidence: float
    resamples: int
    seed: int


def paired_bootstrap(differences: Sequence[float], level: float = LEVEL, resamples: int = RESAMPLES,
                     seed: int = SEED) -> BootstrapInterval:
    """Resample the units (with replacement, as many as there are) `resamples` times with a generator seeded by
    `seed`; the interval is the percentiles level/2 and 1 - level/2 of the resampled means."""
    n = len(differences)
    if n == 0:
        return BootstrapInterval(0, None, None, None, 1 - level, resamples, seed)
    mean = math.fsum(differences) / n
    if n == 1:
        return BootstrapInterval(1, mean, None, None, 1 - level, resamples, seed)
    draw = random.Random(seed)
    means = sorted(math.fsum(draw.choices(differences, k=n)) / n for _ in range(resamples))
    return BootstrapInterval(n, mean, _quantile(means, level / 2), _quantile(means, 1 - level / 2), 1 - level,
                             resamples, seed)


def _quantile(ordered: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    at = q * (len(ordered) - 1)
    below = math.floor(at)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (at - below)


def discordant_needed(level: float = LEVEL) -> int:
    """The fewest discordant units, all one way, with which the exact McNemar test can reach p < level: 6 at 0.05
    (2/2**6 = 0.031; 5 give 0.0625)."""
    n = 1
    while mcnemar(n, 0) >= level:
        n += 1
    return n


def smallest_difference(units: int, level: float = LEVEL) -> float | None:
    """The smallest difference in pass rate that `units` paired units can show at `level` (before any correction
    for the family): every discordant unit one way, as few as the test needs. None when there are too few units
    for any split to show a difference."""
    needed = discordant_needed(level)
    return needed / units if units >= needed else None
