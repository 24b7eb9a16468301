"""The significance levels the statistics (stats.py) can be computed at, pure and without pydantic: the option that
sets a level (settings/options.py) is read on every pytest run, with or without --gotchas."""

from __future__ import annotations

LEVEL = 0.05  # the default significance level; intervals are at 1 - level
# The smallest level every statistic here can be computed at. Below about 2.2e-16, 1 - level / 2 rounds to 1.0 in
# double precision and its normal quantile (wilson's z) is infinite, which NormalDist refuses; 1e-15 is the round
# number above that edge. The options' range check (settings/options.py) and a report's reader refuse a smaller one.
MIN_LEVEL = 1e-15


def level_computable(level: float) -> bool:
    """Whether every interval and test of stats.py can be computed at `level` (nan and infinities are not)."""
    return MIN_LEVEL <= level < 1
