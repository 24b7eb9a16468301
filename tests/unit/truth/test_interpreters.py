"""Finder's kept answers (truth/interpreters.py): an interpreter an earlier run verified is not started again while
its file is the same; a changed file, a shim and a rejected candidate are probed every time."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_gotchas.truth import interpreters
from pytest_gotchas.truth.interpreters import Finder, Interpreter


@pytest.fixture
def probed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """probe() without running anything: every path answers Python 3.12.1, and is listed."""
    calls: list[str] = []

    def fake(path: str, timeout: float = 10.0) -> Interpreter | str:
        calls.append(path)
        return Interpreter(version="3.12.1", path=str(Path(path).absolute()), implementation="CPython")

    monkeypatch.setattr(interpreters, "probe", fake)
    return calls


def binary(folder: Path, name: str = "python3.12") -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    return path


def test_a_verified_interpreter_is_not_started_again_while_its_file_is_the_same(tmp_path: Path, probed) -> None:
    python, known = binary(tmp_path / "bin"), tmp_path / "cache" / "interpreters.json"
    first = Finder(overrides={"3.12": str(python)}, known=known).find("3.12")
    assert Finder(overrides={"3.12": str(python)}, known=known).find("3.12") == first
    assert probed == [str(python)]  # the second run read the first's answer
    assert isinstance(first, Interpreter) and first.version == "3.12.1"
    os.utime(python, ns=(1, 1))  # another file now: probed again
    assert Finder(overrides={"3.12": str(python)}, known=known).find("3.12") == first
    assert probed == [str(python)] * 2


def test_a_shim_is_probed_every_time(tmp_path: Path, probed) -> None:
    shim, known = binary(tmp_path / "shims"), tmp_path / "interpreters.json"
    for _ in range(2):
        Finder(overrides={"3.12": str(shim)}, known=known).find("3.12")
    assert probed == [str(shim)] * 2 and not known.exists()


def test_a_damaged_file_of_answers_is_probed_around(tmp_path: Path, probed) -> None:
    python, known = binary(tmp_path / "bin"), tmp_path / "interpreters.json"
    known.write_text(json.dumps({str(python): {"identity": 3, "version": "9.9.9"}}))
    found = Finder(overrides={"3.12": str(python)}, known=known).find("3.12")
    assert isinstance(found, Interpreter) and found.version == "3.12.1" and probed == [str(python)]
