"""The user-facing errors every floor may raise and every roof shows as its message alone, never as a traceback
(plugin/nodes.py, plugin/probe.py, the command-line tools). Floor 0: it imports nothing of the package."""

from __future__ import annotations


class GotchasError(Exception):
    """A user-facing error: shown as its message alone, never as a traceback."""


class ModelUnavailable(GotchasError):
    """The model could not be loaded: the run stops after the first case that needed it."""
