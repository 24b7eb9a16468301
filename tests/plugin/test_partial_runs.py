"""A run that stops before every selected item ran (Ctrl-C, --maxfail) says so: its JSON's `run` records the exit
status, that it was interrupted, what stopped it and the items that never ran, and the summary and the page open with
the same sentence (report/wording_run.py). A whole run records that it was not interrupted."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.chapters import REFUSED_BETWEEN, REFUSED_BETWEEN_RULES
from helpers.results import read_report
from helpers.tinymodel import build_tiny_model

CASES, RULES = REFUSED_BETWEEN, REFUSED_BETWEEN_RULES
# Ctrl-C as the first item finishes, the way a user's would land between two cases.
CTRL_C = """
def pytest_runtest_logfinish(nodeid, location):
    raise KeyboardInterrupt
"""


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", RULES)


def run(pytester: pytest.Pytester, model: Path, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "--rootdir", str(pytester.path), "--gotchas", "--gotchas-model", str(model), "--gotchas-cache-dir",
        str(pytester.path / "cache"), "-p", "no:randomly", "--gotchas-json=out.json", "--gotchas-html=out.html", *args)


def test_ctrl_c_after_the_first_item_is_recorded_and_shown(pytester: pytest.Pytester, write_chapter, model: Path,
                                                          py312) -> None:
    write_chapter(CASES)
    pytester.makeconftest(CTRL_C)
    result = run(pytester, model)
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    run_data = read_report(pytester.path / "out.json")["run"]
    assert (run_data["exit_status"], run_data["interrupted"], run_data["stopped_by"], run_data["not_run"]) == (
        2, True, "KeyboardInterrupt", ["a.yaml::bad", "a.yaml::plus"])
    said = ("partial run: stopped (KeyboardInterrupt) before 2 selected items ran, exit status 2; its counts, rollups "
            "and claims are of the items that ran only")
    assert said in result.outlines  # the summary's first line
    page = (pytester.path / "out.html").read_text(encoding="utf-8")
    assert f'<div class="partial" role="alert"><p><strong>{said}</strong></p>' in page
    assert "<summary>2 items never ran</summary>" in page and "<li><code>a.yaml::plus</code></li>" in page


def test_maxfail_records_what_stopped_the_run(pytester: pytest.Pytester, write_chapter, model: Path, py312) -> None:
    write_chapter(CASES)
    result = run(pytester, model, "--maxfail=1")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    run_data = read_report(pytester.path / "out.json")["run"]
    assert (run_data["exit_status"], run_data["interrupted"], run_data["stopped_by"], run_data["not_run"]) == (
        1, True, "stopping after 1 failures", ["a.yaml::plus"])
    assert ("partial run: stopped (stopping after 1 failures) before 1 selected item ran, exit status 1; its counts, "
            "rollups and claims are of the items that ran only") in result.outlines


def test_a_whole_run_is_not_marked(pytester: pytest.Pytester, write_chapter, model: Path, py312) -> None:
    write_chapter(CASES)
    result = run(pytester, model, "-k", "not bad")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    run_data = read_report(pytester.path / "out.json")["run"]
    assert (run_data["exit_status"], run_data["interrupted"], run_data["stopped_by"], run_data["not_run"]) == (
        0, False, None, [])
    assert "partial run" not in result.stdout.str()
    assert 'class="partial"' not in (pytester.path / "out.html").read_text(encoding="utf-8")
