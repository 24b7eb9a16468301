"""The page's claims (built from report/claims.py's table and the report's tests): the models x chapters table with
each count's interval, each chapter's mean log ratio and what it can show; the twins' tests; the paired log ratio
differences; each family beside its instance zero (where chapters draw instances); and, when the models were given
an order (`gotchas merge --order`), each chapter's pass rate (with its interval) and mean log ratio drawn as lines
across that order. Every coordinate and sentence is made here; the template
(_claims.html.j2) only lays them out.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..results.familyshares import FamilyShare
from ..results.report import Report
from ..results.stats import Interval
from .claims import Cell, Column, Row, columns, rows
from .wording_claims import (clustered_text, family_flag, family_instances, family_line, family_zero, interval_text,
                             log_ratio_outcome, mean_interval_text, twin_outcome, twins_total_line)

WIDTH, HEIGHT, LEFT, RIGHT, TOP, FOOT = 320, 120, 40, 34, 8, 26


@dataclass(frozen=True)
class CountCell:
    pairs: str  # wording: "2/6 pairs [9.7%, 70.0%]"
    cases: str
    log_ratio: str  # the model's mean case log ratio in the chapter
    ran: bool


@dataclass(frozen=True)
class TableRow:
    label: str
    anchor: str
    cells: list[CountCell]
    can_show: str


@dataclass(frozen=True)
class TwinRow:
    label: str
    anchor: str
    model: str
    agree: str  # "3/8"
    sugared: int
    desugared: int
    neither: int
    p: str
    p_adjusted: str
    outcome: str
    shown: bool


@dataclass(frozen=True)
class LogRatioRow:
    label: str
    anchor: str
    a: str
    b: str
    difference: str  # wording_claims.mean_interval_text
    outcome: str  # the direction, "the interval holds 0", or why no direction is stated
    shown: bool  # a direction stated


@dataclass(frozen=True)
class FamilyRow:
    """One family of a chapter under one model: its instance zero beside its drawn instances."""

    label: str
    anchor: str
    model: str
    family: str
    kind: str
    zero: str  # "pass", "FAIL", "agree" ... or "not counted"
    instances: str  # wording_claims.interval_text: "2/11 passed [5.1%, 47.7%]"
    flag: str  # wording_claims.family_flag: surface-dep, instance zero alone fails, or ""


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    low: float | None  # the interval's ends as y, for the whiskers
    high: float | None
    title: str


@dataclass(frozen=True)
class Tick:
    x: float
    y: float
    text: str


@dataclass(frozen=True)
class Chart:
    title: str
    width: int
    height: int
    frame: tuple[float, float, float, float]
    line: str  # polyline points
    points: list[Point]
    ticks: list[Tick]  # the order's labels under the frame
    scale: list[Tick]  # the y axis's ends (and 0 for the log ratio)
    zero: float | None  # y of the log ratio's 0 line


@dataclass(frozen=True)
class Series:
    label: str
    anchor: str
    count: Chart | None  # None: the chapter has no pairs (twins or single cases)
    log_ratio: Chart | None  # None: no model scored a case of the chapter


@dataclass(frozen=True)
class Claims:
    family: str | None  # None: the report makes no test
    confidence: str  # "95%"
    columns: list[str]
    table: list[TableRow]
    twins: list[TwinRow]
    twins_total: list[str]  # per model with twins in two chapters or more: the sum of its counts (no test)
    log_ratios: list[LogRatioRow]
    series: list[Series]  # empty: no order given (or fewer than two models in it)
    families: list[FamilyRow]  # empty: no chapter drew instances beyond instance zero


def build_claims(report: Report) -> Claims:
    cols = columns(report)
    found = rows(report)
    labels = {r.info.name: r.info.label for r in found}
    tests = len(report.comparisons) + len(report.twin_splits)
    twins = [TwinRow(labels.get(s.chapter, s.chapter), f"ch-{s.chapter}", s.model or "", f"{s.agree}/{s.counted}",
                     s.sugared_only, s.desugared_only, s.neither, f"{s.p_value:.3g}", f"{s.p_adjusted:.3g}",
                     twin_outcome(s), s.shown) for s in report.twin_splits]
    ratios = [LogRatioRow(labels.get(m.chapter, m.chapter), f"ch-{m.chapter}", m.a, m.b,
                          mean_interval_text(m.difference, m.clusters), log_ratio_outcome(m).removeprefix(": "),
                          m.shown)
              for m in report.log_ratios]
    by_model = {m: [s for s in report.twin_splits if s.model == m] for m in dict.fromkeys(s.model for s in
                                                                                         report.twin_splits)}
    totals = [(f"{m}: " if m else "") + twins_total_line(splits) for m, splits in by_model.items() if len(splits) > 1]
    return Claims(family_line(tests, report.run.level) if tests else None, f"{(1 - report.run.level) * 100:g}%",
                  [c.title for c in cols], [table_row(r) for r in found], twins, totals, ratios, series(cols, found),
                  [family_row(s, labels) for s in report.family_shares])


def family_row(s: FamilyShare, labels: dict[str, str]) -> FamilyRow:
    return FamilyRow(labels.get(s.chapter, s.chapter), f"ch-{s.chapter}", s.model or "", s.family, s.kind,
                     family_zero(s), family_instances(s), family_flag(s))


def table_row(row: Row) -> TableRow:
    return TableRow(row.info.label, f"ch-{row.info.name}", [count_cell(c, row.pairs > 0) for c in row.cells],
                    row.can_show_short)


def count_cell(cell: Cell | None, pairs: bool) -> CountCell:
    if cell is None:
        return CountCell("", "", "", False)
    ratio = "" if cell.mean_log_ratio is None else f"mean log ratio {cell.mean_log_ratio:+.2f} nats"
    shown = clustered_text(cell.clustered) if cell.clustered is not None and cell.in_families else interval_text(
        cell.pairs, "pairs")
    return CountCell(shown if pairs else "no pairs", interval_text(cell.cases, "cases ok"), ratio, True)


def series(cols: list[Column], found: list[Row]) -> list[Series]:
    """Per chapter, the labelled models' pass rates and mean log ratios across the order; none with fewer than two."""
    placed = [n for n, c in enumerate(cols) if c.label is not None]
    if len(placed) < 2:
        return []
    ticks = [str(cols[n].label) for n in placed]
    out = []
    for row in found:
        cells = [row.cells[n] for n in placed]
        rates = [_rate(c.pairs) if c is not None and c.pairs.n else None for c in cells]
        count = (_chart("pairs passed", ticks, rates, [c.pairs if c else None for c in cells], 0.0, 1.0)
                 if any(r is not None for r in rates) else None)
        ratios = [c.mean_log_ratio if c is not None else None for c in cells]
        known = [m for m in ratios if m is not None]
        ratio = None
        if known:
            low, high = min(known + [0.0]), max(known + [0.0])
            ratio = _chart("mean log ratio (nats)", ticks, ratios, [None] * len(cells), low, high if high > low else 1)
        if count is not None or ratio is not None:
            out.append(Series(row.info.label, f"ch-{row.info.name}", count, ratio))
    return out


def _rate(i: Interval) -> float:
    return i.k / i.n


def _chart(title: str, ticks: list[str], values: list[float | None], intervals: list[Interval | None],
           low: float, high: float) -> Chart:
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - FOOT
    steps = max(len(ticks) - 1, 1)
    xs = [LEFT + inner_w * n / steps for n in range(len(ticks))]

    def y(v: float) -> float:
        return round(TOP + inner_h * (1 - (v - low) / (high - low)), 1)

    points = []
    for x, v, i in zip(xs, values, intervals):
        if v is None:
            continue
        text = interval_text(i, "pairs") if i is not None else f"{v:+.2f} nats"
        points.append(Point(round(x, 1), y(v), y(i.low) if i is not None and i.low is not None else None,
                            y(i.high) if i is not None and i.high is not None else None, text))
    line = " ".join(f"{p.x},{p.y}" for p in points)
    foot = HEIGHT - 8
    scale = [Tick(LEFT - 4, y(high) + 4, _scale(high, title)), Tick(LEFT - 4, y(low) + 4, _scale(low, title))]
    zero = y(0.0) if low < 0 < high else None
    if zero is not None:
        scale.append(Tick(LEFT - 4, zero + 4, "0"))
    return Chart(title, WIDTH, HEIGHT, (LEFT, TOP, inner_w, inner_h), line, points,
                 [Tick(round(x, 1), foot, t) for x, t in zip(xs, ticks)], scale, zero)


def _scale(v: float, title: str) -> str:
    return f"{v * 100:.0f}%" if title == "pairs passed" else f"{v:+.1f}"
