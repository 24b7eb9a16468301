"""The JSON view: every number behind the report, and the one source the HTML page is rendered from."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..files import write_atomic
from ..results import CaseResult
from ..rollup import rollup

FORMAT_VERSION = 1


def build(results: list[CaseResult], meta: dict[str, Any]) -> dict[str, Any]:
    """`meta`: run-level facts (command line, date, pytest version ...); the model comes from the results."""
    chapters = rollup(results)
    model = next((r.model for r in results if r.model), None)
    cases = []
    for chapter in chapters:
        for case in chapter.cases:
            data = case.to_dict()
            data["chapter"] = case.chapter.name
            data.pop("model")
            cases.append(data)
    return {
        "format": FORMAT_VERSION,
        "run": meta,
        "model": model,
        "cases": cases,
        "pairs": [dict(asdict(p), key=p.key) for c in chapters for p in c.pairs],
        "chapters": [
            {
                "name": c.info.name, "label": c.info.label, "title": c.info.title, "path": c.info.path,
                "implementation_defined": c.info.implementation_defined,
                "pairs_passed": c.passed, "pairs_counted": c.counted, "pairs_total": len(c.pairs),
                "twins": [asdict(t) for t in c.twins], "line": c.line(),
            }
            for c in chapters
        ],
    }


def write(path: Path, data: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
