"""Pairs and chapters, pure. A pair passes only if both members are ok; chapters are never pooled."""

from __future__ import annotations

from dataclasses import dataclass

from .results import CaseResult, ChapterInfo
from .verdict import Verdict


@dataclass
class PairResult:
    chapter: str
    id: str
    members: list[str]
    verdicts: list[str | None]  # None: the member did not run or was not scored
    passed: bool | None  # None: incomplete, not counted

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


def rollup(results: list[CaseResult]) -> list[ChapterRollup]:
    chapters: dict[str, list[CaseResult]] = {}
    for result in results:
        chapters.setdefault(result.chapter.name, []).append(result)
    rollups = []
    for name in sorted(chapters, key=lambda n: (chapters[n][0].chapter.path, n)):
        cases = chapters[name]
        info = cases[0].chapter
        order = {case_id: n for n, case_id in enumerate(info.case_ids)}
        cases.sort(key=lambda c: order.get(c.id, len(order)))
        verdicts = {c.id: (c.verdict if c.scored else None) for c in cases}
        pairs = []
        for pair_id, members in info.pairs.items():
            vs = [verdicts.get(m) for m in members]
            passed = None if None in vs else all(v == Verdict.OK for v in vs)
            pairs.append(PairResult(name, pair_id, list(members), vs, passed))
        twins = []
        for twin_id, members in info.twins.items():
            vs = [verdicts.get(m) for m in members]
            twins.append(TwinResult(name, twin_id, list(members), vs, None if None in vs else vs[0] == vs[1]))
        rollups.append(ChapterRollup(info, cases, pairs, twins))
    return rollups
