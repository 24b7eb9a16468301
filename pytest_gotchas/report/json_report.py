"""The JSON view: every fact behind the report, as the versioned document results/report.py defines (its JSON
Schema is results/report.schema.json)."""

from __future__ import annotations

import json
from pathlib import Path

from ..files import write_atomic
from ..results.report import Report, from_data, to_json


def write(path: Path, report: Report) -> None:
    write_atomic(path, to_json(report))


def read(path: Path) -> Report:
    return from_data(json.loads(Path(path).read_text(encoding="utf-8")))
