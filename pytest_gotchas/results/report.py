"""One run's report: the results, the descriptions they refer to, their rollups, the run's facts and the baseline
outcomes; and the versioned JSON document every view and `gotchas merge` read.

`Report` is what a run (or a merge) produced; its rollups, pairs and comparisons are computed from it on demand.
`ReportFile` is the JSON document: the report's own facts plus the computed sections, for readers of the file. It is
written and read through pydantic (validated on read, the path of the first bad value in the error), and its JSON
Schema (report.schema.json beside this module) is generated from these types: tests/unit/results keeps the file in
step and validates every report the tests write against it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from collections.abc import Iterator
from typing import Any

from pydantic import TypeAdapter, model_validator

from .baselines import BaselineOutcome
from .clustering import ClusteredInterval
from .consistency import (Inconsistency, case_inconsistencies, first_difference, non_finite, stated,
                          subject_of)
from .familyshares import FamilyShare, families_counted, family_shares, pairs_clustered
from .formats import COMPUTED_SECTIONS, FORMAT, migrate
from .onepass import OnePassCheck, check
from .patched import ChapterEffects, chapter_effects
from .pairwise import (LogRatioDifference, ModelComparison, TwinSplit, compare_models, corrected, counted_by_all,
                       log_ratio_differences, twin_splits)
from .rollup import ChapterRollup, PairResult, TwinResult, merged_infos, rollup
from .schema import CaseResult, ChapterInfo, ModelInfo, Invocation
from .stats import Interval, discordant_needed, smallest_difference, wilson
from .typed import dataclass as typed
from .verdict import Verdict

SCHEMA_FILE = Path(__file__).with_name("report.schema.json")


@dataclass
class Report:
    results: list[CaseResult]
    chapter_infos: list[ChapterInfo]  # every chapter a result names (merged_infos joins parts of one chapter)
    model_infos: list[ModelInfo] = field(default_factory=list)  # every model that scored, in the order they ran
    run: Invocation = field(default_factory=Invocation)
    baselines: list[BaselineOutcome] = field(default_factory=list)  # per model

    @cached_property
    def infos(self) -> dict[str, ChapterInfo]:
        return merged_infos(self.chapter_infos)

    @cached_property
    def models(self) -> dict[str, ModelInfo]:
        return {m.id: m for m in self.model_infos}

    @cached_property
    def chapters(self) -> list[ChapterRollup]:
        return rollup(self.results, self.infos)

    @property
    def model_order(self) -> list[str]:
        """The models in the user's order (--order; only models of the report), then every other as it ran: the
        order of the table's columns, and of a series' comparisons (results/pairwise.py's `compared_pairs`)."""
        ordered = [o.model for o in self.run.order if o.model in self.models]
        return list(dict.fromkeys(ordered + self.model_ids))

    @cached_property
    def _tests(self) -> tuple[list[ModelComparison], list[TwinSplit]]:
        """Every test of the run, one family, Holm-corrected at the run's level."""
        return corrected(compare_models(self.chapters, self.model_order), twin_splits(self.chapters), self.run.level)

    @property
    def comparisons(self) -> list[ModelComparison]:
        return self._tests[0]

    @property
    def twin_splits(self) -> list[TwinSplit]:
        return self._tests[1]

    @cached_property
    def log_ratios(self) -> list[LogRatioDifference]:
        return log_ratio_differences(self.chapters, self.run.level, order=self.model_order)

    def intervals(self, chapter: ChapterRollup) -> tuple[Interval, Interval]:
        """A chapter's pairs passed and cases ok for its model (a rollup of `chapters`), each with its interval at the
        run's level: computed once, for the JSON and every view."""
        return self._intervals[(chapter.info.name, chapter.model)]

    @cached_property
    def _intervals(self) -> dict[tuple[str, str | None], tuple[Interval, Interval]]:
        found = {}
        for chapter in self.chapters:
            scored = [c for c in chapter.cases if c.scored]
            found[(chapter.info.name, chapter.model)] = (
                wilson(chapter.passed, chapter.counted, self.run.level),
                wilson(sum(1 for c in scored if c.verdict == Verdict.OK), len(scored), self.run.level))
        return found

    @cached_property
    def summaries(self) -> list[ChapterSummary]:
        """Each chapter's rollup for each model, as the JSON states it (its `rollups` section)."""
        level = self.run.level
        found = []
        for c in self.chapters:
            clustered = self.clustered(c)
            found.append(ChapterSummary(c.info.name, c.model, c.passed, c.counted, len(c.pairs), c.twins,
                                        *self.intervals(c), smallest_difference(c.counted, level, clustered.clusters),
                                        discordant_needed(level), clustered))
        return found

    @cached_property
    def can_show(self) -> dict[str, CanShow]:
        """By chapter, in the report's order: what its pairs can show across every model that ran it."""
        level = self.run.level
        found = {}
        for name in dict.fromkeys(c.info.name for c in self.chapters):
            rollups = [c for c in self.chapters if c.info.name == name]
            counted = counted_by_all(rollups)
            families = families_counted(rollups, counted)
            found[name] = CanShow(len(counted), len(self.infos[name].pairs), discordant_needed(level),
                                  smallest_difference(len(counted), level, families), families)
        return found

    def clustered(self, chapter: ChapterRollup) -> ClusteredInterval:
        """A chapter's paired instances passed for its model, with the interval that accounts for its families (the
        Wilson interval of `intervals`, number for number, where no family drew more than one pair)."""
        return pairs_clustered(chapter, self.run.level)

    @cached_property
    def family_shares(self) -> list[FamilyShare]:
        """Per chapter, model and family with drawn instances: their share passed beside instance zero's verdict."""
        return family_shares(self.chapters, self.run.level)

    @cached_property
    def effects(self) -> list[ChapterEffects]:
        """--gotchas-patch: per chapter and model, the directions under the effect floor, the screen summed and the
        components the directions share (results/patched.py)."""
        return chapter_effects(self.chapters)

    @cached_property
    def one_pass_check(self) -> OnePassCheck | None:
        """--gotchas-one-pass-check: the readings and case verdicts separate full passes give otherwise."""
        return check(self.results)

    @cached_property
    def model_ids(self) -> list[str]:
        """The models of the run by their short names, in the order they ran (once: views ask for it per line)."""
        return [m for m in dict.fromkeys(r.model for r in self.results) if m is not None]

    @property
    def cases(self) -> list[CaseResult]:
        """Chapter by chapter, in each chapter file's order."""
        return [case for chapter in self.chapters for case in chapter.cases]

    def counts(self, cases: list[CaseResult] | None = None) -> dict[str, int]:
        counts: dict[str, int] = {}
        for case in self.cases if cases is None else cases:
            counts[case.outcome] = counts.get(case.outcome, 0) + 1
        return counts


@dataclass(frozen=True)
class CanShow:
    """What one chapter's pairs can show, compared across the models that ran it (the claims' last lines): the pairs
    counted under every one of them, the chapter's pairs, the discordant pairs, all one way, that the exact McNemar
    test needs at the run's level before correction, and the smallest difference in pass rate the counted pairs can
    show (None: none at all)."""

    counted: int
    pairs: int
    discordant_needed: int
    smallest_difference: float | None
    families: int  # the clusters the counted pairs fall in: as many as `counted` where no family drew two of them

    @property
    def in_families(self) -> bool:
        """Whether some family drew two counted pairs or more, so that what the chapter can show is said in families
        (the sign-flip test's units)."""
        return self.families < self.counted


@typed
class ChapterSummary:
    """One chapter's rollup for one model, as the JSON states it."""

    chapter: str
    model: str | None
    pairs_passed: int
    pairs_counted: int
    pairs_total: int
    twins: list[TwinResult]
    # The pass count (pairs) and ok count (cases) with their intervals at the run's level; None in older reports.
    pairs_interval: Interval | None = None
    cases_interval: Interval | None = None
    # What the chapter's pairs can show: the smallest difference in pass rate (None: none at all) and the discordant
    # pairs, all one way, the exact McNemar test needs at the level before correction.
    smallest_difference: float | None = None
    discordant_needed: int = 0
    # The paired instances passed with the interval that accounts for the families (results/clustering.py): the
    # pairs_interval's numbers, with clusters = pairs, where no family drew more than one pair; None in older reports.
    # With families, smallest_difference is the sign-flip test's: `discordant_needed` families, all one way.
    pairs_clustered: ClusteredInterval | None = None


@typed
class ReportFile:
    """The JSON document of a report (format FORMAT)."""

    format: int
    run: Invocation
    models: list[ModelInfo]
    chapters: list[ChapterInfo]
    cases: list[CaseResult]
    baselines: list[BaselineOutcome]
    # Computed from the above when written; read back, they are ignored and computed again.
    pairs: list[PairResult] = field(default_factory=list)
    rollups: list[ChapterSummary] = field(default_factory=list)
    comparisons: list[ModelComparison] = field(default_factory=list)
    twin_splits: list[TwinSplit] = field(default_factory=list)  # per chapter with twins and model
    log_ratios: list[LogRatioDifference] = field(default_factory=list)  # per chapter, each two models
    family_shares: list[FamilyShare] = field(default_factory=list)  # per chapter, model and family with instances
    one_pass_check: OnePassCheck | None = None  # only when the runs were checked (--gotchas-one-pass-check)
    effects: list[ChapterEffects] = field(default_factory=list)  # per chapter and model with patched directions

    @model_validator(mode="before")
    @classmethod
    def _current(cls, data: Any) -> Any:
        """A document of an older format migrated to FORMAT; a newer one, or an older one that cannot be migrated,
        refused (results/formats.py). A format-6 report written before `log_ratios` was renamed holds it as
        `margins`: a key no field has, ignored (pydantic's default), and computed again."""
        return migrate(data)


_FILE = TypeAdapter(ReportFile)
_RESULT = TypeAdapter(CaseResult)


def to_file(report: Report) -> ReportFile:
    return ReportFile(FORMAT, report.run, list(report.model_infos), list(report.infos.values()), report.cases,
                      report.baselines, [p for c in report.chapters for p in c.pairs], report.summaries,
                      report.comparisons, report.twin_splits, report.log_ratios, report.family_shares,
                      report.one_pass_check, report.effects)


def to_data(report: Report) -> dict[str, Any]:
    """The report as JSON values (NaN and infinities are refused: they are not JSON)."""
    return _FILE.dump_python(to_file(report), mode="json")


def to_json(report: Report) -> str:
    return json.dumps(to_data(report), indent=1, ensure_ascii=False, allow_nan=False) + "\n"


class NonFiniteNumber(ValueError):
    """JSON values holding a number that is not finite (1e400 reads as infinity): no report can hold it."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path} is not a finite number")
        self.path = path


def from_data(data: Any) -> Report:
    """A report from JSON values (an older format migrated: results/formats.py); raises NonFiniteNumber naming the
    first number out of float range, or pydantic.ValidationError naming the first value that does not fit (a format
    this version cannot read among them). A file is read by results/reading.py, which names it."""
    where = non_finite(data)
    if where is not None:
        raise NonFiniteNumber(where)
    file = _FILE.validate_python(data)
    return Report(file.cases, file.chapters, file.models, file.run, file.baselines)


def inconsistencies(data: dict[str, Any], report: Report, older: bool = False) -> list[Inconsistency]:
    """Every derived field of the document `data` (read into `report` by from_data) that its numbers do not give:
    the verdicts of each case, then (when those hold) each computed section the document states; of a document
    written in an `older` format, each entry's fields only as far as it states them."""
    found = [i for n, result in enumerate(report.results) for i in case_inconsistencies(result, f"cases[{n}]")]
    if found:
        return found  # the computed sections follow from the verdicts: their differences would only repeat these
    written = to_data(report)
    for n, (stored, result) in enumerate(zip(data["cases"], report.results)):
        for path, a, b in _computed_fields(stored, result_to_data(result)):
            found.append(Inconsistency(f"case {result.key}", result.model, f"cases[{n}].{path}", json.dumps(a),
                                       json.dumps(b)))
    for section in COMPUTED_SECTIONS:
        # in an older format, a field of a computed entry that the document does not state was not recorded (format
        # 7's rollups have no pairs_clustered): what it does state must be what its numbers give
        expected = None if section not in data else stated(data[section], written[section]) if older \
            else written[section]
        if section in data and data[section] != expected:
            path, stored, computed = first_difference(section, data[section], expected)
            subject, model = subject_of(section, path, data[section])
            found.append(Inconsistency(subject, model, path, json.dumps(stored), json.dumps(computed)))
    return found


# The fields of a run and of a reading that the JSON states for its readers and a reader computes again.
RUN_COMPUTED = ("verdict", "p_correct", "p_wrong", "coverage", "margin")
READING_COMPUTED = ("coverage", "margin")


def _computed_fields(stored: Any, written: dict[str, Any]) -> Iterator[tuple[str, Any, Any]]:
    """Each computed field of one case's runs and readings whose stored value is not the computed one."""
    runs = stored.get("runs") if isinstance(stored, dict) else None
    for i, (run, fresh) in enumerate(zip(runs if isinstance(runs, list) else [], written["runs"])):
        for key in RUN_COMPUTED:
            if key in run and run[key] != fresh[key]:
                yield f"runs[{i}].{key}", run[key], fresh[key]
        for name, reading in run.get("readings", {}).items():
            for key in READING_COMPUTED:
                if key in reading and reading[key] != fresh["readings"][name][key]:
                    yield f"runs[{i}].readings.{name}.{key}", reading[key], fresh["readings"][name][key]


def result_to_data(result: CaseResult) -> dict[str, Any]:
    """One result as plain values: how it crosses from an xdist worker to the controller."""
    return _RESULT.dump_python(result, mode="json")


def result_from_data(data: Any) -> CaseResult:
    return _RESULT.validate_python(data)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the document, as written (computed fields included, marked readOnly)."""
    schema = _FILE.json_schema(mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"pytest-gotchas report, format {FORMAT}"
    return schema


def schema_text() -> str:
    return json.dumps(json_schema(), indent=1, sort_keys=True) + "\n"
