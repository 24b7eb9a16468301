"""The page's chapter view of patching (results/patched.py), before the per-direction heatmaps: per model, how many
directions fell under the effect floor, the screen summed over the rest, and a table of the components the
directions share, each with how many directions name it and its share of the effect over them (coloured as the
heatmaps colour a fraction). Pure data; _effects.html.j2 lays it out."""

from __future__ import annotations

from dataclasses import dataclass

from ..results.patched import ChapterEffects
from ..results.recurrence import TOP
from .page_patching import colour
from .wording_effects import directions_text, recurrence_text, recurring_name, screen_sum_text

COLUMNS = ("component", "directions", "share of the effect (ratio of means)")
TABLE = (f"The components among the top {TOP} cells of two or more of the directions above the floor with an exact "
         "component grid, each with how many name it and its share of the effect over all of them:")


@dataclass(frozen=True)
class ShareCell:
    text: str
    style: str
    dark: bool


@dataclass(frozen=True)
class RecurRow:
    component: str
    directions: str  # "5 of 6"
    share: ShareCell


@dataclass(frozen=True)
class EffectsView:
    """One model's patched directions of one chapter, together."""

    model: str
    lines: list[str]  # the directions and the floor, the screen summed, the recurrence sentence
    caption: str  # what the table holds
    columns: tuple[str, ...]
    rows: list[RecurRow]


def effects_view(model: str, e: ChapterEffects) -> EffectsView:
    lines = [directions_text(e)]
    if e.screen is not None:
        lines.append(screen_sum_text(e.screen))
    lines.append(recurrence_text(e.chapter, e.recurring) or
                 "no component recurs among the top cells of two or more directions above the floor with an exact "
                 "component grid (--gotchas-patch-components)")
    rows = []
    for r in e.recurring:
        style, dark = colour(r.share)
        rows.append(RecurRow(recurring_name(r), f"{r.directions} of {r.of}",
                             ShareCell(f"{r.share * 100:.0f}%", style, dark)))
    return EffectsView(model, [line[0].upper() + line[1:] for line in lines], TABLE, COLUMNS, rows)
