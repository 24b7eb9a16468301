"""Paired comparisons of models, pure: per chapter (never pooled, as the write-up counts pairs), for each two models,
the units one model gets right and the other does not, with an exact McNemar test on those discordant units.

With fewer than 6 discordant units no split can reach p < 0.05 (the smallest two-sided p of 5 is 2/32 = 0.0625), so a
difference is claimed only where the test shows one; otherwise the comparison says "no difference shown".
"""

from __future__ import annotations

import math
from itertools import combinations

from pydantic.dataclasses import dataclass

from .rollup import ChapterRollup
from .verdict import Verdict

ALPHA = 0.05


@dataclass(frozen=True)
class ModelComparison:
    chapter: str
    a: str
    b: str
    unit: str  # "pairs" (passed or not) or "cases" (ok or not)
    a_only: int  # right for a, not for b
    b_only: int
    both: int
    neither: int
    p_value: float  # exact two-sided McNemar (binomial) on a_only against b_only

    @property
    def shown(self) -> bool:
        """Whether the test shows a difference at ALPHA."""
        return self.p_value < ALPHA

    @property
    def ahead(self) -> str | None:
        """The model the test shows ahead, or None when it shows no difference."""
        if not self.shown:
            return None
        return self.a if self.a_only > self.b_only else self.b


def mcnemar(a_only: int, b_only: int) -> float:
    """Exact two-sided p of `a_only` against `b_only` discordant units under no difference (each 1/2)."""
    n = a_only + b_only
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(a_only, b_only) + 1)) / 2**n
    return min(1.0, 2 * tail)


def _compare(chapter: str, a: str, b: str, unit: str, right_a: dict[str, bool], right_b: dict[str, bool]
             ) -> ModelComparison:
    keys = [k for k in right_a if k in right_b]
    a_only = sum(1 for k in keys if right_a[k] and not right_b[k])
    b_only = sum(1 for k in keys if right_b[k] and not right_a[k])
    both = sum(1 for k in keys if right_a[k] and right_b[k])
    return ModelComparison(chapter, a, b, unit, a_only, b_only, both, len(keys) - a_only - b_only - both,
                           mcnemar(a_only, b_only))


def compare_models(chapters: list[ChapterRollup]) -> list[ModelComparison]:
    """For each chapter that ran under two models or more: each two models, on pairs and on case verdicts."""
    by_chapter: dict[str, dict[str, ChapterRollup]] = {}
    for rollup in chapters:
        if rollup.model is not None:
            by_chapter.setdefault(rollup.info.name, {})[rollup.model] = rollup
    out = []
    for chapter, models in by_chapter.items():
        for a, b in combinations(models, 2):
            pairs = [{p.id: bool(p.passed) for p in models[m].pairs if p.passed is not None} for m in (a, b)]
            cases = [{c.id: c.verdict == Verdict.OK for c in models[m].cases if c.scored} for m in (a, b)]
            if pairs[0] and pairs[1]:
                out.append(_compare(chapter, a, b, "pairs", *pairs))
            out.append(_compare(chapter, a, b, "cases", *cases))
    return out
