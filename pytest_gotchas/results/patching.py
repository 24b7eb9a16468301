"""What a patched direction (schema.Patching) says, as facts the reports put in words: the cell that restores most
of the effect, and from which layer the last position carries it. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from .schema import Patching

CARRIES = 0.5  # the last position "carries" the effect from the lowest layer after which it restores at least this


@dataclass(frozen=True)
class Strongest:
    layer: int
    position: tuple[int, int]  # (s, t)
    token: str  # the target's token at t
    fraction: float  # of the effect restored


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
    return Strongest(patching.layers[-i], (s, t), patching.tokens[-j], fraction)


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
