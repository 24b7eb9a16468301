"""The junit view: each case's verdict and numbers as test properties, so `--junitxml` carries them.

Property names: `verdict`, `p_correct`, `p_wrong`, `coverage`, `margin` for a case run once; a case run under several
primer orders has the case `verdict`, then the same five per run, named `<primer>.verdict`, `<primer>.p_correct` ...
A case that was not scored has `verdict` set to its status (unscored, crash, excluded, skipped). Texts are escaped
(report/escape.py), as the item's messages are where junit carries them (skip reasons, failure texts).
"""

from __future__ import annotations

from ..results.schema import CaseResult
from .escape import escape

NUMBERS = ("p_correct", "p_wrong", "coverage", "margin")


def properties(result: CaseResult) -> list[tuple[str, object]]:
    return [(escape(name), escape(value) if isinstance(value, str) else value) for name, value in _properties(result)]


def _properties(result: CaseResult) -> list[tuple[str, object]]:
    if not result.scored:
        return [("verdict", result.status)]
    props: list[tuple[str, object]] = [("verdict", result.verdict)]
    if len(result.runs) == 1:
        run = result.runs[0]
        props.extend((name, getattr(run, name)) for name in NUMBERS)
        return props
    for n, run in enumerate(result.runs):
        prefix = run.primer or f"run{n + 1}"
        props.append((f"{prefix}.verdict", run.verdict))
        props.extend((f"{prefix}.{name}", getattr(run, name)) for name in NUMBERS)
    return props
