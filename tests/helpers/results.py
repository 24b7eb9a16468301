"""Results as scoring builds them, made by hand, the readings of a scored cut, and a JSON report compared across
runs."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_gotchas.results import schema as results
from pytest_gotchas.results.schema import TOKEN, CaseResult, Reading, Run
from pytest_gotchas.results.verdict import Status, case_verdict, run_verdict
from pytest_gotchas.scoring.readings import Scored


def make_run(p_correct: float, p_wrong: float, primer: str | None = None, kind: str = "plain") -> Run:
    """A run whose token reading is (p_correct, p_wrong), as scoring builds it."""
    reading = Reading(p_correct, p_wrong, run_verdict(p_correct, p_wrong), kind, "bfloat16", ["1"], ["2"])
    return Run(primer=primer, prompt=">>> x\n", correct="1", wrong="2", readings={TOKEN: reading}, main=TOKEN,
               top=[], batch_size=1, forward_passes=1)


def make_case(case_id: str, chapter: str, runs: list[Run], status: str = Status.SCORED,
              model: str | None = None) -> CaseResult:
    """A case result with its verdict judged from its runs, as scoring judges it; `chapter` and `model` are the keys
    of their ChapterInfo and ModelInfo."""
    if status != Status.SCORED:
        return CaseResult(id=case_id, chapter=chapter, status=status, verdict=None, model=model)
    judgement = case_verdict([r.judged() for r in runs])
    return CaseResult(id=case_id, chapter=chapter, status=status, verdict=judgement.verdict, runs=runs, model=model,
                      qualifiers=list(judgement.qualifiers))


def token(scored: Scored) -> Reading:
    return scored.readings[results.TOKEN]


def plain(scored: Scored) -> Reading | None:
    return scored.readings.get(results.PLAIN)


def comparable_report(path: Path) -> dict:
    """A JSON report without what a serial and an `-n 2` run may rightly differ in: the run's command and timings,
    each model's thread count (a worker gets its share of the cores; the numerics must not change), and the
    baseline hint (it repeats the command line)."""
    data = json.loads(path.read_text())
    data.pop("run")
    for model in data["models"]:
        model.pop("threads")
    for baseline in data["baselines"]:
        baseline.pop("command")
    return data
