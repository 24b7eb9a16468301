"""An interpreter that crashes on a snippet gives a case outcome of its own, crash, with the signal and the
interpreter's exact version, never a ground-truth mismatch; its data reaches the report as plain values."""

from __future__ import annotations

import json

import pytest
from helpers.chapters import describe
from helpers.output import assert_crash_lines

SEGFAULT = """
- id: segfault
  transcript: |-
    $ python -c "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"
    █
  correct: "a"
  wrong: "b"
"""


def test_crash_is_its_own_category_with_signal_and_version(pytester: pytest.Pytester, write_chapter, py312) -> None:
    write_chapter(SEGFAULT)
    result = pytester.runpytest("--gotchas", "-v")
    outcomes = result.parseoutcomes()
    assert outcomes == {"crash": 1}, result.stdout.str()
    assert result.ret == pytest.ExitCode.OK
    assert "a.yaml::segfault CRASH" in result.stdout.str()
    assert_crash_lines(result, "  segfault  crash      the interpreter crashed: killed by SIGSEGV (seed 1)",
                       describe(py312).strip())
    assert "not what Python prints" not in result.stdout.str()


def test_the_category_and_word_cross_xdist_with_the_report(pytester: pytest.Pytester, write_chapter, py312) -> None:
    """The status is decided where the case ran, from its result, and travels on the test report as plain strings."""
    write_chapter(SEGFAULT)
    result = pytester.runpytest("--gotchas", "-v", "-n", "2", "-p", "no:randomly")
    assert result.parseoutcomes() == {"crash": 1}, result.stdout.str()
    assert any("CRASH" in line and "a.yaml::segfault" in line for line in result.outlines), result.stdout.str()


def test_crash_data_in_the_report(pytester: pytest.Pytester, write_chapter, py312) -> None:
    write_chapter(SEGFAULT)
    reprec = pytester.inline_run("--gotchas")
    (report,) = [r for r in reprec.getreports("pytest_runtest_logreport") if r.when == "call"]
    (data,) = report.gotchas
    assert data["status"] == "crash" and data["verdict"] is None
    assert data["interpreter"] == f"{py312.version} {py312.path}"
    assert "killed by SIGSEGV" in data["message"] and f"python {py312.version} at {py312.path}" in data["message"]
    json.dumps(data)  # plain data: it travels from xdist workers to the controller
