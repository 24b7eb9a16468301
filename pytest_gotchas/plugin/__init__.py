"""The pytest face: hooks, collection nodes, fixtures and the two roles of a run (controller, xdist worker).
Registered through the `pytest11` entry point `pytest_gotchas.plugin.hooks`."""

from .warning import GotchasWarning

__all__ = ["GotchasWarning"]
