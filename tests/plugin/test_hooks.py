"""The hooks other plugins implement (plugin/newhooks.py): a conftest gets each case's result and the finished report
as types, the same results the JSON report holds, on the controller only, serially and under `-n 2`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.chapters import PAIR_CHAPTER
from helpers.results import read_report
from helpers.tinymodel import build_tiny_model

pytest.importorskip("transformers")

RULES = {"a": {"7": 2.0, "8": 1.0}, "b": {"7": 1.0, "8": 2.0}}  # a is ok, b a MISS
# A plugin that reads the results as types: every call is logged with the process it ran in, and the assertions on
# the types run in the hooks themselves (a failed one is an internal error of the run).
CONFTEST = """\
import json
import os

from pytest_gotchas import CaseResult, Report


def log(kind, config, **what):
    with open("calls.jsonl", "a") as out:
        out.write(json.dumps({"hook": kind, "worker": hasattr(config, "workerinput"), **what}) + "\\n")


def pytest_gotchas_case_result(result, config):
    assert type(result) is CaseResult
    log("case", config, key=result.key, status=result.status, verdict=result.verdict,
        p=[run.p_correct for run in result.runs])


def pytest_gotchas_report(report, config):
    assert type(report) is Report
    log("report", config, keys=[r.key for r in report.results],
        chapters=[[c.info.name, c.passed, c.counted] for c in report.chapters])
"""


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("hooks") / "model", RULES)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_plugin_gets_each_result_and_the_report_as_types(pytester: pytest.Pytester, model: Path,
                                                          workers: list[str]) -> None:
    pytester.makeconftest(CONFTEST)
    (pytester.path / "demo.yaml").write_text(PAIR_CHAPTER)
    result = pytester.runpytest_subprocess("--gotchas", "--gotchas-model", str(model), "--gotchas-cache-dir",
                                           str(pytester.path / "models"), "--gotchas-json", "out.json", *workers)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    calls = [json.loads(line) for line in (pytester.path / "calls.jsonl").read_text().splitlines()]
    assert not any(call["worker"] for call in calls)  # the controller only
    cases, reports = [c for c in calls if c["hook"] == "case"], [c for c in calls if c["hook"] == "report"]
    assert len(reports) == 1 and calls[-1] is reports[0]  # once, after every case

    written = read_report(pytester.path / "out.json")
    stated = {f"{c['chapter']}/{c['id']}": c for c in written["cases"]}
    assert sorted(c["key"] for c in cases) == sorted(stated)  # each case once (any order under xdist)
    for call in cases:
        case = stated[call["key"]]
        assert (call["status"], call["verdict"], call["p"]) == (case["status"], case["verdict"],
                                                                [run["p_correct"] for run in case["runs"]])
    assert reports[0]["keys"] == list(stated)  # the report's results, in the run's order
    assert reports[0]["chapters"] == [[r["chapter"], r["pairs_passed"], r["pairs_counted"]]
                                      for r in written["rollups"]]


def documented_example() -> str:
    """The conftest docs/report.md shows for the two hooks, as written there."""
    text = (Path(__file__).parents[2] / "docs" / "report.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    [example] = [b for b in blocks if "def pytest_gotchas_case_result" in b]
    return example


@pytest.mark.parametrize("capture", [[], ["-s"]], ids=["captured", "not-captured"])
def test_the_documented_hook_example_prints_lines_of_its_own(pytester: pytest.Pytester, model: Path,
                                                             capture: list[str]) -> None:
    pytester.makeconftest(documented_example())
    (pytester.path / "demo.yaml").write_text(PAIR_CHAPTER)
    result = pytester.runpytest_subprocess("--gotchas", "--gotchas-model", str(model), "--gotchas-cache-dir",
                                           str(pytester.path / "models"), *capture)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    lines = result.stdout.str().splitlines()
    assert "demo/two: MISS" in lines, lines  # a line of its own, not inside the progress line "demo.yaml .M"
    assert "demo model 0/1 pairs" in lines, lines
