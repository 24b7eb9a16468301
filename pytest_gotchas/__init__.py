"""pytest-gotchas: probe what a language model knows about program behaviour, one executed transcript per test.

The public face for other plugins and scripts: `read_report(path)` reads a JSON report (--gotchas-json, `gotchas
merge --json`; an older format migrated, a newer one refused by name, UnreadableReport naming the file otherwise) into
a typed `Report`, whose `results` are `CaseResult`s. They are imported on first use, not with the plugin: a pytest
run without --gotchas imports none of the steps.

PYTEST_DONT_REWRITE: the plugin holds no test assertions; without this marker every pytester run in a process
that already imported the plugin warns that it cannot be rewritten, and the warning lands in its outcomes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .results.reading import UnreadableReport, read_report
    from .results.report import Report
    from .results.schema import CaseResult

__version__ = "0.1.0"
__all__ = ["CaseResult", "Report", "UnreadableReport", "read_report"]

_PUBLIC = {"read_report": "reading", "UnreadableReport": "reading", "Report": "report", "CaseResult": "schema"}


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f".results.{_PUBLIC[name]}", __name__), name)
