"""The project's own chapters (cases/*.yaml) through the plugin: the write-up's 36 cases are listed, every case's
ground truth holds on this machine's interpreters, and ch.4's python3.13 case is a crash where that interpreter
crashes, never a refusal."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml
from helpers import CASES_DIR, SPEC_CHAPTERS
from helpers.interpreters import interpreter
from helpers.output import assert_crash_lines

from pytest_gotchas.cases.chapter import load_chapter


def _real_case_ids() -> list[str]:
    ids = []
    for path in sorted(CASES_DIR.glob("*.yaml")):
        ids += [f"cases/{path.name}::{case.id}" for case in load_chapter(path).cases]
    return ids


def test_real_cases_are_all_listed(pytester: pytest.Pytester) -> None:
    """The spec's 36 cases (35 scored, one unscored), whatever chapters the project adds beside them."""
    (pytester.path / "cases").mkdir()
    for name in SPEC_CHAPTERS:
        shutil.copy(CASES_DIR / name, pytester.path / "cases")
    # No interpreter is needed to list them: point every version at a program that is not Python.
    missing = [f"--gotchas-python={v}=/bin/false" for v in ("3.11", "3.12", "3.13")]
    result = pytester.runpytest("--gotchas", "--collect-only", "-q", "cases", *missing)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    listed = [ln for ln in result.outlines if "::" in ln]
    assert len(listed) == 36
    assert listed == [i for i in _real_case_ids() if i.split("/")[1].split("::")[0] in SPEC_CHAPTERS]
    assert "36 tests collected" in result.stdout.str()


CHUNK = 4  # cases per ground-truth test, to keep each test fast


def _chunks() -> list[tuple[str, int]]:
    return [(path.name, start) for path in sorted(CASES_DIR.glob("*.yaml"))
            for start in range(0, len(load_chapter(path).cases), CHUNK)]


@pytest.mark.parametrize("name, start", _chunks(), ids=lambda v: str(v))
def test_real_chapter_ground_truth_holds(pytester: pytest.Pytester, name: str, start: int) -> None:
    """The real cases' prompts, correct and wrong agree with the interpreters on this machine (a few cases at a
    time, two runs each, to stay fast; ch.4's 3.13 case is a crash here, never a refusal)."""
    for version in ("3.11", "3.12", "3.13"):
        interpreter(version)
    data = yaml.safe_load((CASES_DIR / name).read_text(encoding="utf-8"))
    data["cases"] = data["cases"][start:start + CHUNK]
    data.pop("pairs", None), data.pop("twins", None), data.pop("families", None)
    pytester.path.joinpath(name).write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False),
                                            encoding="utf-8")
    result = pytester.runpytest("--gotchas", "--collect-only", "-q", "--gotchas-runs", "2")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert [ln for ln in result.outlines if "::" in ln] == [f"{name}::{case['id']}" for case in data["cases"]]


def _segfaults(py) -> bool:
    snippet = "def f():\n    lambda: k\n    k = 1\n    print([locals() for k in [0]])\nf()"
    return subprocess.run([py.path, "-c", snippet], capture_output=True).returncode == -11


def test_real_chapter4_crashes_under_python313(pytester: pytest.Pytester, py313) -> None:
    if not _segfaults(py313):
        pytest.skip(f"python {py313.version} does not segfault on the ch.4 snippet here")
    shutil.copy(CASES_DIR / "4-versions.yaml", pytester.path)
    result = pytester.runpytest("--gotchas", "-v", "-k", "locals-py313")
    assert result.parseoutcomes() == {"crash": 1, "deselected": 2}, result.stdout.str()
    assert_crash_lines(result, "  locals-py313  crash      the interpreter crashed: killed by SIGSEGV (seed 1)",
                       f"(python {py313.version} at {py313.path}; no variables set; 3 runs)")
