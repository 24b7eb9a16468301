"""Paired comparisons of models, pure: per chapter (never pooled, as the write-up counts pairs), for each two models,
the units one model gets right and the other does not, with an exact McNemar test on those discordant units.

With fewer than 6 discordant units no split can reach p < 0.05 (the smallest two-sided p of 5 is 2/32 = 0.0625), so a
difference is claimed only where the test shows one; otherwise the comparison says "no difference shown".

One run makes many such tests (every chapter, two units, every two models, or beyond ALL_PAIRS_UP_TO models each
with the next, and each model's twins), so every test of
a run is one family, corrected with Holm's method (results/stats.py): a model is named ahead only where the adjusted
p is below the run's level. Beside the counts, each two models get the mean paired difference of the cases' log
ratios (log P(correct) - log P(wrong), in nats) per chapter with a t interval, which moves long before counts can; a
direction is stated from it only with as many cases as a sign test, all one way, needs (6 at 0.05).
"""

from __future__ import annotations

import math
from dataclasses import replace
from itertools import combinations

from pydantic import computed_field

from .clustering import cluster_t_interval, families_needed, sign_flip
from .clusters import Cluster, case_clusters, pair_clusters, twin_clusters
from .rollup import ChapterRollup, TwinResult
from .schema import CaseResult
from .stats import LEVEL, MeanInterval, discordant_needed, holm
from .typed import dataclass
from .verdict import Verdict

# Up to this many models, every two are compared (a CI matrix of a few models: 28 pairs at most). Beyond it, each
# model with the next in the report's order (Report.model_order: --order, else as they ran or were merged), as a
# series of checkpoints is read: the tests, their family, the summary and the page then grow with the number of
# models, not with its square (200 checkpoints were 19,900 bootstraps per chapter and a 19.5 MB page).
ALL_PAIRS_UP_TO = 8


def compared_pairs(models: list[str], order: list[str] | None = None) -> list[tuple[str, str]]:
    """The two-model comparisons made among `models` (as they ran): every two, or beyond ALL_PAIRS_UP_TO each with
    the next in `order` (models it does not name last, as they ran)."""
    if len(models) <= ALL_PAIRS_UP_TO:
        return list(combinations(models, 2))
    rank = {model: n for n, model in enumerate(order or [])}
    ordered = sorted(models, key=lambda model: rank.get(model, len(rank)))  # stable: the rest as they ran
    return list(zip(ordered, ordered[1:]))


def _by_chapter(chapters: list[ChapterRollup]) -> dict[str, dict[str, ChapterRollup]]:
    """Per chapter, the rollups of the models that ran it."""
    by_chapter: dict[str, dict[str, ChapterRollup]] = {}
    for rollup in chapters:
        if rollup.model is not None:
            by_chapter.setdefault(rollup.info.name, {})[rollup.model] = rollup
    return by_chapter


# Each probability is floored here before its log is taken: a reading can be exactly 0 (bfloat16 underflow), and a
# case with P(wrong) = 1e-20 should not outweigh a whole chapter. 1e-6 is below the 0.01% the reports print.
LOG_FLOOR = 1e-6


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
    # exact two-sided: McNemar (binomial) on a_only against b_only where every unit is its own family, else the
    # sign-flip test over families of their paired differences (results/clustering.py)
    p_value: float
    p_adjusted: float = 1.0  # Holm-adjusted over every test of the run (or merge)
    level: float = LEVEL
    # The families the units compared fall in (a unit in no family counts as one; 0: not recorded, an older report),
    # whether some family holds more than one of them (the p is then the sign-flip test's), and the families and
    # units like these that the difference seen would need to reach the level before correction (None: none seen).
    clusters: int = 0
    clustered: bool = False
    families_needed: int | None = None
    units_needed: int | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def shown(self) -> bool:
        """Whether the test shows a difference at the run's level, once corrected for the family."""
        return self.p_adjusted < self.level

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ahead(self) -> str | None:
        """The model the test shows ahead, or None when it shows no difference."""
        if not self.shown:
            return None
        return self.a if self.a_only > self.b_only else self.b



def _compare(chapter: str, a: str, b: str, unit: str, right_a: dict[str, bool], right_b: dict[str, bool],
             clusters: dict[str, Cluster]) -> ModelComparison:
    keys = [k for k in right_a if k in right_b]
    a_only = sum(1 for k in keys if right_a[k] and not right_b[k])
    b_only = sum(1 for k in keys if right_b[k] and not right_a[k])
    both = sum(1 for k in keys if right_a[k] and right_b[k])
    split = paired_differences(keys, [int(right_a[k]) - int(right_b[k]) for k in keys], clusters)
    needed = families_needed(split)
    return ModelComparison(chapter, a, b, unit, a_only, b_only, both, len(keys) - a_only - b_only - both,
                           sign_flip(split), clusters=len(split), clustered=len(split) < len(keys),
                           families_needed=needed, units_needed=units_for(needed, len(keys), len(split)))


def paired_differences(keys: list[str], differences: list[int], clusters: dict[str, Cluster]) -> list[int]:
    """Each cluster's sum of the paired differences of its units (`keys`, in order), clusters in first-seen order."""
    sums: dict[Cluster, int] = {}
    for key, difference in zip(keys, differences):
        cluster = clusters.get(key, Cluster(None, key))
        sums[cluster] = sums.get(cluster, 0) + difference
    return list(sums.values())


def units_for(families: int | None, units: int, clusters: int) -> int | None:
    """The units `families` families hold at the mean size of these (`units` in `clusters`)."""
    return None if families is None or not clusters else math.ceil(families * units / clusters)


def compare_models(chapters: list[ChapterRollup], order: list[str] | None = None) -> list[ModelComparison]:
    """For each chapter that ran under two models or more: the models `compared_pairs` (in `order`), on pairs and on
    case verdicts; raw p only (`corrected` adjusts a run's whole family)."""
    out = []
    for chapter, models in _by_chapter(chapters).items():
        for a, b in compared_pairs(list(models), order):
            pairs = [{p.id: bool(p.passed) for p in models[m].pairs if p.passed is not None} for m in (a, b)]
            cases = [{c.id: c.verdict == Verdict.OK for c in models[m].cases if c.scored} for m in (a, b)]
            info = models[a].info
            if pairs[0] and pairs[1]:
                out.append(_compare(chapter, a, b, "pairs", pairs[0], pairs[1], pair_clusters(info)))
            if cases[0] and cases[1]:  # a chapter no case of which was scored makes no test
                out.append(_compare(chapter, a, b, "cases", cases[0], cases[1], case_clusters(info)))
    return out


@dataclass(frozen=True)
class TwinSplit:
    """One model's twins of one chapter: how many agree, and of those where exactly one spelling is ok, which one,
    with an exact McNemar test of sugared-right-desugared-wrong against the reverse. A twin's first member is the
    spelling a human writes (the sugar), its second the expansion the documentation defines it by."""

    chapter: str
    model: str | None
    counted: int  # twins with both members scored
    agree: int  # same verdict for both spellings
    sugared_only: int  # the sugared spelling ok, the desugared not
    desugared_only: int  # the reverse
    p_value: float  # exact McNemar, or the sign-flip test over families where a family holds two twins or more
    p_adjusted: float = 1.0
    level: float = LEVEL
    clusters: int = 0  # the families the counted twins fall in (a lone twin counts as one; 0: an older report)
    clustered: bool = False  # some family holds more than one counted twin

    @computed_field  # type: ignore[prop-decorator]
    @property
    def neither(self) -> int:
        """Twins that disagree with neither spelling ok (a MISS against a tie or noise)."""
        return self.counted - self.agree - self.sugared_only - self.desugared_only

    @computed_field  # type: ignore[prop-decorator]
    @property
    def shown(self) -> bool:
        return self.p_adjusted < self.level

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ahead(self) -> str | None:
        """The spelling the model is shown to get right more often, or None."""
        if not self.shown:
            return None
        return "sugared" if self.sugared_only > self.desugared_only else "desugared"


def twin_split(chapter: str, model: str | None, twins: list[TwinResult],
               clusters: dict[str, Cluster] | None = None) -> TwinSplit:
    counted = [t for t in twins if t.agree is not None]
    ok = [[v == Verdict.OK for v in t.verdicts] for t in counted]
    sugared = sum(1 for first, second in ok if first and not second)
    desugared = sum(1 for first, second in ok if second and not first)
    split = paired_differences([t.id for t in counted], [int(first) - int(second) for first, second in ok],
                               clusters or {})
    return TwinSplit(chapter, model, len(counted), sum(1 for t in counted if t.agree), sugared, desugared,
                     sign_flip(split), clusters=len(split), clustered=len(split) < len(counted))


def twin_splits(chapters: list[ChapterRollup]) -> list[TwinSplit]:
    """Per chapter with twins scored, per model (one model's run included): raw p only (`corrected` adjusts them)."""
    return [twin_split(c.info.name, c.model, c.twins, twin_clusters(c.info)) for c in chapters
            if any(t.agree is not None for t in c.twins)]


def corrected(comparisons: list[ModelComparison], splits: list[TwinSplit], level: float = LEVEL
              ) -> tuple[list[ModelComparison], list[TwinSplit]]:
    """Every test of a run as one family: Holm-adjusted p-values, each test judged at `level`."""
    adjusted = holm([c.p_value for c in comparisons] + [s.p_value for s in splits])
    n = len(comparisons)
    return ([replace(c, p_adjusted=p, level=level) for c, p in zip(comparisons, adjusted[:n])],
            [replace(s, p_adjusted=p, level=level) for s, p in zip(splits, adjusted[n:])])


def log_ratio(case: CaseResult) -> float | None:
    """log P(correct) - log P(wrong) of the main reading (natural log, each floored at LOG_FLOOR), the mean over the
    case's own runs (each primer order; variants left out); None for a case not scored. Not the case's margin
    (P(correct) - P(wrong), a difference of probabilities): a ratio, in nats."""
    runs = [r for r in case.runs if r.variant is None]
    if not case.scored or not runs:
        return None
    return math.fsum(math.log(max(r.p_correct, LOG_FLOOR)) - math.log(max(r.p_wrong, LOG_FLOOR))
                     for r in runs) / len(runs)


@dataclass(frozen=True)
class LogRatioDifference:
    """Per chapter, for two models: the mean over the cases both scored of log_ratio(a) - log_ratio(b), in nats,
    with its t interval. Positive: a leans further to the right answer. A direction is stated only from
    `cases_needed` cases (docs/models.md, "A finer paired measure"): fewer are printed without one."""

    chapter: str
    a: str
    b: str
    difference: MeanInterval  # the t interval, or the cluster-robust one where a family holds two cases or more
    cases_needed: int = 0  # the fewest cases a direction is stated from: as many as a sign test all one way needs
    # The families the cases fall in (a case in no family counts as one); None: every case its own (older reports).
    # Where cases come in families, a direction needs `cases_needed` families, as the sign-flip test over them does.
    clusters: int | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def enough(self) -> bool:
        """Whether there are cases (families) enough to state a direction at all."""
        units = self.difference.n if self.clusters is None else self.clusters
        return units >= self.cases_needed and self.difference.low is not None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def shown(self) -> bool:
        """Whether a direction is stated: cases enough, and the interval leaves out 0 (an interval per chapter, not
        corrected for the family)."""
        d = self.difference
        return self.enough and d.low is not None and d.high is not None and (d.low > 0 or d.high < 0)


def mean_log_ratio(rollup: ChapterRollup) -> float | None:
    """A model's mean case log ratio in one chapter (nats); None: no case has one."""
    ratios = [m for m in (log_ratio(c) for c in rollup.cases) if m is not None]
    return math.fsum(ratios) / len(ratios) if ratios else None


def counted_by_all(rollups: list[ChapterRollup]) -> set[str]:
    """A chapter's pairs counted under every model that ran it (its rollups): the most a comparison of them can
    rest on."""
    counted = [{p.id for p in r.pairs if p.passed is not None} for r in rollups]
    return set.intersection(*counted) if counted else set()


def log_ratio_differences(chapters: list[ChapterRollup], level: float = LEVEL,
                          order: list[str] | None = None) -> list[LogRatioDifference]:
    """For each chapter that ran under two models or more, the models `compared_pairs` (in `order`): the paired log
    ratio difference."""
    out = []
    needed = discordant_needed(level)
    for chapter, models in _by_chapter(chapters).items():
        for a, b in compared_pairs(list(models), order):
            theirs = {c.id: log_ratio(c) for c in models[b].cases}
            clusters = case_clusters(models[a].info)
            groups: dict[Cluster, list[float]] = {}
            for case in models[a].cases:
                mine, other = log_ratio(case), theirs.get(case.id)
                if mine is not None and other is not None:
                    groups.setdefault(clusters.get(case.id, Cluster(None, case.id)), []).append(mine - other)
            if groups:  # no case scored under both: nothing to compare
                found = cluster_t_interval(list(groups.values()), level)
                out.append(LogRatioDifference(chapter, a, b, found.difference, needed, found.clusters))
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


def differences(chapters: list[ChapterRollup], same_weights: set[tuple[str, str]] | None = None,
                order: list[str] | None = None) -> list[Differences]:
    """For the models `compared_pairs` (in `order`) that ran a chapter in common, every case verdict and pair result
    that differs. `same_weights` names the (a, b) model pairs whose largest |dP| means something."""
    by_model: dict[str, dict[str, ChapterRollup]] = {}
    for rollup in chapters:
        if rollup.model is not None:
            by_model.setdefault(rollup.model, {})[rollup.info.name] = rollup
    out = []
    for a, b in compared_pairs(list(by_model), order):
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
