"""Whether an effect is worth explaining: the floor under every fraction of two small differences. Pure.

A patched direction's effect is source_value - unpatched, the metric (logit(correct) - logit(wrong) at the target's
cut) on the two members' own passes, in the dtype the metric's logits were computed in. Every fraction the reports
print divides by it: a cell's share of the effect, the screen's estimate, a component's share in a chapter. Where
the effect is a step or two of that dtype, the fraction is the rounding of the numerator divided by the rounding of
the denominator (SmolLM2's list-vs-set-reversed: an effect of 0.009 of a logit, in bfloat16 steps of 0.125 at that
magnitude, made a cell "restore 11808%"). Such a direction is "no difference to localize": its raw logit changes are
kept, and no fraction, ranking, colour or best component is computed from them.

The floor has two parts, both settings (--gotchas-patch-floor-steps, --gotchas-patch-floor-logits), and an effect is
under it when it is below both: ``steps`` steps of the metric's dtype at the metric's magnitude (the largest |logit|
of the four it is made of), so that it moves with the dtype (float32's steps are 2**16 times finer than
bfloat16's), and ``logits`` of a logit, so that a float32 metric does not explain differences no model's own
arithmetic resolves. The defaults come from the distribution of effects over the library on both embedded models
(bench/effects.py, bench/RESULTS.md).

A third reason is measured, not set: where a check whose premise is the kernels' own (the heads of a layer patched
together against the attention write, the shared prefix patched) found the kernels rounding a cell otherwise in
another shape, the largest such disagreement is noise inside every cell of that direction, and an effect within
``steps`` times it is under the floor too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .vocabulary import Under

MANTISSA_BITS = {"bfloat16": 7, "float16": 10, "float32": 23, "float64": 52}  # stored bits after the leading 1


@dataclass(frozen=True)
class Floor:
    """The floor under a fraction's denominator: an effect below ``steps`` steps of its dtype at its magnitude and
    below ``logits`` of a logit is too small to divide by (defaults: bench/RESULTS.md, "Effects worth explaining")."""

    steps: float = 3.0
    logits: float = 0.3


def spacing(value: float, dtype: str) -> float:
    """One step of ``dtype`` (a name of MANTISSA_BITS) at |value|: the gap between |value| and the next larger
    number of that dtype, the resolution of a logit of that size. 0.0 for 0, a value not finite or a dtype not
    listed (resolution unknown)."""
    bits = MANTISSA_BITS.get(dtype)
    if bits is None or value == 0 or not math.isfinite(value):
        return 0.0
    exponent = math.frexp(abs(value))[1] - 1  # abs(value) = 1.x * 2**exponent
    return math.ldexp(1.0, exponent - bits)


def under_floor(effect: float, magnitude: float, dtype: str, floor: Floor) -> bool:
    """True when |effect| is below ``floor.steps`` steps of ``dtype`` at ``magnitude`` and below ``floor.logits``.
    Where the dtype's step is unknown (spacing 0.0) only an effect of exactly 0 is under it."""
    size = abs(effect)
    if size == 0:
        return True
    return size < floor.steps * spacing(magnitude, dtype) and size < floor.logits


def least(magnitude: float, dtype: str, floor: Floor) -> float:
    """The smallest |change| not under the floor at ``magnitude``: under_floor(x) is |x| < least (x not 0)."""
    return min(floor.steps * spacing(magnitude, dtype), floor.logits)


def why_under(effect: float, magnitude: float, dtype: str, floor: Floor, noise: float = 0.0) -> Under | None:
    """Why a direction's effect is under the floor, or None when it is worth explaining: no effect at all, below
    the floor, or within ``floor.steps`` times the kernels' measured ``noise``."""
    if effect == 0:
        return Under.NO_EFFECT
    if under_floor(effect, magnitude, dtype, floor):
        return Under.FLOOR
    if abs(effect) <= floor.steps * noise:
        return Under.NOISE
    return None


def lead_under_floor(p_correct: float, p_wrong: float, dtype: str, floor: Floor) -> bool:
    """A lead after a layer (the logit lens, --gotchas-layers) that the floor does not let count: the two
    probabilities less than ``floor.steps`` steps of their softmax dtype apart at the larger, and their log ratio
    (the logit difference, for single tokens) below ``floor.logits``. An exact tie is always under it."""
    if p_correct == p_wrong:
        return True
    apart = abs(p_correct - p_wrong) < floor.steps * spacing(max(p_correct, p_wrong), dtype)
    if p_correct <= 0 or p_wrong <= 0:
        return False  # one side rounded to 0: an infinite log ratio, a lead however small the other
    return apart and abs(math.log(p_correct / p_wrong)) < floor.logits
