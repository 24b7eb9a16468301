"""The interpreters the tests run, found and verified by the package's own Finder (truth/interpreters.py), once per
process; a test that needs one that is missing is skipped with the Finder's reason, which says where it looked."""

from __future__ import annotations

import pytest

from pytest_gotchas.truth.interpreters import Finder, Interpreter

_FINDER = Finder()


def interpreter(version: str) -> Interpreter:
    """The verified python`version`, or skip the test that needs it."""
    found = _FINDER.find(version)
    if not isinstance(found, Interpreter):
        pytest.skip(found.reason())
    return found


def path_of(version: str) -> str | None:
    """Where the verified python`version` is, or None where there is none (a test that needs it also asks for
    `interpreter(version)` or its fixture, which skips it then)."""
    found = _FINDER.find(version)
    return found.path if isinstance(found, Interpreter) else None
