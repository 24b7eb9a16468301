"""One run's report: the results, their rollups, the run's facts and the baseline comparison, built once.

Every view reads it: the terminal summary, the JSON file (``to_dict``, which ``from_dict`` reads back, so that a
recorded report renders as a page again) and the HTML page.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any

from ..results import CaseResult, ChapterInfo
from ..rollup import ChapterRollup, rollup

FORMAT_VERSION = 2


@dataclass
class Report:
    results: list[CaseResult]
    run: dict[str, Any] = field(default_factory=dict)  # command, date, versions, timings ...
    baseline: dict[str, Any] | None = None  # baseline.gate.Finished.to_dict()

    @cached_property
    def chapters(self) -> list[ChapterRollup]:
        return rollup(self.results)

    @property
    def models(self) -> list[dict[str, Any]]:
        """The model of every scored result, each once, in the order they first appear."""
        seen: dict[str, dict[str, Any]] = {}
        for result in self.results:
            if result.model and result.model["name"] not in seen:
                seen[result.model["name"]] = result.model
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
            data["model"] = case.model["name"] if case.model else None
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
                    "name": c.info.name, "label": c.info.label, "title": c.info.title, "path": c.info.path,
                    "implementation_defined": c.info.implementation_defined, "case_ids": c.info.case_ids,
                    "pair_members": c.info.pairs, "twin_members": c.info.twins,
                    "pairs_passed": c.passed, "pairs_counted": c.counted, "pairs_total": len(c.pairs),
                    "twins": [asdict(t) for t in c.twins], "line": c.line(),
                }
                for c in self.chapters
            ],
            "baseline": self.baseline,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Report":
        infos = {c["name"]: ChapterInfo(name=c["name"], label=c["label"], title=c["title"], path=c["path"],
                                        implementation_defined=c["implementation_defined"], case_ids=c["case_ids"],
                                        pairs=c["pair_members"], twins=c["twin_members"])
                 for c in data["chapters"]}
        models = {m["name"]: m for m in data.get("models") or []}
        results = []
        for case in data["cases"]:
            values = dict(case, chapter=infos[case["chapter"]], model=models.get(case.get("model")))
            results.append(CaseResult.from_dict(values))
        return cls(results, data.get("run") or {}, data.get("baseline"))
