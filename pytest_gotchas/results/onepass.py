"""The one-pass check (--gotchas-one-pass-check), pure: every reading of a run recomputed with separate full passes,
compared with the one-pass reading it checks.

A run's readings come from one full forward pass per prompt: an earlier position of that pass, or an incremental step
on its KV cache (scoring/readings.py). The check computes every reading again the way it was computed before, one
full pass per context, and keeps it beside the first under the name ``<reading>/separate`` (a reading is named data
of a run, so this needs no new field). Here, as facts (the sentences are report/wording.py's): which readings differ
(any of P(correct), P(wrong), the verdict, the tokens or contributions shown, the neglected mass), which case
verdicts would, and how many readings came from KV-cached steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field

from .schema import CaseResult, ModelInfo, Reading
from .typed import dataclass
from .vocabulary import ReadingName, TextPath

SUFFIX = "/separate"


def separate(name: str) -> str:
    """The name of reading `name` recomputed with separate full passes."""
    return name + SUFFIX


def is_separate(name: str) -> bool:
    return name.endswith(SUFFIX)


def judged_alone(name: str) -> bool:
    """Whether a reading gives a case verdict of its own in CaseResult.reading_verdicts: not the float32 ones."""
    return name != ReadingName.PRECISION and name != separate(ReadingName.PRECISION)


@dataclass(frozen=True)
class ReadingDifference:
    """One reading of one run that separate full passes give otherwise."""

    case: str  # the case's key, chapter/id
    model: str | None
    run: str | None  # the run's label (primer, variant), None for a single run
    reading: str
    one_pass: Reading
    separate: Reading


@dataclass(frozen=True)
class VerdictDifference:
    """A case verdict (by the runs' own reading) that separate full passes would change."""

    case: str
    model: str | None
    one_pass: str
    separate: str


@dataclass(frozen=True)
class OnePassCheck:
    """Every checked reading and case verdict against its separate-pass twin."""

    readings: int  # readings compared
    readings_differ: list[ReadingDifference]
    case_verdicts: int  # case verdicts compared (by the run's own reading)
    case_verdicts_differ: list[VerdictDifference]


@dataclass(frozen=True)
class TextPathOf:
    """How one model computed the text reading's contexts on a KV cache (ModelInfo's; None: not recorded)."""

    model: str | None
    text_path: TextPath | None
    attention: str


@dataclass(frozen=True)
class Stepped:
    """How the runs were read, when some read KV-cached steps: those are the readings the check would recompute."""

    forward_passes: int  # full passes, over every scored run
    runs: int  # scored runs
    steps: int  # contexts computed on a KV cache (one call each, or a tree's nodes)
    stepped_runs: int  # runs with at least one step
    paths: list[TextPathOf] = field(default_factory=list)  # each model with such runs, in the report's order


def stepped(results: list[CaseResult], models: Sequence[ModelInfo] = ()) -> Stepped | None:
    runs = [run for result in results if result.scored for run in result.runs]
    with_steps = [run for run in runs if run.incremental_steps]
    if not with_steps:
        return None
    ids = {result.model for result in results if result.scored and any(r.incremental_steps for r in result.runs)}
    paths = [TextPathOf(m.id, m.text_path, m.attention) for m in models if m.id in ids]
    return Stepped(sum(r.forward_passes for r in runs), len(runs), sum(r.incremental_steps for r in with_steps),
                   len(with_steps), paths)


def check(results: list[CaseResult]) -> OnePassCheck | None:
    """The comparison over every run that was checked; None when none was."""
    compared, differ, cases, changed = 0, [], 0, []
    for result in results:
        runs = [run for run in result.runs if any(is_separate(name) for name in run.readings)]
        if not result.scored or not runs:
            continue
        for run in runs:
            for name, reading in run.readings.items():
                again = run.readings.get(separate(name))
                if is_separate(name) or again is None:
                    continue
                compared += 1
                if reading != again:
                    differ.append(ReadingDifference(result.key, result.model, run.label, name, reading, again))
        main = result.runs[0].main
        if main in result.reading_verdicts and separate(main) in result.reading_verdicts:
            cases += 1
            a, b = result.reading_verdicts[main], result.reading_verdicts[separate(main)]
            if a != b:
                changed.append(VerdictDifference(result.key, result.model, a, b))
    if not compared:
        return None
    return OnePassCheck(compared, differ, cases, changed)
