"""The floor under tiny effects: a patched direction whose effect is within a few steps of its logits' dtype and
under a small number of logits has nothing a fraction, a ranking or a circuit could explain. Pure.

This is #53's interface (`Floor`, `spacing`, `under_floor`, set by --gotchas-patch-floor-steps and
--gotchas-patch-floor-logits), written here in its smallest form so that #55's edges stand on the same floor; #53's
module replaces this one whole at the merge.
"""

from __future__ import annotations

from dataclasses import dataclass

from .patching import spacing as _spacing


@dataclass(frozen=True)
class Floor:
    steps: float = 4.0  # steps of the metric's dtype at the logits' magnitude
    logits: float = 0.05  # and logits


def spacing(value: float, dtype: str) -> float:
    """The gap between |value| and the next larger number of ``dtype``; 0.0 where the resolution is unknown."""
    return _spacing(value, dtype)


def under_floor(effect: float, magnitude: float, dtype: str, floor: Floor) -> bool:
    """|effect| is below ``floor.steps`` steps of ``dtype`` at ``magnitude`` and below ``floor.logits`` logits."""
    return abs(effect) < floor.steps * spacing(magnitude, dtype) and abs(effect) < floor.logits
