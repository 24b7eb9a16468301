"""results/effects.py: the floor under every fraction, in steps of the metric's dtype and in logits."""

from __future__ import annotations

import math

from pytest_gotchas.results.effects import Floor, lead_under_floor, spacing, under_floor, why_under
from pytest_gotchas.results.vocabulary import Under


def test_spacing_is_the_dtype_step_at_a_value() -> None:
    assert spacing(10.5, "bfloat16") == 0.0625  # 8 <= |x| < 16: 2**3 / 2**7
    assert spacing(-10.5, "bfloat16") == 0.0625
    assert spacing(20.0, "bfloat16") == 0.125  # the 16..32: steps of 0.125
    assert spacing(20.0, "float16") == 2.0 ** -6
    assert spacing(1.0, "float32") == 2.0 ** -23
    assert spacing(0.0, "bfloat16") == spacing(1.0, "int8") == spacing(math.inf, "float32") == 0.0


def test_an_effect_is_under_the_floor_only_below_both_its_steps_and_its_logits() -> None:
    floor = Floor(steps=4, logits=0.05)
    assert under_floor(0.009, 20.0, "bfloat16", floor)  # SmolLM2's list-vs-set-reversed: under a step of 0.125
    assert not under_floor(0.3, 20.0, "bfloat16", floor)  # below 4 steps (0.5) but above 0.05 of a logit
    assert not under_floor(0.03, 0.5, "bfloat16", floor)  # below 0.05 but 7.7 steps of 2**-8 there
    assert not under_floor(-0.009, 20.0, "float32", floor)  # the floor moves with the dtype: 4 steps are 8e-6
    assert under_floor(4e-6, 20.0, "float32", floor)
    assert under_floor(0.0, 20.0, "", floor) and not under_floor(1e-9, 20.0, "", floor)  # unknown step: only 0


def test_why_a_direction_is_under_the_floor() -> None:
    floor = Floor(steps=4, logits=0.05)
    assert why_under(0.0, 20.0, "float32", floor) == Under.NO_EFFECT
    assert why_under(0.01, 20.0, "bfloat16", floor) == Under.FLOOR
    assert why_under(0.04, 20.0, "float32", floor, noise=0.0127) == Under.NOISE  # the Xeon's heads against o_proj
    assert why_under(0.06, 20.0, "float32", floor, noise=0.0127) is None
    assert why_under(3.0, 20.0, "bfloat16", floor) is None


def test_a_lead_after_a_layer_counts_only_above_the_floor() -> None:
    floor = Floor(steps=4, logits=0.05)
    assert lead_under_floor(0.25, 0.25, "bfloat16", floor)  # an exact tie
    assert lead_under_floor(0.4023, 0.3984, "bfloat16", floor)  # two steps of 2**-9 apart, log ratio 0.0098
    assert not lead_under_floor(0.41, 0.39, "bfloat16", floor)
    assert not lead_under_floor(0.4023, 0.3984, "float32", floor)  # in float32 they are far apart in steps
    assert not lead_under_floor(1e-6, 0.0, "bfloat16", floor)
