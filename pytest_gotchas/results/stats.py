"""The statistics behind every claim a report makes, pure: an interval on a count, the exact McNemar test, Holm's
correction of a family of tests, a t interval on a mean of paired differences, and what a chapter of n pairs can
show at all.

Written out rather than imported: each is a few lines of exact arithmetic, and scipy or statsmodels at run time would
add about 100 MB to a plugin that runs on CI boxes; tests/unit/results/test_stats.py checks every figure against
scipy.stats.binomtest, statsmodels' proportion_confint and multipletests, scipy.stats.t (the `test` extra).

Intervals are Wilson score intervals. With the 6-7 pairs of a chapter, the exact Clopper-Pearson interval
guarantees its coverage only by being wider than needed (at n = 6 it covers 98.9% on average over the true rate
where 95% is asked), so 2/6 reads [4.3%, 77.7%] against Wilson's [9.7%, 70.0%]; Wilson's covers 95.5% on average
there (less for some rates), and it is what inspect_ai ships for small binary samples. No interval is ever given
for 0/0: nothing was counted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from statistics import NormalDist

from .levels import LEVEL, MIN_LEVEL, level_computable  # noqa: F401  (published here too)
from .typed import dataclass
from .vocabulary import IntervalMethod


@dataclass(frozen=True)
class Interval:
    """A count `k` of `n` with its Wilson interval at `confidence`; `low`/`high` are None when n = 0."""

    k: int
    n: int
    low: float | None
    high: float | None
    confidence: float  # 0.95
    method: IntervalMethod = IntervalMethod.WILSON


def wilson(k: int, n: int, level: float = LEVEL) -> Interval:
    """The Wilson score interval of k successes in n at confidence 1 - level."""
    if not 0 <= k <= n:
        raise ValueError(f"a count must be between 0 and n: {k}/{n}")
    if n == 0:
        return Interval(k, n, None, None, 1 - level)
    low, high = wilson_bounds(k / n, n, normal_quantile(level))
    return Interval(k, n, low, high, 1 - level)


def normal_quantile(level: float) -> float:
    """The z with P(|Z| <= z) = 1 - level (1.96 at 0.05)."""
    return NormalDist().inv_cdf(1 - level / 2)


def wilson_bounds(p: float, n: float, z: float) -> tuple[float, float]:
    """Wilson's bounds for a share `p` of `n` units (n may be an effective, fractional count) with quantile `z`."""
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # at p = 0 or p = 1 the formula's bound is 0 or 1 up to rounding: state it exactly
    low = 0.0 if p == 0 else max(0.0, centre - half)
    high = 1.0 if p == 1 else min(1.0, centre + half)
    return low, high


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
class MeanInterval:
    """The mean of paired differences with its Student t interval; None bounds for fewer than 2 units."""

    n: int
    mean: float | None
    low: float | None
    high: float | None
    confidence: float
    method: IntervalMethod = IntervalMethod.T


def t_interval(differences: Sequence[float], level: float = LEVEL) -> MeanInterval:
    """mean +- t(n - 1, 1 - level/2) * s / sqrt(n): exact for normal differences at any n, where a percentile
    bootstrap of n units covers far less than it says at small n (2 units: their span, about half the time;
    tests/unit/results/test_coverage.py simulates both, docs/models.md gives the figures)."""
    n = len(differences)
    if n == 0:
        return MeanInterval(0, None, None, None, 1 - level)
    mean = math.fsum(differences) / n
    if n == 1:
        return MeanInterval(1, mean, None, None, 1 - level)
    half = t_quantile(n - 1, level) * math.sqrt(math.fsum((d - mean) ** 2 for d in differences) / (n - 1) / n)
    return MeanInterval(n, mean, mean - half, mean + half, 1 - level)


def t_within(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with an integer `df`: the finite sums of Abramowitz and Stegun 26.7.3 (df odd)
    and 26.7.4 (df even), exact up to rounding."""
    theta = math.atan(t / math.sqrt(df))
    cos, sin = math.cos(theta), math.sin(theta)
    if df % 2:
        term, total = cos, 0.0
        for k in range(1, (df - 1) // 2 + 1):  # cos + 2/3 cos^3 + (2*4)/(3*5) cos^5 + ...: (df - 1) / 2 terms
            total += term
            term *= cos * cos * 2 * k / (2 * k + 1)
        return 2 / math.pi * (theta + sin * total)
    term, total = 1.0, 0.0
    for k in range(1, df // 2 + 1):  # 1 + 1/2 cos^2 + (1*3)/(2*4) cos^4 + ...: df / 2 terms
        total += term
        term *= cos * cos * (2 * k - 1) / (2 * k)
    return sin * total


@lru_cache(maxsize=256)
def t_quantile(df: int, level: float = LEVEL) -> float:
    """The t with P(|T| <= t) = 1 - level for `df` degrees of freedom (12.71 for df 1 at 0.05), by bisection."""
    low, high = 0.0, 1.0
    while t_within(high, df) < 1 - level:
        high *= 2
    for _ in range(200):
        middle = (low + high) / 2
        if middle in (low, high):
            break
        low, high = (middle, high) if t_within(middle, df) < 1 - level else (low, middle)
    return (low + high) / 2


def discordant_needed(level: float = LEVEL) -> int:
    """The fewest discordant units, all one way, with which the exact McNemar test can reach p < level: 6 at 0.05
    (2/2**6 = 0.031; 5 give 0.0625)."""
    n = 1
    while mcnemar(n, 0) >= level:
        n += 1
    return n


def smallest_difference(units: int, level: float = LEVEL, clusters: int | None = None) -> float | None:
    """The smallest difference in pass rate that `units` paired units can show at `level` (before any correction
    for the family): every discordant unit one way, as few as the test needs. None when there are too few units
    for any split to show a difference. Units in `clusters` families (results/clustering.py's sign-flip test) need
    as many families, each with a discordant unit, all one way: one unit in each is the smallest difference."""
    needed = discordant_needed(level)
    return needed / units if (units if clusters is None else clusters) >= needed else None
