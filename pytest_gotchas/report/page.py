"""The page's view model: everything the HTML page shows, built from one Report in Python (`build_page`).

One layout for any number of models; a report of one model is its case N = 1. The page is: a header (each model
with what decides its numbers, the run's facts, the reports it was merged from), a summary (verdicts per model, the
chapters x models matrix of pairs passed, the per-chapter comparisons of models), one section per baseline, and the
chapters (page_chapters.py), whose runs are page_runs.py. Sentences about baselines, chapters and comparisons come
from wording.py. The templates compute nothing: no verdict, count, coordinate or sentence of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import __version__
from ..results.baselines import BaselineOutcome, Comparison
from ..results.pairwise import ModelComparison
from ..results.report import FORMAT, Report
from ..results.schema import CaseResult, ModelInfo, Invocation
from ..results.verdict import NOISE_FLOOR
from .page_chapters import (KEYS, ChapterSection, Chip, Marks, Model, ModelRollup, chapter_sections, chips, counts,
                            model_label)
from .page_claims import Claims, build_claims
from .page_runs import CURSOR
from .wording_run import partial_run
from .wording import backend_layout, batch_invariant_text, comparison_outcome
from .wording_baseline import outcome_lines

MCNEMAR = ("Exact McNemar test on the units one model gets right and the other does not: pairs (passed or not) and "
           "case verdicts (ok or not), never pooled across chapters. Every test of the report is one family, "
           "Holm-corrected: a model is named ahead only where the adjusted p is below the level. With fewer than 6 "
           "such units no split reaches p < 0.05 even before the correction, so no difference is shown and no model "
           "is ranked.")
# wording's terminal markup as the page's classes
MARKUP = {"red": "bad", "green": "good", "yellow": "warn", "bold": "strong"}


@dataclass(frozen=True)
class Fact:
    label: str
    value: str
    cls: str = ""  # mono | wide | ""


@dataclass(frozen=True)
class ModelCard:
    id: str
    anchor: str
    name: str | None  # what the user named, when it is not the id
    facts: list[Fact] | None  # None: no case was scored with it, so it was not described


@dataclass(frozen=True)
class Source:
    """One report a merged report was made from."""

    file: str | None
    date: str | None
    command: str | None


@dataclass(frozen=True)
class PageHeader:
    title: str
    models: list[ModelCard]
    run: list[Fact]
    command: str | None
    merged: list[Source]
    partial: str | None = None  # the banner of a run (or merge) that stopped before every selected item ran
    not_run: list[str] = field(default_factory=list)  # its items that never ran


@dataclass(frozen=True)
class ModelRow:
    model: str
    anchor: str
    cases: int
    counts: list[Chip]  # one per key of the summary, zeros included


@dataclass(frozen=True)
class MatrixRow:
    label: str
    anchor: str
    cases: int
    cells: list[ModelRollup]  # one per model


@dataclass(frozen=True)
class ComparisonRow:
    label: str
    anchor: str
    a: str
    b: str
    unit: str
    a_only: int
    b_only: int
    both: int
    neither: int
    p: str
    outcome: str  # wording.comparison_outcome
    shown: bool
    p_adjusted: str = ""  # Holm-adjusted over the report's family of tests


@dataclass(frozen=True)
class Summary:
    lead: str
    keys: list[str]  # the outcomes the verdict table counts: every verdict and status, then any other found
    models: list[str]  # the matrix's columns
    rows: list[ModelRow]
    matrix: list[MatrixRow]
    comparisons: list[ComparisonRow] | None  # None: one model, nothing to compare


@dataclass(frozen=True)
class Change:
    key: str
    old: str | None  # old and new None: the key alone is the fact
    new: str | None


@dataclass(frozen=True)
class ChangeList:
    title: str
    cls: str  # regressed | improved | other
    items: list[Change]
    folded: bool = False  # shown closed under its count: the chapters a partial run left out can fill a screen


@dataclass(frozen=True)
class BaselineLine:
    text: str
    cls: str  # the wording's markup as classes


@dataclass(frozen=True)
class BaselineSection:
    model: str
    title: str
    path: str
    source: str | None  # `gotchas merge`: the input report this outcome comes from
    recorded: list[Fact]
    lists: list[ChangeList]  # empty: nothing was compared
    lines: list[BaselineLine]  # wording_baseline.outcome_lines


@dataclass(frozen=True)
class Page:
    title: str
    header: PageHeader
    summary: Summary
    baselines: list[BaselineSection]
    chapters: list[ChapterSection]
    keys: tuple[str, ...]  # the outcomes, in the order the summary lists them
    cursor: str
    noise_floor: str  # "2%"
    mcnemar: str  # what the comparisons can say
    version: str
    format: int
    claims: Claims | None = None  # page_claims: intervals, the family of tests, twins, log ratios, the order


def columns(report: Report) -> list[Model]:
    """The models of the report, in the order they ran (None for results of a run without a model)."""
    return list(dict.fromkeys(r.model for r in report.results))


def build_page(report: Report) -> Page:
    models = columns(report)
    marks = baseline_marks(report.baselines)
    chapters = chapter_sections(report.chapters, models, marks)
    date = f", {report.run.date[:10]}" if report.run.date else ""
    title = f"gotchas: {', '.join(report.model_ids) or 'no model'}{date}"
    return Page(title, header(report, models), summary(report, models, chapters),
                [baseline_section(b) for b in report.baselines if b.path], chapters, KEYS, CURSOR,
                f"{NOISE_FLOOR * 100:g}%", MCNEMAR, __version__, FORMAT, build_claims(report))


def header(report: Report, models: list[Model]) -> PageHeader:
    ids = [m for m in models if m is not None]
    title = f"{len(ids)} model{'s' if len(ids) != 1 else ''}: {', '.join(ids)}" if ids else "no model was loaded"
    cards = [model_card(m, report.models.get(m)) for m in ids]
    merged = [Source(r.file, r.date.replace("T", " ") or None, r.command or None) for r in report.run.merged_from]
    return PageHeader(title, cards, run_facts(report.run, report.cases), report.run.command or None, merged,
                      partial_run(report.run), report.run.not_run)


def model_card(model: str, info: ModelInfo | None) -> ModelCard:
    if info is None:
        return ModelCard(model, f"model-{model}", None, None)
    facts = [Fact("weights sha256", info.weights_sha256, "mono"), Fact("dtype", info.dtype),
             Fact("device", info.device), Fact("hardware", info.hardware), Fact("bos", info.bos),
             Fact("torch", info.torch_version), Fact("transformers", info.transformers_version),
             Fact("loaded from", info.source, "mono")]
    if info.backend is not None:  # read through vLLM: the engine, its layout and kernels, and their fingerprint
        facts[1:1] = [Fact("backend", f"{info.backend.package} {info.backend.version} on {info.backend.platform}"),
                      Fact("parallel layout", backend_layout(info.backend)),
                      Fact("batch-invariant", batch_invariant_text(info.backend)),
                      Fact("logits dtype", f"{info.backend.logits_dtype} (returned as float32)"),
                      Fact("numerics", info.numerics, "mono")]
    name = info.name if info.name and info.name != model else None
    return ModelCard(model, f"model-{model}", name, [f for f in facts if f.value])


def run_facts(run: Invocation, cases: list[CaseResult]) -> list[Fact]:
    softmax = sorted({r.reading.softmax_dtype for c in cases for r in c.runs})
    interpreters = sorted({c.interpreter.split()[0] for c in cases if c.interpreter})
    facts = [Fact("softmax dtype", ", ".join(softmax)), Fact("Python", run.python or ""),
             Fact("case interpreters", ", ".join(interpreters)), Fact("pytest", run.pytest or ""),
             Fact("xdist workers", str(run.xdist_workers) if run.xdist_workers else ""),
             Fact("snippets ran under", run.isolation or "", "wide"), Fact("platform", run.platform or "", "wide"),
             Fact("date", run.date.replace("T", " "), "wide")]
    return [f for f in facts if f.value]


def summary(report: Report, models: list[Model], chapters: list[ChapterSection]) -> Summary:
    cases = sum(c.cases_count for c in chapters)
    scored = sum(1 for c in report.cases if c.scored)
    several = f" under {len(models)} models: {len(report.cases)} results" if len(models) > 1 else ""
    lead = f"{cases} cases{several}, {scored} scored. Pairs are counted per chapter and per model, never pooled."
    keys = [chip.key for chip in chips(counts(report.cases), True)]
    by_model: dict[str | None, list[CaseResult]] = {}
    for case in report.cases:
        by_model.setdefault(case.model, []).append(case)
    rows = [model_row(m, by_model.get(m, []), keys) for m in models]
    matrix = [MatrixRow(c.label, c.anchor, c.cases_count, c.models) for c in chapters]
    labels = {c.name: c.label for c in chapters}
    compared = [comparison_row(c, labels) for c in report.comparisons] if len(models) > 1 else None
    return Summary(lead, keys, [model_label(m) for m in models], rows, matrix, compared)


def model_row(model: Model, cases: list[CaseResult], keys: list[str]) -> ModelRow:
    found = counts(cases)
    label = model_label(model)
    return ModelRow(label, f"model-{label}", len(cases), [Chip(k, found.get(k, 0)) for k in keys])


def comparison_row(c: ModelComparison, labels: dict[str, str]) -> ComparisonRow:
    return ComparisonRow(labels.get(c.chapter, c.chapter), f"ch-{c.chapter}", c.a, c.b, c.unit, c.a_only, c.b_only,
                         c.both, c.neither, f"{c.p_value:.3g}", comparison_outcome(c), c.shown, f"{c.p_adjusted:.3g}")


def baseline_marks(baselines: list[BaselineOutcome]) -> Marks:
    """The pairs a model's baseline comparison found regressed or improved, by (model, pair key)."""
    marks: dict[tuple[str | None, str], str] = {}
    for baseline in baselines:
        if baseline.comparison is not None:
            marks.update({(baseline.model, c.key): "regressed" for c in baseline.comparison.regressions})
            marks.update({(baseline.model, c.key): "improved" for c in baseline.comparison.improvements})
    return marks


RECORDED = ("name", "weights_sha256", "dtype", "softmax_dtype", "hardware", "numerics", "torch", "transformers",
            "backend", "engine")


def baseline_section(outcome: BaselineOutcome) -> BaselineSection:
    recorded = outcome.recorded
    facts = [Fact(f"recorded {n.replace('_', ' ')}", str(getattr(recorded, n))) for n in RECORDED
             if recorded is not None and getattr(recorded, n)]
    lines = [BaselineLine(text.strip(), " ".join(MARKUP[k] for k, on in markup.items() if on and k in MARKUP))
             for text, markup in outcome_lines(outcome) if text.strip()]
    comparison = outcome.comparison
    title = "Compared with the baseline" if comparison is not None else "The baseline"
    return BaselineSection(outcome.model, title, outcome.path or "", outcome.report, facts,
                           change_lists(comparison) if comparison is not None else [], lines)


def change_lists(c: Comparison) -> list[ChangeList]:
    """The pairs that changed state (every list, empty or not), the verdicts that changed, and the keys of what is
    new or gone (only when there are some). Each title is the word the summary's count line uses ("not checked":
    passed in the baseline, a member not scored now), never one a glance reads as "unchanged"."""
    pairs = [("regressions", "regressed", c.regressions), ("improvements", "improved", c.improvements),
             ("not checked", "other", c.unchecked), ("new pairs", "other", c.new_pairs)]
    lists = [ChangeList(title, cls, [Change(p.key, p.old or "new", p.new or "not scored") for p in changes])
             for title, cls, changes in pairs]
    lists.append(ChangeList("verdicts changed", "other",
                            [Change(v.key, v.old.verdict, v.new.verdict) for v in c.changed_cases]))
    keys = [("gone pairs", list(c.gone_pairs)), ("new cases", c.new_cases), ("gone cases", c.gone_cases),
            ("not run", c.not_run)]
    lists += [ChangeList(title, "other", [Change(k, None, None) for k in found], folded=title == "not run")
              for title, found in keys if found]
    return lists
