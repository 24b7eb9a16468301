"""Fixtures of the tests of model/."""

from __future__ import annotations

import filelock
import pytest


@pytest.fixture
def no_locks(monkeypatch) -> None:
    """Any lock taken fails the test."""

    class Refused:
        def __init__(self, path: str, *args: object, **kwargs: object) -> None:
            raise AssertionError(f"a lock was taken: {path}")

    monkeypatch.setattr(filelock, "FileLock", Refused)
