"""The one-pass check (--gotchas-one-pass-check), pure: every reading of a run recomputed with separate full passes,
compared with the one-pass reading it checks.

A run's readings come from one full forward pass per prompt: an earlier position of that pass, or an incremental step
on its KV cache (scoring/readings.py). The check computes every reading again the way it was computed before, one
full pass per context, and keeps it beside the first under the name ``<reading>/separate`` (a reading is named data
of a run, so this needs no new field). Here: which readings differ (any of P(correct), P(wrong), the verdict, the
tokens or contributions shown, the neglected mass) and which case verdicts would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .schema import PRECISION, CaseResult

SUFFIX = "/separate"


def separate(name: str) -> str:
    """The name of reading `name` recomputed with separate full passes."""
    return name + SUFFIX


def is_separate(name: str) -> bool:
    return name.endswith(SUFFIX)


def judged_alone(name: str) -> bool:
    """Whether a reading gives a case verdict of its own in CaseResult.reading_verdicts: not the float32 ones."""
    return name != PRECISION and name != separate(PRECISION)


@dataclass(frozen=True)
class Difference:
    case: str  # the case's key, chapter/id
    model: str | None
    run: str | None  # the run's label (primer, variant), None for a single run
    reading: str
    one_pass: tuple[float, float, str]  # P(correct), P(wrong), verdict
    separate: tuple[float, float, str]

    def text(self, several_models: bool = False) -> str:
        run = f"[{self.run}]" if self.run else ""
        model = f"{self.model}:" if several_models and self.model else ""
        a, b = self.one_pass, self.separate
        verdict = f" {a[2]} -> {b[2]}" if a[2] != b[2] else ""
        return f"{model}{self.case}{run} {self.reading}{verdict}"

    def to_dict(self) -> dict[str, Any]:
        return {"case": self.case, "model": self.model, "run": self.run, "reading": self.reading,
                "one_pass": list(self.one_pass), "separate": list(self.separate)}


@dataclass(frozen=True)
class Check:
    readings: int  # readings compared
    differ: list[Difference]
    cases: int  # case verdicts compared (by the run's own reading)
    verdicts_differ: list[tuple[str, str | None, str, str]]  # (case key, model, one-pass verdict, separate verdict)

    def line(self, several_models: bool = False) -> str:
        """The terminal summary's closing line."""
        by_name: dict[str, int] = {}
        for d in self.differ:
            by_name[d.reading] = by_name.get(d.reading, 0) + 1
        names = ", ".join(f"{name} {n}" for name, n in by_name.items())
        listed = "; ".join(d.text(several_models) for d in self.differ)
        verdicts = ", ".join(f"{f'{m}:' if several_models and m else ''}{key} {a} -> {b}"
                             for key, m, a, b in self.verdicts_differ)
        return (f"one pass checked against separate full passes: {len(self.differ)} of {self.readings} readings "
                f"differ" + (f" ({names}: {listed})" if self.differ else "") + f"; {len(self.verdicts_differ)} of "
                f"{self.cases} case verdicts would differ" + (f": {verdicts}" if verdicts else ""))

    def to_dict(self) -> dict[str, Any]:
        return {"readings": self.readings, "readings_differ": [d.to_dict() for d in self.differ],
                "case_verdicts": self.cases,
                "case_verdicts_differ": [{"case": k, "model": m, "one_pass": a, "separate": b}
                                         for k, m, a, b in self.verdicts_differ]}


def method_line(results: list[CaseResult]) -> str | None:
    """How the runs were read, when some read KV-cached steps: those are the readings the check would recompute."""
    runs = [run for result in results if result.scored for run in result.runs]
    stepped = [run for run in runs if run.incremental_steps]
    if not stepped:
        return None
    return (f"one pass per prompt: {sum(r.forward_passes for r in runs)} full forward passes for {len(runs)} runs; "
            f"{sum(r.incremental_steps for r in stepped)} text-reading contexts in {len(stepped)} runs read as "
            "incremental steps on a pass's KV cache, which can differ from separate passes in their last bits "
            "(--gotchas-one-pass-check lists what differs)")


def check(results: list[CaseResult]) -> Check | None:
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
                    differ.append(Difference(result.key, result.model_id, run.label, name,
                                             (reading.p_correct, reading.p_wrong, reading.verdict),
                                             (again.p_correct, again.p_wrong, again.verdict)))
        main = result.runs[0].main
        if main in result.reading_verdicts and separate(main) in result.reading_verdicts:
            cases += 1
            a, b = result.reading_verdicts[main], result.reading_verdicts[separate(main)]
            if a != b:
                changed.append((result.key, result.model_id, a, b))
    if not compared:
        return None
    return Check(compared, differ, cases, changed)
