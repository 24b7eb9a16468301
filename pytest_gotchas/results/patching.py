"""What a patched direction (schema.Patching) says, as facts the reports put in words: the cell that restores most
of the effect, and from which layer the last position carries it. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from .schema import Patching
from .vocabulary import Cell, ComponentKind

CARRIES = 0.5  # the last position "carries" the effect from the lowest layer after which it restores at least this


@dataclass(frozen=True)
class Strongest:
    layer: int
    position: tuple[int, int]  # (s, t)
    token: str  # the target's token at t
    fraction: float  # of the effect restored
    source_token: str | None = None  # the source's token at s (None in reports written without it)


def strongest(patching: Patching, last: bool = False) -> Strongest | None:
    """The cell that moves the metric furthest towards the source's value (the first such in layer-then-position
    order when several tie); the last position is left out unless ``last`` (its last layer is the source's value by
    construction). None when there is no effect, or no other position."""
    fractions = patching.fractions
    columns = range(len(patching.positions) if last else len(patching.positions) - 1)
    found = [(f, -i, -j) for i, row in enumerate(fractions) for j, f in enumerate(row) if j in columns
             and f is not None]
    if not found:
        return None
    fraction, i, j = max(found)
    s, t = patching.positions[-j]
    source = patching.source_tokens[-j] if patching.source_tokens else None
    return Strongest(patching.layers[-i], (s, t), patching.tokens[-j], fraction, source)


def carried_from(patching: Patching) -> int | None:
    """The lowest layer from which patching the last position alone restores at least CARRIES of the effect at
    every layer after it; None when there is no effect."""
    column = [row[-1] for row in patching.fractions]
    if any(f is None for f in column):
        return None
    layer = None
    for n in range(len(column) - 1, -1, -1):
        value = column[n]
        if value is None or value < CARRIES:
            break
        layer = patching.layers[n]
    return layer


@dataclass(frozen=True)
class Component:
    """One cell of a direction's component grid (schema.Components)."""

    kind: ComponentKind
    layer: int
    head: int | None  # the query head (0-based), for HEAD
    position: tuple[int, int]  # (s, t)
    source_token: str | None
    token: str
    fraction: float


def top_components(patching: Patching, count: int = 3) -> list[Component]:
    """The component cells that restore most of the effect, largest first (layer, then position order among equals);
    empty when there is no effect or no component grid."""
    grid = patching.components
    effect = patching.source_value - patching.unpatched
    if grid is None or not effect or patching.under is not None:
        return []
    cells: list[tuple[Cell, float]] = []
    for i, layer in enumerate(grid.layers):
        for kind, row in ((ComponentKind.ATTN, grid.attn[i]), (ComponentKind.MLP, grid.mlp[i])):
            cells += [(Cell(kind, layer, 0, j), value) for j, value in enumerate(row)]
        cells += [(Cell(ComponentKind.HEAD, layer, h, j), value) for h, row in enumerate(grid.head[i])
                  for j, value in enumerate(row)]
    ranked = sorted(cells, key=lambda c: -(c[1] - patching.unpatched) / effect)
    return [_component(patching, cell, (value - patching.unpatched) / effect) for cell, value in ranked[:count]]


def _component(patching: Patching, cell: Cell, fraction: float) -> Component:
    s, t = patching.positions[cell.position]
    source = patching.source_tokens[cell.position] if patching.source_tokens else None
    head = cell.head if cell.kind == ComponentKind.HEAD else None
    return Component(cell.kind, cell.layer, head, (s, t), source, patching.tokens[cell.position], fraction)


@dataclass(frozen=True)
class Verified:
    """One cell of the screen's top-k (schema.Screened) as the reports name it: the fraction of the effect its
    exact patch restores, and the fraction the screen estimated."""

    component: Component  # its fraction: the exact one
    estimate: float  # the estimated fraction
    graddrop: float | None  # AtP*'s GradDrop score as a fraction of |effect| (None where not recorded)


def verified_cells(patching: Patching) -> list[Verified]:
    """The screen's top-k in its own order (max(|estimate|, GradDrop) descending), each with its exact and its
    estimated fraction; empty when there is no effect, it is under the floor, or there is no screen."""
    grid = patching.components
    effect = patching.source_value - patching.unpatched
    if grid is None or not effect or patching.under is not None:
        return []
    found = []
    for cell in grid.screened:
        component = _component(patching, cell.cell, (cell.exact - patching.unpatched) / effect)
        found.append(Verified(component, cell.estimate / effect,
                              None if cell.graddrop is None else cell.graddrop / abs(effect)))
    return found


def top_verified(patching: Patching, count: int = 3) -> list[Verified]:
    """The screen's verified cells that restore most of the effect, by their exact fraction (the screen's order
    among equals): what a direction run with the screen alone can name."""
    return sorted(verified_cells(patching), key=lambda v: -v.component.fraction)[:count]
