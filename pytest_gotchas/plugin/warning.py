"""The plugin's one warning category."""

from __future__ import annotations

import pytest


class GotchasWarning(pytest.PytestWarning):
    """Ground truth differs on this interpreter in an implementation-defined chapter, a model's convention looks
    wrong, or the cache cannot be written. (`-W error::pytest_gotchas.plugin.GotchasWarning` turns them into
    errors.)"""
