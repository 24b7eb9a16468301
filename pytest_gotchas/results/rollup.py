"""Pairs and chapters, per model, pure. A pair passes only if both members are ok; chapters are never pooled, and
neither are models: every rollup is of one chapter for one model."""

from __future__ import annotations

from dataclasses import dataclass, replace

from .schema import CaseResult, ChapterInfo
from .verdict import Verdict


@dataclass
class PairResult:
    chapter: str
    id: str
    members: list[str]
    verdicts: list[str | None]  # None: the member did not run or was not scored
    passed: bool | None  # None: incomplete, not counted
    model: str | None = None

    @property
    def key(self) -> str:
        return f"{self.chapter}/{self.id}"


@dataclass
class TwinResult:
    chapter: str
    id: str
    members: list[str]
    verdicts: list[str | None]
    agree: bool | None


@dataclass
class ChapterRollup:
    info: ChapterInfo
    cases: list[CaseResult]  # in the chapter file's order
    pairs: list[PairResult]
    twins: list[TwinResult]
    model: str | None = None  # the model these verdicts are of

    @property
    def passed(self) -> int:
        return sum(1 for p in self.pairs if p.passed)

    @property
    def counted(self) -> int:
        return sum(1 for p in self.pairs if p.passed is not None)

    def line(self) -> str:
        text = f"{self.info.label}: {self.passed}/{self.counted} pairs" if self.pairs else f"{self.info.label}: no pairs"
        incomplete = len(self.pairs) - self.counted
        if incomplete:
            text += f" ({incomplete} not scored)"
        if self.twins:
            agree = sum(1 for t in self.twins if t.agree)
            text += f"; twins agree {agree}/{sum(1 for t in self.twins if t.agree is not None)}"
        return text


def merged_info(results: list[CaseResult]) -> ChapterInfo:
    """A chapter's description from all its results: Python tests that record into one chapter each know only their
    own case and pair."""
    info = results[0].chapter
    case_ids = list(info.case_ids)
    pairs, twins = dict(info.pairs), dict(info.twins)
    for result in results[1:]:
        case_ids += [c for c in result.chapter.case_ids if c not in case_ids]
        for pair_id, members in result.chapter.pairs.items():  # a Python test names only its own member
            pairs[pair_id] = list(dict.fromkeys([*pairs.get(pair_id, []), *members]))
        twins.update({k: v for k, v in result.chapter.twins.items() if k not in twins})
    return replace(info, case_ids=case_ids, pairs=pairs, twins=twins)


def rollup(results: list[CaseResult]) -> list[ChapterRollup]:
    """One rollup per (chapter, model), chapters in file order, models in the order they first appear."""
    groups: dict[tuple[str, str | None], list[CaseResult]] = {}
    for result in results:
        groups.setdefault((result.chapter.name, result.model_id), []).append(result)
    models = list(dict.fromkeys(r.model_id for r in results))
    rollups = []
    for name, model in sorted(groups, key=lambda k: (groups[k][0].chapter.order, k[0], models.index(k[1]))):
        cases = groups[name, model]
        info = merged_info(cases)
        order = {case_id: n for n, case_id in enumerate(info.case_ids)}
        cases.sort(key=lambda c: order.get(c.id, len(order)))
        verdicts = {c.id: (c.verdict if c.scored else None) for c in cases}
        pairs = []
        for pair_id, members in info.pairs.items():
            vs = [verdicts.get(m) for m in members]
            passed = None if None in vs or len(vs) < 2 else all(v == Verdict.OK for v in vs)
            pairs.append(PairResult(name, pair_id, list(members), vs, passed, model))
        twins = []
        for twin_id, members in info.twins.items():
            vs = [verdicts.get(m) for m in members]
            twins.append(TwinResult(name, twin_id, list(members), vs, None if None in vs else vs[0] == vs[1]))
        rollups.append(ChapterRollup(info, cases, pairs, twins, model))
    return rollups
