"""The HTML view: one self-contained page rendered from a Report with Jinja2 templates (autoescaped).

The page has inline CSS only (templates/report.css): no scripts, fonts, images or any other fetch, so it opens
offline and can be mailed around as one file. The templates compute no verdict, pair or count of their own: they
show what the Report holds.

A report of several models is laid out by chapter, not by rollup: `ChapterGroup` puts the rollups of one chapter
(one per model) side by side, so that each case is shown once with one bar per model, each pair once with its state
per model, and the summary is a chapters x models matrix of pairs passed beside the per-chapter comparisons.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from .. import __version__
from ..files import write_atomic
from ..results.baselines import BaselineOutcome
from ..results.report import FORMAT, Report
from ..results.rollup import ChapterRollup, PairResult, TwinResult
from ..results.schema import CaseResult, ChapterInfo, Run
from ..results.verdict import NOISE_FLOOR, Status, Verdict
from .terminal import NEGLIGIBLE, layer_note
from .wording import chapter_line, comparison_outcome, outcome_lines

CURSOR = "\u2588"  # █, where the model must continue
# Outcomes in the order the summary lists them: the verdicts, then the reasons a case was not scored.
KEYS = (*map(str, Verdict), "crash", "unscored", "excluded", "skipped")
CUT_LABELS = {"healed": "healed cut", "chain": "multi-token cut"}
CUT_WHY = {
    "healed": "the tokenizer merges the text before the cut with the candidates, so the model is read where the "
              "merged tokens start",
    "chain": "from the shared context a candidate takes several tokens; its probability is the product along its "
             "chain",
}


def pct(p: float | None) -> str:
    return "\u2013" if p is None else f"{p * 100:.2f}%"


def width(p: float | None) -> str:
    return f"{min(max(p or 0.0, 0.0), 1.0) * 100:.3f}%"


def shared_tail(runs: list[Run]) -> int:
    """How many trailing lines every primed prompt shares: the case itself; the lines above it are the primer."""
    split = [run.prompt.split("\n") for run in runs]
    n = 0
    while all(len(s) > n for s in split) and len({s[len(s) - 1 - n] for s in split}) == 1:
        n += 1
    return n


def prompt_parts(text: str, tail: int | None) -> tuple[str, str]:
    """(the primer's lines, the case's own lines) of a prompt; the first is empty when nothing is primed."""
    lines = text.split("\n")
    if tail is not None and 0 < tail < len(lines):
        return "\n".join(lines[:len(lines) - tail]) + "\n", "\n".join(lines[len(lines) - tail:])
    return "", text


def interpreters(cases: list[CaseResult]) -> str:
    return ", ".join(sorted({str(c.interpreter).split()[0] for c in cases if c.interpreter}))


@dataclass
class ChapterGroup:
    """One chapter under every model of the report: its rollups by model (a model that did not run it has none)."""

    info: ChapterInfo
    models: list[str]  # every model of the report, in the order they ran
    rollups: dict[str, ChapterRollup]

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def case_ids(self) -> list[str]:
        """Every case any model has, in the chapter file's order."""
        order = {case_id: n for n, case_id in enumerate(self.info.case_ids)}
        ids = dict.fromkeys(c.id for r in self.rollups.values() for c in r.cases)
        return sorted(ids, key=lambda i: order.get(i, len(order)))

    def row(self, case_id: str) -> list[tuple[str, CaseResult | None]]:
        """(model, its result of the case, or None) for every model."""
        return [(m, next((c for c in r.cases if c.id == case_id), None) if (r := self.rollups.get(m)) else None)
                for m in self.models]

    def pair_rows(self) -> list[tuple[str, list[str], list[tuple[str, PairResult | None]]]]:
        """(pair id, members, [(model, its pair result, or None)]) for every pair any model's rollup has."""
        return self._rows("pairs")

    def twin_rows(self) -> list[tuple[str, list[str], list[tuple[str, TwinResult | None]]]]:
        """(twin id, members, [(model, its twin result, or None)]) for every twin any model's rollup has."""
        return self._rows("twins")

    def _rows(self, kind: str) -> list[tuple[str, list[str], list[tuple[str, Any]]]]:
        """The pairs or the twins of every model's rollup, by id in first-seen order, one cell per model."""
        found: dict[str, dict[str, Any]] = {}
        for model, rollup in self.rollups.items():
            for item in getattr(rollup, kind):
                found.setdefault(item.id, {})[model] = item
        return [(item_id, next(iter(by_model.values())).members, [(m, by_model.get(m)) for m in self.models])
                for item_id, by_model in found.items()]

    @property
    def cases(self) -> list[CaseResult]:
        """Every model's results of the chapter."""
        return [c for r in self.rollups.values() for c in r.cases]


def chapter_groups(report: Report) -> list[ChapterGroup]:
    """The report's rollups grouped by chapter, chapters in the rollups' order."""
    grouped: dict[str, dict[str | None, ChapterRollup]] = {}
    for rollup in report.chapters:
        grouped.setdefault(rollup.info.name, {})[rollup.model] = rollup
    models = report.model_ids
    groups = []
    for rollups in grouped.values():
        first = next(iter(rollups.values()))
        groups.append(ChapterGroup(first.info, models, {m: r for m, r in rollups.items() if m is not None}))
    return groups


def shared_prompts(cases: list[CaseResult]) -> bool:
    """Whether every model was shown the same prompts (the transcripts do not depend on the model)."""
    prompts = {tuple((r.primer, r.prompt) for r in c.runs) for c in cases}
    return len(prompts) == 1


def model_cases(report: Report, model: str) -> list[CaseResult]:
    return [c for c in report.cases if c.model == model]


def fact(obj: Any, name: str) -> Any:
    """A field of a description that may be missing (no model scored, a run section without it): None then."""
    return None if obj is None else getattr(obj, name, None)


def baseline_lines(outcome: BaselineOutcome) -> list[str]:
    return [text.strip() for text, _ in outcome_lines(outcome) if text.strip()]


@cache
def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("pytest_gotchas.report", "templates"),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined)
    env.filters.update(pct=pct, width=width, token=repr)
    env.globals.update(CURSOR=CURSOR, KEYS=KEYS, NOISE_FLOOR=NOISE_FLOOR, CUT_LABELS=CUT_LABELS, CUT_WHY=CUT_WHY,
                       SCORED=Status.SCORED, PRIME_DEP=Verdict.PRIME_DEP, SURFACE_DEP=Verdict.SURFACE_DEP,
                       shared_tail=shared_tail, prompt_parts=prompt_parts, interpreters=interpreters,
                       version=__version__, zip=zip, FORMAT_VERSION=FORMAT, NEGLIGIBLE=NEGLIGIBLE, fact=fact,
                       baseline_lines=baseline_lines, chapter_line=chapter_line,
                       chapter_groups=chapter_groups, shared_prompts=shared_prompts,
                       comparison_outcome=comparison_outcome, model_cases=model_cases, layer_note=layer_note)
    return env


def render(report: Report) -> str:
    env = _environment()
    css = env.loader.get_source(env, "report.css")[0]
    model = report.model_infos[0] if report.model_infos else None
    return env.get_template("page.html.j2").render(report=report, css=css, model=model)


def write(path: Path | str, report: Report) -> None:
    """Atomic: a reader never sees half a page. Readable by others, as a page meant to be shared."""
    write_atomic(path, render(report))
