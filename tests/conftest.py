"""Fixtures that test modules in several folders use: chapter files written into a pytester directory, the
interpreters (each skips the test that needs it where it is missing), and a snippet file. The helpers behind
them are in tests/helpers/."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from helpers.chapters import HEADER, write_chapter_file
from helpers.interpreters import interpreter
from pytest_gotchas.truth.interpreters import Interpreter

pytest_plugins = ["pytester"]


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
