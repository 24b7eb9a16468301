"""The page's view of --gotchas-patch: a heatmap per patched direction and model, layers down and the target's
aligned tokens across, each cell coloured by the fraction of the effect it restores (blue towards the source's
answer, red away from it, white at 0%), the figures on hover. Pure data; _patching.html.j2 lays it out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..results.schema import Patching
from .wording_patching import (SCREEN_COLUMNS, UNDER, components_line, heatmap_caption, heatmap_cell_title,
                               patched_tokens, patching_line, pattern_caption, pattern_cell_title, screen_caption,
                               screen_rows)
from ..results.vocabulary import ComponentsMethod

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
class PatternRow:
    label: str  # the head, "layer.head"
    cells: list[HeatCell]


@dataclass(frozen=True)
class PatternMap:
    """The attention weights of a direction's top heads at the target's cut, head x the target's tokens."""

    caption: str
    tokens: list[str]
    rows: list[PatternRow]


@dataclass(frozen=True)
class ScreenTable:
    """A direction's screen: its top-k cells, each with the estimated and the exact fraction side by side."""

    caption: str
    columns: tuple[str, ...]
    rows: list[tuple[str, ...]]
    line: str  # the components' sentence where no component heatmap carries it (the screen alone), else ""


@dataclass(frozen=True)
class Heatmap:
    model: str
    caption: str
    tokens: list[str]  # each aligned position's tokens, source -> target, as the terminal quotes them
    rows: list[HeatRow]
    line: str  # the direction's sentence, as the terminal prints it
    components: list[Heatmap] = field(default_factory=list)  # --gotchas-patch-components: attention, MLP, heads
    pattern: PatternMap | None = None  # where the top heads at the cut read from
    screen: ScreenTable | None = None  # the screen's top-k, estimate beside exact
    edges: Any = None  # --gotchas-patch-edges: page_edges.EdgesView (set by page_chapters: page_edges reads this module)


def colour(fraction: float | None) -> tuple[str, bool]:
    """The background of a cell restoring `fraction` of the effect (clipped to -100%..100%), and whether it is dark."""
    if fraction is None:
        return "background:#f0f0f0", False
    share = min(1.0, abs(fraction))
    return f"background:rgba({BLUE if fraction >= 0 else RED},{share:.2f})", share > DARK


def why_none(patching: Patching) -> str:
    """What a cell without a fraction says on hover: no effect, or under the effect floor."""
    if patching.under is None:
        return "no effect to restore"
    return UNDER[patching.under] + ", under the effect floor"


def heatmap(model: str, patching: Patching) -> Heatmap:
    rows = []
    tokens = patched_tokens(patching)
    why = why_none(patching)
    for layer, values, fractions in zip(patching.layers, patching.cells, patching.fractions):
        cells = []
        for token, value, fraction in zip(tokens, values, fractions):
            style, dark = colour(fraction)
            text = "" if fraction is None else str(round(fraction * 100))  # an int: never "-0"
            cells.append(HeatCell(style, text, heatmap_cell_title(layer, token, value, fraction, why), dark))
        rows.append(HeatRow(layer, cells))
    return Heatmap(model, heatmap_caption(patching), tokens, rows,
                   patching_line(patching), component_heatmaps(model, patching), pattern_map(patching),
                   screen_table(patching))


def screen_table(patching: Patching) -> ScreenTable | None:
    """The screen's top-k of a direction (--gotchas-patch-components or --gotchas-patch-screen); None without one or
    without an effect to take fractions of."""
    grid = patching.components
    rows = screen_rows(patching)
    if grid is None or not rows:
        return None
    return ScreenTable(screen_caption(patching), SCREEN_COLUMNS, rows,
                       components_line(patching) if grid.method == ComponentsMethod.SCREEN else "")


def _row(patching: Patching, layer: int, label: str, values: list[float], columns: list[str]) -> HeatRow:
    effect = patching.source_value - patching.unpatched
    worth = effect and patching.under is None
    cells = []
    for column, value in zip(columns, values):
        fraction = (value - patching.unpatched) / effect if worth else None
        style, dark = colour(fraction)
        text = "" if fraction is None else str(round(fraction * 100))
        cells.append(HeatCell(style, text, heatmap_cell_title(layer, f"{label} {column}", value, fraction,
                                                              why_none(patching)), dark))
    return HeatRow(layer, cells)


def component_heatmaps(model: str, patching: Patching) -> list[Heatmap]:
    """The component grid's heatmaps: attention writes and MLP writes (layer x aligned position), then the heads
    (layer x head) at the cut and at the position of the head that restores most, if another."""
    grid = patching.components
    # the screen alone has no grid: its table says what it found
    if grid is None or grid.method == ComponentsMethod.SCREEN:
        return []
    tokens = patched_tokens(patching)
    line = components_line(patching)
    maps = [Heatmap(model, f"{name} writes, layer x position: {heatmap_caption(patching)}", tokens,
                    [_row(patching, layer, name, values, tokens) for layer, values in zip(grid.layers, rows)], line)
            for name, rows in (("attention", grid.attn), ("MLP", grid.mlp))]
    heads = [f"head {h}" for h in range(grid.heads)]
    best = max(((abs(v - patching.unpatched), j) for layer in grid.head for row in layer for j, v in enumerate(row)
                 if patching.under is None), default=(0.0, len(tokens) - 1))[1]
    for j in sorted({len(tokens) - 1, best}):
        rows = [_row(patching, layer, f"at {tokens[j]},", [row[j] for row in per_head], heads)
                for layer, per_head in zip(grid.layers, grid.head)]
        maps.append(Heatmap(model, f"heads at {tokens[j]}, layer x head: {heatmap_caption(patching)}", heads, rows,
                            line))
    return maps


def pattern_map(patching: Patching) -> PatternMap | None:
    """The top heads' attention at the cut (components.patterns), each weight shaded from white to full blue."""
    grid = patching.components
    if grid is None or not grid.patterns:
        return None
    tokens = grid.patterns[0].tokens
    rows = []
    for found in grid.patterns:
        cells = []
        for n, (token, weight) in enumerate(zip(found.tokens, found.weights)):
            style, dark = colour(weight)
            cells.append(HeatCell(style, str(round(weight * 100)),
                                  pattern_cell_title(found.layer, found.head, n, token, weight), dark))
        rows.append(PatternRow(f"{found.layer}.{found.head}", cells))
    return PatternMap(pattern_caption(patching), [repr(t) for t in tokens], rows)
