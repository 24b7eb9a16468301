"""Results as scoring builds them, made by hand, the readings of a scored cut, and a JSON report compared across
runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

from pytest_gotchas.results.report import SCHEMA_FILE, Report
from pytest_gotchas.results.schema import CaseResult, ChapterInfo, ModelInfo, Reading, Run, Invocation
from pytest_gotchas.results.verdict import Status, case_verdict, run_verdict
from pytest_gotchas.scoring.readings import Scored
from pytest_gotchas.results.vocabulary import ReadingName


def make_run(p_correct: float, p_wrong: float, primer: str | None = None, kind: str = "plain") -> Run:
    """A run whose token reading is (p_correct, p_wrong), as scoring builds it."""
    reading = Reading(p_correct, p_wrong, run_verdict(p_correct, p_wrong), kind, "bfloat16", ["1"], ["2"])
    return Run(primer=primer, prompt=">>> x\n", correct="1", wrong="2", readings={ReadingName.TOKEN: reading},
               main=ReadingName.TOKEN,
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
    return scored.readings[ReadingName.TOKEN]


def plain(scored: Scored) -> Reading | None:
    return scored.readings.get(ReadingName.PLAIN)


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


# A chapter file of two cases in a pair, and a model, described by hand; report_of makes their report.
SETS_CHAPTER = ChapterInfo(name="sets", label="ch sets", title="sets", path="sets.yaml", implementation_defined=False,
                           case_ids=["a", "b"], pairs={"ab": ["a", "b"]}, twins={}, sha256="c" * 64)
TINY_MODEL = ModelInfo(id="tiny", name="/m/tiny", source="/m/tiny", weights_sha256="a" * 64, dtype="bfloat16",
                       device="cpu", hardware="cpu AVX512", torch_version="2.13.0", transformers_version="5.24.0",
                       numerics="0" * 16, threads=2, bos="auto: <bos>")


def report_of(model: ModelInfo, verdicts: tuple[tuple[float, float], ...] = ((0.75, 0.125), (0.125, 0.75))
              ) -> Report:
    """A report of `model` on SETS_CHAPTER: case a and case b with these (P(correct), P(wrong))."""
    results = [make_case(case_id, "sets", [make_run(*p)], model=model.id) for case_id, p in zip("ab", verdicts)]
    run = Invocation(command="pytest --gotchas", date="2026-12-01T00:00:00+00:00")
    return Report(results, [SETS_CHAPTER], [model], run)


SCHEMA = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


def read_report(path: Path) -> Any:
    """A JSON report a run wrote, validated against results/report.schema.json (subprocess runs' reports: the
    conftest validates only what this process writes)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    jsonschema.validate(data, SCHEMA)
    return data
