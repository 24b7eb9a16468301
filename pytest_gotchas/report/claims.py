"""The report's claims as the terminal shows them, and the models x chapters table both views share: each count with
its interval, the run's tests as one corrected family (model comparisons and twins), the paired log ratio differences
and what each chapter can show. The models come in the order the user gave (`gotchas merge --order`), then the rest
in the order they ran.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..results.pairwise import mean_log_ratio
from ..results.report import Report
from ..results.schema import ChapterInfo
from ..results.stats import Interval
from .wording import GREEN, UNSTYLED, Line
from .wording_claims import can_show_short, can_show_text, family_line, log_ratio_line, twin_line, twins_total_line



@dataclass(frozen=True)
class Column:
    model: str
    label: str | None  # its place in the user's order, if given

    @property
    def title(self) -> str:
        return f"{self.model} ({self.label})" if self.label is not None else self.model


@dataclass(frozen=True)
class Cell:
    pairs: Interval
    cases: Interval
    mean_log_ratio: float | None  # the model's mean case log ratio in the chapter (nats); None: nothing scored


@dataclass(frozen=True)
class Row:
    info: ChapterInfo
    cells: list[Cell | None]  # one per column; None: the chapter did not run under that model
    pairs: int  # the chapter's pairs, as collected
    can_show: str  # wording: the smallest difference the pairs counted under every model that ran it can show
    can_show_short: str  # the same in a few words, for a table's cell


def columns(report: Report) -> list[Column]:
    """The user's order first (only models of the report), then every other model in the order it ran."""
    labels = {o.model: o.label for o in report.run.order}
    ordered = [Column(o.model, o.label) for o in report.run.order if o.model in report.model_ids]
    return ordered + [Column(m, None) for m in report.model_ids if m not in labels]


def rows(report: Report) -> list[Row]:
    """One row per chapter, in the report's order, a cell per column: what the report computed, worded."""
    by_key = {(c.info.name, c.model): c for c in report.chapters}
    out = []
    for name, shown in report.can_show.items():
        cells: list[Cell | None] = []
        for column in columns(report):
            rollup = by_key.get((name, column.model))
            cells.append(None if rollup is None else Cell(*report.intervals(rollup), mean_log_ratio(rollup)))
        facts = (shown.counted, shown.pairs, shown.discordant_needed, shown.smallest_difference)
        out.append(Row(report.infos[name], cells, shown.pairs, can_show_text(*facts), can_show_short(*facts)))
    return out


def compact(i: Interval) -> str:
    """"2/6 [10-70%]": the table's cell."""
    if i.low is None or i.high is None:
        return f"{i.k}/{i.n} [none]"
    return f"{i.k}/{i.n} [{i.low * 100:.0f}-{i.high * 100:.0f}%]"


def table_lines(report: Report) -> Iterator[Line]:
    """Models x chapters: pairs passed, each with its interval; never pooled over chapters."""
    cols = columns(report)
    found = rows(report)
    width = max([len("chapter")] + [len(r.info.name) for r in found])
    texts = [[compact(c.pairs) if c and r.pairs else "no pairs" if c else "not run" for c in r.cells] for r in found]
    widths = [max([len(col.title)] + [len(t[n]) for t in texts]) for n, col in enumerate(cols)]
    yield "", UNSTYLED
    yield (f"pairs passed per chapter and model, with {(1 - report.run.level) * 100:g}% Wilson intervals "
           "(never pooled over chapters):"), UNSTYLED
    yield (f"  {'chapter':<{width}}  " + "  ".join(f"{c.title:<{w}}" for c, w in zip(cols, widths))).rstrip(), UNSTYLED
    for row, text in zip(found, texts):
        cells = "  ".join(f"{t:<{w}}" for t, w in zip(text, widths))
        yield f"  {row.info.name:<{width}}  {cells}".rstrip(), UNSTYLED


def claim_lines(report: Report) -> Iterator[Line]:
    """After the chapter lines: the models x chapters table (several models), the family the run's tests form, the
    twins' tests, then (several models) the log ratio differences and what each chapter can show. The comparisons'
    own lines are terminal.py's."""
    several = len(report.model_ids) > 1
    if several:
        yield from table_lines(report)
    tests = len(report.comparisons) + len(report.twin_splits)
    if tests:
        yield "", UNSTYLED
        yield family_line(tests, report.run.level), UNSTYLED
    for split in report.twin_splits:
        model = f"[{split.model}] " if several and split.model else ""
        yield f"{model}{split.chapter}: {twin_line(split)}", GREEN if split.shown else UNSTYLED
    for model_id in dict.fromkeys(s.model for s in report.twin_splits):
        splits = [s for s in report.twin_splits if s.model == model_id]
        if len(splits) > 1:
            yield (f"[{model_id}] " if several and model_id else "") + twins_total_line(splits), UNSTYLED


def log_ratio_lines(report: Report) -> Iterator[Line]:
    """Each two models per chapter: the paired log ratio difference; and what each chapter's pairs can show."""
    if not report.log_ratios:
        return
    yield "", UNSTYLED
    yield "log ratios compared per chapter (log P(correct) - log P(wrong), paired by case):", UNSTYLED
    for m in report.log_ratios:
        yield f"  {m.chapter}: {log_ratio_line(m)}", GREEN if m.shown else UNSTYLED
    yield "what each chapter's pairs can show (exact McNemar at the run's level, before correction):", UNSTYLED
    for row in rows(report):
        yield f"  {row.info.name}: {row.can_show}", UNSTYLED
