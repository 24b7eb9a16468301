"""The hooks other plugins implement (plugin/newhooks.py): a conftest gets each case's result and the finished report
as types, the same results the JSON report holds, on the controller only, serially and under `-n 2`."""

from __future__ import annotations

import json
import linecache
from pathlib import Path

import pytest
from helpers.chapters import PAIR_CHAPTER
from helpers.results import read_report
from helpers.tinymodel import build_tiny_model

from pytest_gotchas.cli import main
from pytest_gotchas.plugin import newhooks

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


# -- hostile plugins (issue 50, items 4 and 8) -------------------------------------------------------------------

THREE_CASES = PAIR_CHAPTER.replace("pairs:", """\
  - id: three
    transcript: |-
      >>> print("a7")
      a█
    correct: "7"
    wrong: "8"
pairs:""")
RAISES = """\
def pytest_gotchas_case_result(result, config):
    raise ValueError(f"no {result.key}")
"""
RAISES_ON_REPORT = """\
def pytest_gotchas_report(report, config):
    raise RuntimeError("the report is not welcome")
"""
# A plugin that rewrites what it is given: b's MISS as an ok at P(correct) 1e-8, and the report's results dropped.
MUTATES = """\
def pytest_gotchas_case_result(result, config):
    result.verdict = "ok"
    for run in result.runs:
        for reading in run.readings.values():
            reading.p_correct, reading.verdict = 1e-8, "ok"


def pytest_gotchas_report(report, config):
    report.results.clear()
    report.baselines.clear()
"""


def run_demo(pytester: pytest.Pytester, model: Path, conftest: str, *args: str) -> pytest.RunResult:
    pytester.makeconftest(conftest)
    (pytester.path / "demo.yaml").write_text(THREE_CASES)
    return pytester.runpytest_subprocess("--gotchas", "--gotchas-model", str(model), "--gotchas-cache-dir",
                                         str(pytester.path / "models"), "--gotchas-json", "out.json", *args)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_case_result_hook_that_raises_is_named_and_every_result_recorded(pytester: pytest.Pytester, model: Path,
                                                                          workers: list[str]) -> None:
    """It stopped the session with INTERNALERROR after the first item, and the JSON held 1 of 3 cases."""
    result = run_demo(pytester, model, RAISES, *workers)
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR, output
    assert "INTERNALERROR" not in output
    assert len(read_report(pytester.path / "out.json")["cases"]) == 3
    conftest = pytester.path / "conftest.py"
    result.stdout.fnmatch_lines([
        "*= gotchas =*",
        f"gotchas: pytest_gotchas_case_result of plugin {conftest} raised ValueError: no demo/* at {conftest}:2 "
        "(given demo/*, and 2 more times after); every result was still recorded and the reports written, and the "
        "run fails: fix the plugin or remove it",
        "*2 ok* in *"])


def test_a_report_hook_that_raises_leaves_the_summary_and_the_result_line(pytester: pytest.Pytester,
                                                                          model: Path) -> None:
    """It printed a bare traceback, and neither the summary nor pytest's result line."""
    result = run_demo(pytester, model, RAISES_ON_REPORT)
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR, output
    assert "Traceback" not in output and "INTERNALERROR" not in output
    conftest = pytester.path / "conftest.py"
    result.stdout.fnmatch_lines([
        "*= gotchas =*",
        "two models: 0/1 pairs *",
        f"gotchas: pytest_gotchas_report of plugin {conftest} raised RuntimeError: the report is not welcome at "
        f"{conftest}:2 (given the report); every result was still recorded and the reports written, and the run "
        "fails: fix the plugin or remove it",
        "*2 ok* in *"])


def test_a_hook_that_changes_what_it_is_given_changes_no_report_and_no_baseline(pytester: pytest.Pytester,
                                                                               model: Path) -> None:
    """A case hook's MISS turned ok at P(correct) 1e-8 went into the JSON and the recorded baseline (and merge then
    refused that very report as inconsistent); each hook now gets its own copy."""
    clean = run_demo(pytester, model, "", "--gotchas-baseline", "clean.yaml", "--gotchas-update-baseline")
    assert clean.ret == pytest.ExitCode.OK, clean.stdout.str()
    want = read_report(pytester.path / "out.json")
    result = run_demo(pytester, model, MUTATES, "--gotchas-baseline", "hooked.yaml", "--gotchas-update-baseline")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    got = read_report(pytester.path / "out.json")
    assert [(c["id"], c["verdict"], c["runs"][0]["p_correct"]) for c in got["cases"]] == [
        (c["id"], c["verdict"], c["runs"][0]["p_correct"]) for c in want["cases"]]
    assert "MISS" in [c["verdict"] for c in got["cases"]]
    assert got["pairs"] == want["pairs"]
    clean_baseline = (pytester.path / "clean.yaml").read_text().splitlines()
    hooked_baseline = (pytester.path / "hooked.yaml").read_text().splitlines()
    assert [line for line in hooked_baseline if "demo/" in line] == [line for line in clean_baseline
                                                                      if "demo/" in line]
    result.stdout.fnmatch_lines(["*= gotchas =*", "  two    MISS *", "two models: 0/1 pairs *"])  # the summary too
    assert main(["merge", "out.json"]) == 0  # the very report merge refused as inconsistent


class Keeps:
    def __init__(self) -> None:
        self.seen: list[list[int]] = []

    @pytest.hookimpl
    def pytest_gotchas_case_result(self, result, config):
        self.seen.append(result)


class Changes:
    @pytest.hookimpl
    def pytest_gotchas_case_result(self, result):
        result.append(99)


class Raises:
    @pytest.hookimpl
    def pytest_gotchas_case_result(self, result, config):
        raise KeyError(len(result))


class Wraps:
    @pytest.hookimpl(wrapper=True)
    def pytest_gotchas_case_result(self, result, config):
        yield
        raise OSError("after")


def test_call_each_gives_each_implementation_its_own_copy_and_names_the_one_that_raised() -> None:
    manager = pytest.PytestPluginManager()
    manager.add_hookspecs(newhooks)
    first, second = Keeps(), Keeps()
    for name, plugin in (("first", first), ("changes", Changes()), ("raises", Raises()), ("second", second)):
        manager.register(plugin, name)
    given = [1, 2]
    failures = newhooks.call_each(manager.hook.pytest_gotchas_case_result, "demo/one", {"result": given}, config=None)
    assert given == [1, 2] and first.seen == [[1, 2]] and second.seen == [[1, 2]]  # after `changes` and `raises`
    assert [(f.hook, f.plugin, f.error, f.subject, f.times) for f in failures] == [
        ("pytest_gotchas_case_result", "raises", "KeyError: 2", "demo/one", 1)]
    file, line = failures[0].where.rsplit(":", 1)
    assert file == __file__ and "raise KeyError" in linecache.getline(file, int(line))

    manager.register(Wraps(), "wraps")  # a wrapper needs pluggy's own call: one copy, the raiser found on the traceback
    failures = newhooks.call_each(manager.hook.pytest_gotchas_case_result, "demo/two", {"result": given}, config=None)
    assert given == [1, 2] and [(f.plugin, f.error) for f in failures] == [("raises", "KeyError: 2")]
