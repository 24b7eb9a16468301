"""Per chapter and model, what the families say, pure: the share of paired instances passed with the interval that
accounts for the families (results/clustering.py), and per family the share of its drawn instances passed beside
its instance zero's verdict (the hand-written unit), so that a family whose hand-written pair passes and whose
instances fail is named: the model knew that spelling, not the trap (surface dependence).
"""

from __future__ import annotations

from pydantic import computed_field

from .clustering import ClusteredInterval, clustered_wilson
from .clusters import Cluster, pair_clusters
from .rollup import ChapterRollup
from .stats import LEVEL, Interval, wilson
from .typed import dataclass
from .verdict import Verdict
from .vocabulary import FamilyKind

# A family's instances "fail" (or "pass") where the Wilson interval of their share lies wholly below (above) a half:
# most of them do, and their number says so at the run's level.
MOST = 0.5


@dataclass(frozen=True)
class FamilyShare:
    """One family of a chapter under one model: its instance zero's outcome and its drawn instances' (index 1 on)."""

    chapter: str
    model: str | None
    family: str
    kind: FamilyKind
    zero: bool | None  # instance zero passed (a pair family), agreed (twins) or was ok (cases); None: not counted
    instances: Interval  # the drawn instances counted and passed, with Wilson's interval at the run's level

    @computed_field  # type: ignore[prop-decorator]
    @property
    def surface_dependent(self) -> bool:
        """Instance zero passes and most of the drawn instances fail (their interval lies below a half)."""
        return self.zero is True and self.instances.high is not None and self.instances.high < MOST

    @computed_field  # type: ignore[prop-decorator]
    @property
    def zero_alone_fails(self) -> bool:
        """Instance zero fails and most of the drawn instances pass: the hand-written one is the harder spelling."""
        return self.zero is False and self.instances.low is not None and self.instances.low > MOST


def outcomes(rollup: ChapterRollup, kind: FamilyKind) -> dict[str, bool | None]:
    """Each unit of the kind -> whether it passed (pairs), agreed (twins) or was ok (cases); None: not counted."""
    if kind == FamilyKind.PAIR:
        return {p.id: p.passed for p in rollup.pairs}
    if kind == FamilyKind.TWIN:
        return {t.id: t.agree for t in rollup.twins}
    return {c.id: (c.verdict == Verdict.OK) if c.scored else None for c in rollup.cases}


def family_shares(chapters: list[ChapterRollup], level: float = LEVEL) -> list[FamilyShare]:
    """Per chapter and model, each family that drew instances beyond its instance zero, in the chapter's order."""
    out = []
    for rollup in chapters:
        for family, info in rollup.info.families.items():
            if not any(i.index >= 1 for i in info.instances):
                continue
            found = outcomes(rollup, info.kind)
            zero = next((found.get(i.unit) for i in info.instances if i.index == 0), None)
            drawn = [o for i in info.instances if i.index >= 1 and (o := found.get(i.unit)) is not None]
            out.append(FamilyShare(rollup.info.name, rollup.model, family, info.kind, zero,
                                   wilson(sum(drawn), len(drawn), level)))
    return out


def cluster_counts(passed: dict[str, bool], clusters: dict[str, Cluster]) -> list[tuple[int, int]]:
    """(passed, counted) per cluster of the units `passed` names, clusters in first-seen order."""
    counts: dict[Cluster, list[int]] = {}
    for unit, ok in passed.items():
        tally = counts.setdefault(clusters.get(unit, Cluster(None, unit)), [0, 0])
        tally[0] += ok
        tally[1] += 1
    return [(k, n) for k, n in counts.values()]


def pairs_clustered(rollup: ChapterRollup, level: float = LEVEL) -> ClusteredInterval:
    """The chapter's paired instances passed (every pair counted, hand-written or drawn), with the interval that
    accounts for the families: Wilson's, number for number, where no family drew more than one pair."""
    counted = {p.id: bool(p.passed) for p in rollup.pairs if p.passed is not None}
    return clustered_wilson(cluster_counts(counted, pair_clusters(rollup.info)), level)


def families_counted(rollups: list[ChapterRollup], units: set[str]) -> int:
    """How many clusters the pairs `units` fall in (a pair in no family counts as one)."""
    if not rollups:
        return 0
    clusters = pair_clusters(rollups[0].info)
    return len({clusters.get(u, Cluster(None, u)) for u in units})
