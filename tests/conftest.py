"""Fixtures that test modules in several folders use: chapter files written into a pytester directory, the
interpreters (each skips the test that needs it where it is missing), and a snippet file; and, for every test,
each JSON report written in this process validated against the report's JSON Schema as it is written. The helpers
behind them are in tests/helpers/."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Callable

import jsonschema
import pytest

from helpers.chapters import HEADER, write_chapter_file
from helpers.interpreters import interpreter
# Imported here, in the test process, so that in-process pytester runs (which drop every module first imported
# during the run) share one copy of the plugin's collection modules: otherwise a persisting module holds one
# CaseFileError class and a re-imported one raises another, and a chapter error escapes as a traceback.
import pytest_gotchas.plugin.nodes  # noqa: F401
from pytest_gotchas.report import json_report
from pytest_gotchas.results.report import SCHEMA_FILE, Report
from pytest_gotchas.truth.interpreters import Interpreter

pytest_plugins = ["pytester"]

SCHEMA = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


@pytest.fixture(autouse=True)
def reports_follow_the_schema(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every report the plugin or `gotchas merge` writes in this process (in-process pytester runs included) is
    valid against results/report.schema.json; reports written by subprocess runs are read back by their tests."""
    write = json_report.write

    def validating(path: Path, report: Report) -> None:
        write(path, report)
        jsonschema.validate(json.loads(Path(path).read_text(encoding="utf-8")), SCHEMA)

    monkeypatch.setattr(json_report, "write", validating)
    yield


@pytest.fixture
def write_chapter(pytester: pytest.Pytester) -> Callable[..., tuple[Path, str]]:
    """write_chapter(cases, name="a.yaml", header=HEADER, footer="") -> (path, text)."""

    def write(cases: str, name: str = "a.yaml", header: str = HEADER, footer: str = "") -> tuple[Path, str]:
        return write_chapter_file(pytester.path, cases, name, header, footer)

    return write


@pytest.fixture
def py312() -> Interpreter:
    return interpreter("3.12")


@pytest.fixture
def py313() -> Interpreter:
    return interpreter("3.13")


@pytest.fixture
def py311() -> Interpreter:
    return interpreter("3.11")


@pytest.fixture
def snippet(tmp_path: Path):
    def write(text: str, name: str = "snippet.py") -> str:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return str(path)

    return write
