"""Shared helpers: write chapter files into a pytester directory, find line numbers, find interpreters."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable

import pytest

from pytest_gotchas.truth.interpreters import Finder, Interpreter
from pytest_gotchas.results.schema import TOKEN, CaseResult, Reading, Run
from pytest_gotchas.results.verdict import Status, case_verdict, run_verdict

pytest_plugins = ["pytester"]

# The test modules import these helpers as `gotchas_helpers`: `import conftest` could name the rootdir's conftest.
sys.modules.setdefault("gotchas_helpers", sys.modules[__name__])

REPO = Path(__file__).resolve().parent.parent
CASES_DIR = REPO / "cases"
PY312_PATH = "/root/.pyenv/versions/3.12.1/bin/python3.12"

# A chapter header; the cases follow under `cases:` (line 5 is the first case line).
HEADER = """\
chapter: demo
title: "demo chapter"
interpreter: "3.12"
cases:
"""


def chapter_text(cases: str, header: str = HEADER, footer: str = "") -> str:
    """A chapter file: `cases` is the YAML list under `cases:` written at column 0 (it is indented here)."""
    body = textwrap.indent(textwrap.dedent(cases).strip("\n"), "  ") + "\n"
    return header + body + textwrap.dedent(footer)


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """1-based line of the nth line of `text` that contains `needle`."""
    hits = [n for n, line in enumerate(text.split("\n"), start=1) if needle in line]
    assert len(hits) >= nth, f"{needle!r} occurs {len(hits)} times in\n{text}"
    return hits[nth - 1]


@pytest.fixture
def write_chapter(pytester: pytest.Pytester) -> Callable[..., tuple[Path, str]]:
    """write_chapter(cases, name="a.yaml", header=HEADER, footer="") -> (path, text)."""

    def write(cases: str, name: str = "a.yaml", header: str = HEADER, footer: str = "") -> tuple[Path, str]:
        text = chapter_text(cases, header, footer)
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path, text

    return write


_FINDER = Finder()


def interpreter(version: str) -> Interpreter:
    """The verified python`version`, or skip the test that needs it."""
    found = _FINDER.find(version)
    if not isinstance(found, Interpreter):
        pytest.skip(found.reason())
    return found


@pytest.fixture
def py312() -> Interpreter:
    return interpreter("3.12")


@pytest.fixture
def py313() -> Interpreter:
    return interpreter("3.13")


@pytest.fixture
def py311() -> Interpreter:
    return interpreter("3.11")


def output_lines(result: pytest.RunResult) -> list[str]:
    return result.outlines + result.errlines


def assert_block(result: pytest.RunResult, block: str | list[str]) -> None:
    """The lines of `block` (dedented, or a list of lines taken as they are) appear in the output exactly, one
    after the other."""
    want = textwrap.dedent(block).strip("\n").split("\n") if isinstance(block, str) else block
    lines = output_lines(result)
    for start in range(len(lines) - len(want) + 1):
        if lines[start:start + len(want)] == want:
            return
    shown = "\n".join(lines)
    pytest.fail("these lines were not found together in the output:\n" + "\n".join(want) + f"\n--- output ---\n{shown}",
                pytrace=False)


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


CHROMIUM = shutil.which("chromium")


def screenshot(page: Path, shot: Path, profile: Path) -> subprocess.CompletedProcess:
    """Headless Chromium's screenshot of a page file, offline (nothing fetched, no first-run work)."""
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )


def comparable_report(path: Path) -> dict:
    """A JSON report without what a serial and an `-n 2` run may rightly differ in: the run's command and timings,
    each model's thread count (a worker gets its share of the cores; the numerics must not change), and the
    baseline hint (it repeats the command line)."""
    data = json.loads(path.read_text())
    data.pop("run")
    for model in [*data["models"], data["model"]]:
        model.pop("threads")
    for baseline in data["baselines"]:
        baseline.pop("lines")
    return data
