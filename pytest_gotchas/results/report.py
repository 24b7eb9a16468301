"""One run's report: the results, their rollups, the run's facts and the baseline comparison, built once.

Every view reads it: the terminal summary, the JSON file (``to_dict``, which ``from_dict`` reads back, so that a
recorded report renders as a page again) and the HTML page.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any

from .pairwise import ModelComparison, compare_models
from .schema import CaseResult, ChapterInfo
from .rollup import ChapterRollup, rollup

FORMAT_VERSION = 2


@dataclass
class Report:
    results: list[CaseResult]
    run: dict[str, Any] = field(default_factory=dict)  # command, date, versions, timings ...
    baselines: list[dict[str, Any]] = field(default_factory=list)  # baseline.gate.Finished.to_dict(), per model

    @cached_property
    def chapters(self) -> list[ChapterRollup]:
        return rollup(self.results)

    @cached_property
    def comparisons(self) -> list[ModelComparison]:
        return compare_models(self.chapters)

    @property
    def model_ids(self) -> list[str]:
        """The models of the run by their short names, in the order they ran."""
        return [m for m in dict.fromkeys(r.model_id for r in self.results) if m is not None]

    @property
    def models(self) -> list[dict[str, Any]]:
        """The model of every scored result, each once, in the order they first appear, with its short name as
        `id` (what items, cases, pairs and chapters name it by)."""
        seen: dict[str, dict[str, Any]] = {}
        for result in self.results:
            key = result.model_id or (result.model or {}).get("name")
            if result.model and key not in seen:
                seen[key] = {"id": key, **result.model}
        return list(seen.values())

    @property
    def model(self) -> dict[str, Any] | None:
        return self.models[0] if self.models else None

    @property
    def cases(self) -> list[CaseResult]:
        """Chapter by chapter, in each chapter file's order."""
        return [case for chapter in self.chapters for case in chapter.cases]

    def counts(self, cases: list[CaseResult] | None = None) -> dict[str, int]:
        counts: dict[str, int] = {}
        for case in self.cases if cases is None else cases:
            counts[case.outcome] = counts.get(case.outcome, 0) + 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        cases = []
        for case in self.cases:
            data = case.to_dict()
            data["chapter"] = case.chapter.name
            data["model"] = data.pop("model_id")  # its description is the entry of `models` with this id
            data["chapter_info"] = asdict(case.chapter)  # what this case's test knew of its chapter
            cases.append(data)
        return {
            "format": FORMAT_VERSION,
            "run": self.run,
            "model": self.model,
            "models": self.models,
            "cases": cases,
            "pairs": [dict(asdict(p), key=p.key) for c in self.chapters for p in c.pairs],
            "chapters": [
                {
                    "model": c.model, "name": c.info.name, "label": c.info.label, "title": c.info.title, "path": c.info.path,
                    "implementation_defined": c.info.implementation_defined, "case_ids": c.info.case_ids,
                    "pair_members": c.info.pairs, "twin_members": c.info.twins,
                    "pairs_passed": c.passed, "pairs_counted": c.counted, "pairs_total": len(c.pairs),
                    "twins": [asdict(t) for t in c.twins], "line": c.line(),
                }
                for c in self.chapters
            ],
            "comparisons": [c.to_dict() for c in self.comparisons],
            "baselines": self.baselines,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Report":
        models = {m["id"]: {k: v for k, v in m.items() if k != "id"} for m in data.get("models") or []}
        results = [CaseResult.from_dict({**{k: v for k, v in case.items() if k != "chapter_info"},
                                         "chapter": ChapterInfo(**case["chapter_info"]),
                                         "model": models.get(case["model"]) if case["status"] == "scored" else None,
                                         "model_id": case["model"]})
                   for case in data["cases"]]
        return cls(results, data.get("run") or {}, data.get("baselines") or [])
