"""The JSON view: every number behind the report, in the layout Report.to_dict documents."""

from __future__ import annotations

import json
from pathlib import Path

from ..files import write_atomic
from ..results.report import Report


def write(path: Path, report: Report) -> None:
    write_atomic(path, json.dumps(report.to_dict(), indent=1, ensure_ascii=False) + "\n")


def read(path: Path) -> Report:
    return Report.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
