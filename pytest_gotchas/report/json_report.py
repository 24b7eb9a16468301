"""The JSON view: every fact behind the report, as the versioned document results/report.py defines (its JSON
Schema is results/report.schema.json). results/reading.py reads it back."""

from __future__ import annotations

from pathlib import Path

from ..files import write_atomic
from ..results.report import Report, to_json


def write(path: Path, report: Report) -> None:
    write_atomic(path, to_json(report))
