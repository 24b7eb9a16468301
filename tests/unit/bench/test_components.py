"""bench/components.py's FLOP counts: the component grid costs about (3 + heads) residual rows per position, one
layer more each; the screen is a few passes and k cells, whatever the grid's size."""

from __future__ import annotations

from bench.components import BIGGER, component_flops, residual_flops, screen_flops
from bench.patching import Shape

TOY = Shape("toy", 4, 8, 16, 2, 1, 4, 32)


def test_the_counts_follow_the_layers_each_row_runs() -> None:
    layer = 2 * TOY.layer_params
    assert residual_flops(TOY, 10, 3) == 3 * 6 * 10 * layer  # rows x (0+1+2+3) layer passes x tokens
    assert component_flops(TOY, 10, 2) == (2 * 5 + 6) * 10 * 10 * layer  # rows x (1+2+3+4) x tokens
    assert screen_flops(TOY, 10, 4, graddrop=False) == 3 * 4 * 10 * layer + 4 * 3 * 10 * layer
    assert screen_flops(TOY, 10, 4) - screen_flops(TOY, 10, 4, graddrop=False) == 3 * 2 * 4 * 10 * layer  # 3 drops


def test_the_projection_names_a_2b_a_9b_and_a_70b_model() -> None:
    assert [s.name for s in BIGGER] == ["gemma-2-2b", "gemma-2-9b", "Llama-3-70B"]
    assert screen_flops(BIGGER[2], 100, 20) < component_flops(BIGGER[2], 100, 10) / 100
