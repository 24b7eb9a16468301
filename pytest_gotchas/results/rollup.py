"""Pairs and chapters, per model, pure. A pair passes only if both members are ok; chapters are never pooled, and
neither are models: every rollup is of one chapter for one model."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .schema import CaseResult, ChapterInfo, Patching
from .typed import dataclass as typed
from .verdict import Verdict


@typed
class PairResult:
    chapter: str
    id: str
    members: list[str]
    verdicts: list[Verdict | None]  # None: the member did not run or was not scored
    passed: bool | None  # None: incomplete, not counted
    model: str | None = None
    patching: list[Patching] = field(default_factory=list)  # --gotchas-patch: both directions, per primer

    @property
    def key(self) -> str:
        return f"{self.chapter}/{self.id}"


@typed
class TwinResult:
    chapter: str
    id: str
    members: list[str]
    verdicts: list[Verdict | None]
    agree: bool | None
    model: str | None = None
    patching: list[Patching] = field(default_factory=list)  # --gotchas-patch: both directions, per primer


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

    @property
    def agreeing(self) -> int:
        return sum(1 for t in self.twins if t.agree)

    @property
    def twins_counted(self) -> int:
        return sum(1 for t in self.twins if t.agree is not None)


def merged_info(infos: Iterable[ChapterInfo]) -> ChapterInfo:
    """One chapter's description from the descriptions of its parts: Python tests that record into one chapter
    each know only their own case and pair, and xdist workers each know the tests they ran."""
    first, *rest = infos
    case_ids = list(first.case_ids)
    pairs, twins, families = dict(first.pairs), dict(first.twins), dict(first.families)
    for info in rest:
        case_ids += [c for c in info.case_ids if c not in case_ids]
        for pair_id, members in info.pairs.items():  # a Python test names only its own member
            pairs[pair_id] = list(dict.fromkeys([*pairs.get(pair_id, []), *members]))
        twins.update({k: v for k, v in info.twins.items() if k not in twins})
        families.update({k: v for k, v in info.families.items() if k not in families})
    return replace(first, case_ids=case_ids, pairs=pairs, twins=twins, families=families)


def merged_infos(infos: Iterable[ChapterInfo]) -> dict[str, ChapterInfo]:
    """Every chapter once by name, each merged from all its parts, in the order they first appear."""
    parts: dict[str, list[ChapterInfo]] = {}
    for info in infos:
        parts.setdefault(info.name, []).append(info)
    return {name: merged_info(found) for name, found in parts.items()}


def in_run_order(results: Iterable[CaseResult], chapters: Mapping[str, ChapterInfo], models: list[str]
                 ) -> list[CaseResult]:
    """The results in the run's model order (`models`), then chapter and case order: under xdist they arrive as
    workers finish them."""
    rank = {model: n for n, model in enumerate(models)}
    # Each case's (first) place, once per chapter: a scan of case_ids per result was quadratic in a chapter's size.
    places = {name: {case_id: n for n, case_id in reversed(list(enumerate(info.case_ids)))}
              for name, info in chapters.items()}

    def key(r: CaseResult) -> tuple[Any, ...]:
        return (rank.get(str(r.model), len(rank)), chapters[r.chapter].order, places[r.chapter].get(r.id, 0))

    return sorted(results, key=key)


def rollup(results: list[CaseResult], chapters: Mapping[str, ChapterInfo]) -> list[ChapterRollup]:
    """One rollup per (chapter, model), chapters in file order, models in the order they first appear."""
    groups: dict[tuple[str, str | None], list[CaseResult]] = {}
    for result in results:
        groups.setdefault((result.chapter, result.model), []).append(result)
    rank = {model: n for n, model in enumerate(dict.fromkeys(r.model for r in results))}
    rollups = []
    for name, model in sorted(groups, key=lambda k: (chapters[k[0]].order, k[0], rank[k[1]])):
        info = chapters[name]
        order = {case_id: n for n, case_id in enumerate(info.case_ids)}
        cases = sorted(groups[name, model], key=lambda c: order.get(c.id, len(order)))
        verdicts = {c.id: (c.verdict if c.scored else None) for c in cases}
        pairs = []
        for pair_id, members in info.pairs.items():
            vs: list[Verdict | None] = [verdicts.get(m) for m in members]
            passed = None if None in vs or len(vs) < 2 else all(v == Verdict.OK for v in vs)
            pairs.append(PairResult(name, pair_id, list(members), vs, passed, model,
                                    _patching(cases, pair_id, twin=False)))
        twins = []
        for twin_id, members in info.twins.items():
            vs = [verdicts.get(m) for m in members]
            twins.append(TwinResult(name, twin_id, list(members), vs, None if None in vs else vs[0] == vs[1], model,
                                    _patching(cases, twin_id, twin=True)))
        rollups.append(ChapterRollup(info, cases, pairs, twins, model))
    return rollups


def _patching(cases: list[CaseResult], group: str, twin: bool) -> list[Patching]:
    """The patching a member carries for this pair (or twin): whichever process scored the last member made it."""
    return [p for case in cases for p in case.patching if p.group == group and p.twin == twin]
