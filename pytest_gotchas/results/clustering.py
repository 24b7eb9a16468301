"""Statistics for units that come in families, pure: the instances of one family (cases/families.py) share a trap, a
template and a hand-written origin, so they are not independent draws, and a count or a mean over them says less
than its number of units suggests. Each statistic here treats the family as the cluster, and each is today's
statistic (results/stats.py) number for number where every unit is its own family:

- a share: Wilson's interval on the effective count (units / design effect), with Student's t on families - 1
  degrees of freedom in place of the normal quantile (`clustered_wilson`);
- a matched comparison of two models (or two spellings): the exact sign-flip test over families of the paired
  difference (`sign_flip`), which is the exact McNemar test where every family holds one unit;
- a mean of paired differences: the cluster-robust t interval (`cluster_t_interval`), the plain t interval where every
  family holds one unit;
- what a difference needs: the families (and so the instances) with which the difference seen would reach the level
  (`families_needed`).

Why these and not a cluster bootstrap: docs/models.md ("Families: claims from instances"). In short, a chapter has 2 to
7 families, and a percentile bootstrap over so few clusters covers far less than it states (over 2 it is their span),
while these are exact (the sign-flip test) or carry the small number of families in their t quantile; and they are
deterministic, so that a report read back computes the same numbers. tests/unit/results/test_clustering.py checks
each against statsmodels, scipy or a plain-numpy reference, and simulates the interval's coverage.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import computed_field

from .stats import (LEVEL, MeanInterval, discordant_needed, mcnemar, normal_quantile, t_interval, t_quantile,
                    wilson, wilson_bounds)
from .typed import dataclass
from .vocabulary import IntervalMethod

# Beyond this many degrees of freedom `families_needed` takes the normal quantile for t's: t(300) is 1.968 against
# 1.960 at 0.05, and t_quantile's exact sums grow with the degrees of freedom.
T_UP_TO = 300
# `families_needed` stops here: a difference that needs more families than this is said to need "more than" it.
MOST_FAMILIES = 100_000


@dataclass(frozen=True)
class ClusteredInterval:
    """`k` of `n` units in `clusters` families (a unit in no family is its own), with the interval at `confidence`:
    Wilson's where every family holds one unit (`design_effect` 1), else Wilson's on the effective count n /
    design_effect with t on clusters - 1 degrees of freedom. `low`/`high` None: nothing counted, or one family."""

    k: int
    n: int
    clusters: int
    low: float | None
    high: float | None
    confidence: float
    design_effect: float = 1.0
    method: IntervalMethod = IntervalMethod.WILSON

    @computed_field  # type: ignore[prop-decorator]
    @property
    def effective_n(self) -> float:
        """The independent units the count is worth: n / design effect."""
        return self.n / self.design_effect


def design_effect(counts: Sequence[tuple[int, int]]) -> float:
    """The variance of the share of `counts` ((passed, units) per family) over families, as the cluster-robust
    (ratio) estimator gives it, against the binomial variance of as many independent units; at least 1 (families are
    never taken to make their units worth more than independent ones). At a share of 0 or 1 the families' spread
    cannot be estimated: the bound every unit of a family alike gives, sum(units^2) / units."""
    k, n = sum(c for c, _ in counts), sum(m for _, m in counts)
    p = k / n
    if k in (0, n):
        return max(1.0, math.fsum(m * m for _, m in counts) / n)
    between = math.fsum((c - p * m) ** 2 for c, m in counts)
    return max(1.0, between / (n * p * (1 - p)))


def clustered_wilson(counts: Sequence[tuple[int, int]], level: float = LEVEL) -> ClusteredInterval:
    """The share passed of units counted in families: `counts` holds (passed, units) per family (a lone unit is a
    family of one); families with no unit counted are left out."""
    counts = [(c, m) for c, m in counts if m]
    k, n, clusters = sum(c for c, _ in counts), sum(m for _, m in counts), len(counts)
    if all(m == 1 for _, m in counts):  # every unit its own family: Wilson's interval, exactly
        plain = wilson(k, n, level)
        return ClusteredInterval(k, n, clusters, plain.low, plain.high, 1 - level)
    deff = design_effect(counts)
    if clusters < 2:  # one family: its units say nothing of how families vary
        return ClusteredInterval(k, n, clusters, None, None, 1 - level, deff, IntervalMethod.WILSON_CLUSTERED)
    low, high = wilson_bounds(k / n, n / deff, t_quantile(clusters - 1, level))
    return ClusteredInterval(k, n, clusters, low, high, 1 - level, deff, IntervalMethod.WILSON_CLUSTERED)


def sign_flip(differences: Sequence[int]) -> float:
    """The exact two-sided p of the sum of per-family paired differences (`differences`: in each family, the units
    right for one side only minus those right for the other only) under no difference, where each family's
    difference is as likely to have either sign: P(|sum of +-d| >= |sum of d|) over every assignment of signs. Where
    every difference is 0 or +-1 (every unit its own family) it is the exact McNemar test."""
    moved = [abs(d) for d in differences if d]
    if all(d == 1 for d in moved):
        return mcnemar(sum(1 for d in differences if d > 0), sum(1 for d in differences if d < 0))
    total = sum(moved)
    ways = [0] * (2 * total + 1)  # ways[s + total]: sign assignments whose sum is s
    ways[total] = 1
    for d in moved:
        shifted = [0] * len(ways)
        for s, w in enumerate(ways):
            if w:
                shifted[s - d] += w
                shifted[s + d] += w
        ways = shifted
    seen = abs(sum(differences))
    extreme = sum(w for s, w in enumerate(ways) if abs(s - total) >= seen)
    return min(1.0, extreme / (1 << len(moved)))


@dataclass(frozen=True)
class ClusteredMean:
    """A mean of paired differences over units in `clusters` families, with its interval (`difference.method` says
    which: t on units where every family holds one, the cluster-robust t on clusters - 1 degrees of freedom
    otherwise)."""

    difference: MeanInterval
    clusters: int


def cluster_t_interval(groups: Sequence[Sequence[float]], level: float = LEVEL) -> ClusteredMean:
    """The mean of the differences in `groups` (one list per family; a lone unit is a family of one) with the
    cluster-robust interval: mean +- t(G - 1) * sqrt(G / (G - 1) * sum over families of (sum of d - mean)^2) / n,
    statsmodels' cluster covariance of an intercept. Where every family holds one unit it is the t interval."""
    groups = [list(g) for g in groups if g]
    flat = [d for g in groups for d in g]
    if all(len(g) == 1 for g in groups):
        return ClusteredMean(t_interval(flat, level), len(groups))
    n, clusters = len(flat), len(groups)
    mean = math.fsum(flat) / n
    if clusters < 2:
        return ClusteredMean(MeanInterval(n, mean, None, None, 1 - level, IntervalMethod.T_CLUSTERED), clusters)
    spread = math.fsum(math.fsum(d - mean for d in g) ** 2 for g in groups)
    half = t_quantile(clusters - 1, level) * math.sqrt(clusters / (clusters - 1) * spread) / n
    return ClusteredMean(MeanInterval(n, mean, mean - half, mean + half, 1 - level, IntervalMethod.T_CLUSTERED),
                         clusters)


def _quantile(df: int, level: float) -> float:
    return t_quantile(df, level) if df <= T_UP_TO else normal_quantile(level)


def families_needed(differences: Sequence[int], level: float = LEVEL) -> int | None:
    """The fewest families like these (`differences`: each family's paired difference, as for `sign_flip`) with which
    the mean difference seen would reach `level` (before any correction): the smallest G, at least the families the
    exact test needs all one way, at which mean * sqrt(G) / sd reaches t(G - 1). None where no difference is seen;
    MOST_FAMILIES + 1 where it would take more than MOST_FAMILIES."""
    g = len(differences)
    if g == 0 or sum(differences) == 0:
        return None
    least = discordant_needed(level)
    mean = sum(differences) / g
    if g < 2 or all(d == differences[0] for d in differences):
        return least  # no spread to estimate: as many families as the exact test needs, every one this way
    sd = math.sqrt(math.fsum((d - mean) ** 2 for d in differences) / (g - 1))
    start = max(least, math.ceil((normal_quantile(level) * sd / abs(mean)) ** 2))
    for families in range(start, MOST_FAMILIES + 1):
        if abs(mean) * math.sqrt(families) / sd >= _quantile(families - 1, level):
            return families
    return MOST_FAMILIES + 1
