"""The page's view of --gotchas-patch: a heatmap per patched direction and model, layers down and the target's
aligned tokens across, each cell coloured by the fraction of the effect it restores (blue towards the source's
answer, red away from it, white at 0%), the figures on hover. Pure data; _patching.html.j2 lays it out."""

from __future__ import annotations

from dataclasses import dataclass

from ..results.schema import Patching
from .wording import heatmap_caption, heatmap_cell_title, patched_tokens, patching_line

BLUE, RED = "33,102,172", "178,24,43"  # ColorBrewer RdBu's ends: readable for red-green colour blindness
DARK = 0.6  # above this share of full colour, the cell's text turns white


@dataclass(frozen=True)
class HeatCell:
    style: str  # its background colour
    text: str  # the percentage shown in the cell ("" when there is no effect to restore)
    title: str  # on hover: layer, token, fraction and the metric's value
    dark: bool  # white text on a strong colour


@dataclass(frozen=True)
class HeatRow:
    layer: int
    cells: list[HeatCell]


@dataclass(frozen=True)
class Heatmap:
    model: str
    caption: str
    tokens: list[str]  # each aligned position's tokens, source -> target, as the terminal quotes them
    rows: list[HeatRow]
    line: str  # the direction's sentence, as the terminal prints it


def colour(fraction: float | None) -> tuple[str, bool]:
    """The background of a cell restoring `fraction` of the effect (clipped to -100%..100%), and whether it is dark."""
    if fraction is None:
        return "background:#f0f0f0", False
    share = min(1.0, abs(fraction))
    return f"background:rgba({BLUE if fraction >= 0 else RED},{share:.2f})", share > DARK


def heatmap(model: str, patching: Patching) -> Heatmap:
    rows = []
    tokens = patched_tokens(patching)
    for layer, values, fractions in zip(patching.layers, patching.cells, patching.fractions):
        cells = []
        for token, value, fraction in zip(tokens, values, fractions):
            style, dark = colour(fraction)
            text = "" if fraction is None else str(round(fraction * 100))  # an int: never "-0"
            cells.append(HeatCell(style, text, heatmap_cell_title(layer, token, value, fraction), dark))
        rows.append(HeatRow(layer, cells))
    return Heatmap(model, heatmap_caption(patching), tokens, rows,
                   patching_line(patching))
