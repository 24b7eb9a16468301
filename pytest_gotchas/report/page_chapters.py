"""The page's view of the chapters: each chapter under every model of the report, each case once with one cell per
model, and its pairs and twins with a state per model. A report of one model is the case N = 1 of the same layout.

Pure data built from the report's rollups; the templates only lay it out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from ..results.patched import chapter_effects
from ..results.rollup import ChapterRollup, PairResult, TwinResult
from ..results.schema import CaseResult, ChapterInfo, SeedOutput
from ..results.verdict import Verdict
from .page_edges import RecurringTable, edges_view, recurring_table
from .page_patching import Heatmap, heatmap
from .page_runs import Prompt, RunBlock, Variants, own_runs, prompts, run_blocks, variants
from .wording import chapter_line
from .page_effects import EffectsView, effects_view
from .wording_patching import PATCHING_EXPLAIN

Model = str | None  # a model's id; None: results of a run that had no model
Marks = Mapping[tuple[str | None, str], str]  # (model, pair key) -> "regressed" | "improved"
# Outcomes in the order the summary lists them: the verdicts, then the reasons a case was not scored.
KEYS = (*map(str, Verdict), "crash", "unscored", "excluded", "skipped")
IMPLEMENTATION_DEFINED = ("implementation-defined: ground truth is this interpreter build's behaviour; a mismatch "
                          "elsewhere excludes the case instead of failing")
PRIMED = "each case runs under every primer order, side by side; a verdict that changes with the order is prime-dep"
SIDE_BY_SIDE = "each case once, with one answer per model side by side"
TWINS = "The same program in two spellings. Disagreement rules out a reading of the semantics; agreement proves little."


def model_label(model: Model) -> str:
    return "no model" if model is None else model


def case_anchor(chapter: str, case_id: str) -> str:
    return f"case-{chapter}-{case_id}"


@dataclass(frozen=True)
class Chip:
    key: str
    count: int


@dataclass(frozen=True)
class PairsCount:
    passed: int
    counted: int  # pairs with every member scored
    fraction: float  # passed / counted, 0 when none is counted
    not_scored: int  # pairs left out of the count


@dataclass(frozen=True)
class TwinsCount:
    agree: int
    counted: int


@dataclass(frozen=True)
class ModelRollup:
    """One chapter under one model, as the chapter's head and the summary's matrix show it."""

    model: str
    ran: bool  # False: the model did not run the chapter
    pairs: PairsCount | None  # None: the chapter has no pairs (or did not run)
    twins: TwinsCount | None
    chips: list[Chip]  # its verdict counts


@dataclass(frozen=True)
class ModelVerdict:
    model: str
    outcome: str | None  # None: the model did not run the case


@dataclass(frozen=True)
class Unscored:
    """What a case that was not put to the model shows: why, and what each hash seed printed."""

    message: str | None
    outputs: list[SeedOutput]


@dataclass(frozen=True)
class Combined:
    """How a primed case's primer orders came together."""

    orders: int
    differ: bool
    verdict: str


@dataclass(frozen=True)
class Cell:
    """One model's answer to a case."""

    head: ModelVerdict
    kind: str  # the outcome as a CSS key; "" when not run
    ran: bool
    runs: list[RunBlock]  # empty: not scored
    combined: Combined | None
    variants: Variants | None
    unscored: Unscored | None


@dataclass(frozen=True)
class SharedPrompt:
    """A prompt every model was shown, above their cells."""

    primer: str | None  # None: not primed
    prompt: Prompt


@dataclass(frozen=True)
class CaseBlock:
    id: str
    anchor: str
    kind: str  # the outcome as a CSS key when every model agrees, else "mixed"
    verdicts: list[ModelVerdict]
    interpreter: str | None  # "3.11.7 /path/to/python3.11"
    python: str | None  # its version
    primed: bool
    prompts: list[SharedPrompt]  # empty: each cell shows its own
    cells: list[Cell]  # empty: the case is shown once, as `unscored`
    unscored: Unscored | None
    note: str | None
    solo: bool  # one model: the prompt and the answer side by side


@dataclass(frozen=True)
class Member:
    id: str
    anchor: str


@dataclass(frozen=True)
class PairCell:
    state: str  # pass | fail | none: its CSS key
    word: str  # pass | FAIL | not scored; agree | disagree | not scored
    verdicts: list[str | None]  # None: the member did not run or was not scored
    mark: str | None  # regressed | improved against the model's baseline


@dataclass(frozen=True)
class PairRow:
    label: str
    members: list[Member]
    cells: list[PairCell | None]  # per model; None: not run
    heatmaps: list[Heatmap] = field(default_factory=list)  # --gotchas-patch: per model, direction and primer


@dataclass(frozen=True)
class PairsTable:
    cls: str  # its CSS classes
    title: str
    head: str  # the first column's head
    sep: str  # between members and their verdicts: + for pairs, / for twins
    explain: str | None
    rows: list[PairRow]
    patching: str | None = None  # how to read the heatmaps, when a row has any
    recurring: list[RecurringTable] = field(default_factory=list)  # --gotchas-patch-edges: per model


@dataclass(frozen=True)
class ChapterLine:
    model: str
    text: str  # wording.chapter_line


@dataclass(frozen=True)
class ChapterSection:
    name: str
    anchor: str
    label: str
    cases_count: int  # every case any model has
    models: list[ModelRollup]
    path: str | None
    notes: list[str]
    cases: list[CaseBlock]
    pairs: PairsTable | None
    twins: PairsTable | None
    lines: list[ChapterLine]
    effects: list[EffectsView] = field(default_factory=list)  # --gotchas-patch: the directions together, per model


def chips(counts: Mapping[str, int], show_zero: bool) -> list[Chip]:
    """The outcomes in KEYS order, then any other, with their counts; zeros only when `show_zero`."""
    keys = [*KEYS, *sorted(k for k in counts if k not in KEYS)]
    return [Chip(key, counts.get(key, 0)) for key in keys if show_zero or counts.get(key)]


def counts(cases: list[CaseResult]) -> dict[str, int]:
    found: dict[str, int] = {}
    for case in cases:
        found[case.outcome] = found.get(case.outcome, 0) + 1
    return found


def model_rollup(model: Model, rollup: ChapterRollup | None) -> ModelRollup:
    if rollup is None:
        return ModelRollup(model_label(model), False, None, None, [])
    pairs = None
    if rollup.pairs:
        fraction = rollup.passed / rollup.counted if rollup.counted else 0.0
        pairs = PairsCount(rollup.passed, rollup.counted, fraction, len(rollup.pairs) - rollup.counted)
    twins = TwinsCount(rollup.agreeing, rollup.twins_counted) if rollup.twins else None
    return ModelRollup(model_label(model), True, pairs, twins, chips(counts(rollup.cases), False))


def grouped(chapters: list[ChapterRollup]) -> dict[str, dict[Model, ChapterRollup]]:
    """The rollups by chapter name (in the rollups' order), then by model."""
    found: dict[str, dict[Model, ChapterRollup]] = {}
    for rollup in chapters:
        found.setdefault(rollup.info.name, {})[rollup.model] = rollup
    return found


def chapter_sections(chapters: list[ChapterRollup], models: list[Model], marks: Marks) -> list[ChapterSection]:
    return [chapter_section(next(iter(rollups.values())).info, rollups, models, marks)
            for rollups in grouped(chapters).values()]


def chapter_section(info: ChapterInfo, rollups: Mapping[Model, ChapterRollup], models: list[Model],
                    marks: Marks) -> ChapterSection:
    ids = case_ids(info, rollups)
    by_model = {m: {c.id: c for c in r.cases} for m, r in rollups.items()}
    blocks = [case_block(info.name, i, [(m, by_model.get(m, {}).get(i)) for m in models]) for i in ids]
    notes = [IMPLEMENTATION_DEFINED] if info.implementation_defined else []
    if any(b.primed for b in blocks):
        notes.append(PRIMED)
    if len(models) > 1:
        notes.append(SIDE_BY_SIDE)
    return ChapterSection(
        name=info.name, anchor=f"ch-{info.name}", label=info.label, cases_count=len(ids),
        models=[model_rollup(m, rollups.get(m)) for m in models], path=info.path or None, notes=notes, cases=blocks,
        pairs=pairs_table(info.name, rollups, models, marks), twins=twins_table(info.name, rollups, models),
        lines=[ChapterLine(model_label(m), chapter_line(rollups[m])) for m in models if m in rollups],
        effects=[effects_view(model_label(m), e) for m in models if m in rollups
                 for e in chapter_effects([rollups[m]])],
    )


def case_ids(info: ChapterInfo, rollups: Mapping[Model, ChapterRollup]) -> list[str]:
    """Every case any model has, in the chapter file's order."""
    order = {case_id: n for n, case_id in enumerate(info.case_ids)}
    ids = dict.fromkeys(c.id for r in rollups.values() for c in r.cases)
    return sorted(ids, key=lambda i: order.get(i, len(order)))


def shared_prompts(cases: list[CaseResult]) -> bool:
    """Whether every model was shown the same prompts (the transcripts do not depend on the model)."""
    return len({tuple((r.primer, r.prompt) for r in own_runs(c)) for c in cases}) == 1


def case_block(chapter: str, case_id: str, row: list[tuple[Model, CaseResult | None]]) -> CaseBlock:
    """One case under every model: shown once when no model scored it and all agree on why, else a cell each."""
    present = [c for _, c in row if c is not None]
    outcomes = list(dict.fromkeys(c.outcome for c in present))
    scored = [c for c in present if c.scored and c.runs]
    interpreter = next((c.interpreter for c in present if c.interpreter), None)
    apart = bool(scored) or len({c.status for c in present}) > 1 or len(present) < len(row)
    shared = bool(scored) and shared_prompts(scored)
    above = own_runs(scored[0]) if shared else []
    return CaseBlock(
        id=case_id, anchor=case_anchor(chapter, case_id),
        kind=outcomes[0].lower() if len(outcomes) == 1 else "mixed",
        verdicts=[ModelVerdict(model_label(m), c.outcome if c else None) for m, c in row],
        interpreter=interpreter, python=interpreter.split()[0] if interpreter else None,
        primed=any(len(own_runs(c)) > 1 for c in scored),
        prompts=[SharedPrompt(r.primer if len(above) > 1 else None, p) for r, p in zip(above, prompts(above))],
        cells=[cell(m, c, not shared) for m, c in row] if apart else [],
        unscored=None if apart else unscored(present[0]),
        note=next((c.note for c in present if c.note), None), solo=len(row) == 1,
    )


def unscored(case: CaseResult) -> Unscored:
    return Unscored(case.message, list(case.outputs))


def cell(model: Model, case: CaseResult | None, with_prompts: bool) -> Cell:
    head = ModelVerdict(model_label(model), case.outcome if case else None)
    if case is None:
        return Cell(head, "", False, [], None, None, None)
    if not (case.scored and case.runs):
        return Cell(head, case.outcome.lower(), True, [], None, None, unscored(case))
    orders = len(own_runs(case))
    combined = Combined(orders, case.outcome == Verdict.PRIME_DEP, case.outcome) if orders > 1 else None
    return Cell(head, case.outcome.lower(), True, run_blocks(case, with_prompts), combined, variants(case), None)


def _by_id(rollups: Mapping[Model, ChapterRollup], kind: str) -> dict[str, dict[Model, PairResult | TwinResult]]:
    """The pairs or the twins of every model's rollup, by id in first-seen order, then by model."""
    found: dict[str, dict[Model, PairResult | TwinResult]] = {}
    for model, rollup in rollups.items():
        for item in getattr(rollup, kind):
            found.setdefault(item.id, {})[model] = item
    return found


def _members(chapter: str, members: list[str]) -> list[Member]:
    return [Member(m, case_anchor(chapter, m)) for m in members]


def pair_cell(pair: PairResult, marks: Marks) -> PairCell:
    state = "none" if pair.passed is None else "pass" if pair.passed else "fail"
    word = {"none": "not scored", "pass": "pass", "fail": "FAIL"}[state]
    return PairCell(state, word, list(pair.verdicts), marks.get((pair.model, pair.key)))


def twin_cell(twin: TwinResult) -> PairCell:
    state = "none" if twin.agree is None else "pass" if twin.agree else "fail"
    word = {"none": "not scored", "pass": "agree", "fail": "disagree"}[state]
    return PairCell(state, word, list(twin.verdicts), None)


def pairs_table(chapter: str, rollups: Mapping[Model, ChapterRollup], models: list[Model],
                marks: Marks) -> PairsTable | None:
    rows = []
    for pair_id, by_model in _by_id(rollups, "pairs").items():
        cells = [pair_cell(p, marks) if isinstance(p := by_model.get(m), PairResult) else None for m in models]
        rows.append(PairRow(f"pair {pair_id}", _members(chapter, next(iter(by_model.values())).members), cells,
                            heatmaps(by_model, models)))
    return PairsTable("pairs", "Pairs", "pair", "+", None, rows, _explain(rows),
                      _recurring(rollups, models, "pairs")) if rows else None


def twins_table(chapter: str, rollups: Mapping[Model, ChapterRollup], models: list[Model]) -> PairsTable | None:
    rows = []
    for twin_id, by_model in _by_id(rollups, "twins").items():
        cells = [twin_cell(t) if isinstance(t := by_model.get(m), TwinResult) else None for m in models]
        rows.append(PairRow(twin_id, _members(chapter, next(iter(by_model.values())).members), cells,
                            heatmaps(by_model, models)))
    return PairsTable("pairs twins", "Written twice", "twins", "/", TWINS, rows, _explain(rows),
                      _recurring(rollups, models, "twins")) if rows else None


def heatmaps(by_model: Mapping[Model, PairResult | TwinResult], models: list[Model]) -> list[Heatmap]:
    """Every patched direction of a pair or twin, model by model in the report's order."""
    return [replace(heatmap(model_label(m), p), edges=edges_view(p)) for m in models if (item := by_model.get(m))
            for p in item.patching]


def _recurring(rollups: Mapping[Model, ChapterRollup], models: list[Model], kind: str) -> list[RecurringTable]:
    """Per model, the edges that recur over the chapter's pairs' (or twins') directions."""
    found = [recurring_table(model_label(m), [p for item in getattr(rollups[m], kind) for p in item.patching])
             for m in models if m in rollups]
    return [table for table in found if table is not None]


def _explain(rows: list[PairRow]) -> str | None:
    return PATCHING_EXPLAIN if any(row.heatmaps for row in rows) else None
