"""Interpreters at collection: a case whose interpreter is missing is skipped at its own line, saying where the
search looked; --gotchas-python (or the ini option gotchas_python) points at one, and a bad value is a usage
error."""

from __future__ import annotations

import pytest
from helpers.chapters import MISSING, UNSEEDED_SET, line_of
from helpers.interpreters import path_of

PY312_PATH = path_of("3.12")  # found by the package's own Finder; None where missing (then the py312 fixture skips)


def test_missing_interpreter_skips_saying_where_it_looked(pytester: pytest.Pytester, write_chapter) -> None:
    write_chapter(MISSING)
    result = pytester.runpytest("--gotchas", "-rs")
    assert result.parseoutcomes() == {"skipped": 1}
    text = result.stdout.str()
    assert "no working python3.99 found (tried: PATH: no python3.99; " in text
    assert "/versions/3.99.*/bin/python3.99: none; /usr/local/bin/python3.99: does not exist; " in text
    assert ("/usr/bin/python3.99: does not exist); point to one with --gotchas-python "
            "3.99=/path/to/python3.99 or the ini option gotchas_python") in text


def test_missing_interpreter_skip_points_at_the_case(pytester: pytest.Pytester, write_chapter) -> None:
    # BUG in plugin.py (GotchaItem.runtest): `pytest.skip(message)` is reported at the plugin's own line
    # ("SKIPPED [1] .../pytest_gotchas/plugin.py:90: ..."), not at the case. pytest's own skip marks use the item's
    # location (`raise pytest.skip.Exception(message, _use_item_location=True)`, which reads reportinfo()).
    _, text = write_chapter(MISSING)
    result = pytester.runpytest("--gotchas", "-rs")
    skipped = [ln for ln in result.outlines if ln.startswith("SKIPPED [1] ")]
    assert len(skipped) == 1, result.stdout.str()
    assert skipped[0].startswith(f"SKIPPED [1] a.yaml:{line_of(text, '- id: nowhere')}: no working python3.99"), \
        f"the skip is reported at the plugin's own line, not at the case: {skipped[0]!r}"


def test_gotchas_python_of_the_wrong_version_is_rejected(pytester: pytest.Pytester, write_chapter, py312) -> None:
    write_chapter(MISSING)
    result = pytester.runpytest("--gotchas", "-rs", f"--gotchas-python=3.99={py312.path}")
    assert result.parseoutcomes() == {"skipped": 1}
    assert (f"no working python3.99 found (tried: {py312.path}: is Python {py312.version}); point to one with "
            f"--gotchas-python 3.99=/path/to/python3.99 or the ini option gotchas_python") in result.stdout.str()


def test_gotchas_python_is_used(pytester: pytest.Pytester, write_chapter, py312) -> None:
    if py312.path != PY312_PATH:
        pytest.skip(f"python3.12 is not at {PY312_PATH}")
    # the chapter asks for 3.12; point it at the interpreter explicitly (through a symlink, to see it is used)
    link = pytester.path / "bin" / "mypython"
    link.parent.mkdir()
    link.symlink_to(PY312_PATH)
    write_chapter(UNSEEDED_SET)
    result = pytester.runpytest("--gotchas", f"--gotchas-python=3.12={PY312_PATH}")
    assert result.parseoutcomes() == {"unscored": 1}, result.stdout.str()
    reprec = pytester.inline_run("--gotchas", f"--gotchas-python=3.12={link}")
    (report,) = [r for r in reprec.getreports("pytest_runtest_logreport") if r.when == "call"]
    assert report.gotchas[0]["status"] == "unscored"
    assert report.gotchas[0]["interpreter"] == f"{py312.version} {link}"


def test_gotchas_python_that_does_not_exist(pytester: pytest.Pytester, write_chapter) -> None:
    write_chapter(UNSEEDED_SET)
    result = pytester.runpytest("--gotchas", "-rs", "--gotchas-python=3.12=/nonexistent/python3.12")
    assert result.parseoutcomes() == {"skipped": 1}
    assert ("no working python3.12 found (tried: /nonexistent/python3.12: does not exist); point to one with "
            "--gotchas-python 3.12=/path/to/python3.12 or the ini option gotchas_python") in result.stdout.str()


@pytest.mark.parametrize("value", ["3.99", "3.12:/usr/bin/python3.12", "=/usr/bin/python3", "3.12=", "py3.12=/x"])
def test_bad_gotchas_python_value_is_a_usage_error(pytester: pytest.Pytester, value: str) -> None:
    result = pytester.runpytest("--gotchas", f"--gotchas-python={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (f"pytest.main(): error: argument --gotchas-python: expects VERSION=PATH (e.g. 3.12=/usr/bin/python3.12), "
            f"got {value!r}" in result.errlines)


@pytest.mark.parametrize("value", ["3.99", "3.12:/usr/bin/python3.12"])
def test_bad_gotchas_python_in_the_ini_is_a_usage_error(pytester: pytest.Pytester, value: str) -> None:
    pytester.makeini(f"[pytest]\ngotchas = true\ngotchas_python = {value}\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (f"ERROR: ini option gotchas_python expects VERSION=PATH (e.g. 3.12=/usr/bin/python3.12), got {value!r}"
            in result.errlines)
