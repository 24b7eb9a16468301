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


@dataclass(frozen=True)
class Differences:
    """Between two models of a run, over the chapters both ran: each case verdict and each pair result that
    differs, keyed "<chapter>/<id>", and, for two models with the same weights (one model through two backends or
    dtypes), the largest difference of a probability of any run."""

    a: str
    b: str
    cases_compared: int
    cases: list[tuple[str, str, str]]  # (key, a's verdict, b's)
    pairs_compared: int
    pairs: list[tuple[str, bool, bool]]  # (key, passed under a, under b)
    largest_dp: float | None = None  # None: other weights, where it measures nothing
    largest_at: str = ""  # the key (and run label) of the largest difference


def differences(chapters: list[ChapterRollup], same_weights: set[tuple[str, str]] | None = None) -> list[Differences]:
    """For each two models that ran a chapter in common, every case verdict and pair result that differs.
    `same_weights` names the (a, b) model pairs whose largest |dP| means something."""
    by_model: dict[str, dict[str, ChapterRollup]] = {}
    for rollup in chapters:
        if rollup.model is not None:
            by_model.setdefault(rollup.model, {})[rollup.info.name] = rollup
    out = []
    for a, b in combinations(by_model, 2):
        cases: list[tuple[str, str, str]] = []
        pairs: list[tuple[str, bool, bool]] = []
        compared = pairs_compared = 0
        largest, at = -1.0, ""
        for name in (n for n in by_model[a] if n in by_model[b]):
            theirs = {c.id: c for c in by_model[b][name].cases if c.scored}
            for case in (c for c in by_model[a][name].cases if c.scored and c.id in theirs):
                other = theirs[case.id]
                compared += 1
                if case.verdict != other.verdict:
                    cases.append((case.key, str(case.verdict), str(other.verdict)))
                runs = {r.label: r for r in other.runs}
                for run in case.runs:
                    match = runs.get(run.label)
                    if match is None:
                        continue
                    dp = max(abs(run.p_correct - match.p_correct), abs(run.p_wrong - match.p_wrong))
                    if dp > largest:
                        largest, at = dp, case.key + (f"[{run.label}]" if run.label else "")
            passed = {p.id: p.passed for p in by_model[b][name].pairs if p.passed is not None}
            for pair in by_model[a][name].pairs:
                if pair.passed is None or pair.id not in passed:
                    continue
                pairs_compared += 1
                if pair.passed != passed[pair.id]:
                    pairs.append((pair.key, pair.passed, passed[pair.id]))
        same = same_weights is not None and ((a, b) in same_weights or (b, a) in same_weights) and largest >= 0
        out.append(Differences(a, b, compared, cases, pairs_compared, pairs, largest if same else None,
                               at if same else ""))
    return out
