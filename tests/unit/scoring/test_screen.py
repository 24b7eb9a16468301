"""scoring/screen.py: on a model linear in its components the screen's estimates are exact patching's changes, bit
for bit; on the tiny controllable model the screen ranks the head and the MLP it was built around in its top-k."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from pytest_gotchas.scoring import components as C  # noqa: E402
from pytest_gotchas.scoring.screen import screen  # noqa: E402
from pytest_gotchas.results.screening import screen_score  # noqa: E402

from helpers.lineartoy import linear_toy  # noqa: E402
from helpers.tinycomponents import component_model  # noqa: E402
from helpers.tinypatch import BOS, EQ, NO, YES, A, B, X, Y, Z  # noqa: E402
from pytest_gotchas.results.vocabulary import Cell, ComponentKind  # noqa: E402


def exact_cells(result):
    cells = {}
    for i, layer in enumerate(result.layers):
        for j in range(len(result.positions)):
            cells[Cell(ComponentKind.ATTN, layer, 0, j)] = result.attn[i][j]
            cells[Cell(ComponentKind.MLP, layer, 0, j)] = result.mlp[i][j]
            cells.update((Cell(ComponentKind.HEAD, layer, h, j), result.head[i][h][j]) for h in range(result.heads))
    return cells


def test_on_a_linear_model_the_screen_is_exact_patching() -> None:
    model = linear_toy()
    source, target = C.component_pass(model, (1, 4, 5, 6, 9)), C.component_pass(model, (1, 7, 5, 8, 9))
    ids = (2, 3)
    exact = exact_cells(C.patch_components(model, source, target, ids))
    screened = screen(model, source, target, ids, k=len(exact))
    assert screened.estimates == {cell: value - screened.unpatched for cell, value in exact.items()}
    assert screened.verified == exact  # every cell verified: k covers them all
    assert any(screened.estimates.values())  # the toy's patches do move the metric


def test_the_screen_ranks_the_built_in_head_and_mlp_and_verifies_them() -> None:
    torch.set_num_threads(1)
    model = component_model()
    source = C.component_pass(model, (BOS, 4, X, A, Y, Z, EQ))
    target = C.component_pass(model, (BOS, 5, X, B, Y, Z, EQ))
    ids = (NO, YES)
    exact = C.patch_components(model, source, target, ids)
    screened = screen(model, source, target, ids, k=4)
    cut = len(exact.positions) - 1
    assert {Cell(ComponentKind.HEAD, 1, 0, cut), Cell(ComponentKind.MLP, 2, 0, cut)} <= set(screened.top(4))
    cells = exact_cells(exact)
    assert all(screened.verified[c] == cells[c] for c in screened.verified)  # the verification is exact patching
    every = len(screened.estimates)
    score = screen_score(screened.top(every), screened.top(every, graddrop=False),
                         {c: v - exact.unpatched for c, v in cells.items()}, 4)
    # Three cells move the metric (attention 1, head 1.0 and MLP 2 at the cut): the screen ranks them first.
    assert (score.k, score.overlap, score.mass, sorted(score.found_at)) == (3, 3, 1.0, [1, 2, 3])


def test_graddrop_finds_the_component_whose_paths_cancel_where_attribution_patching_misses_it() -> None:
    from helpers.lineartoy import FILL, KEY_OFF, KEY_ON, NO, YES, cancelling_toy

    model = cancelling_toy()
    source, target = C.component_pass(model, (1, KEY_ON, FILL, FILL)), C.component_pass(model, (1, KEY_OFF, FILL, FILL))
    ids = (YES, NO)
    grid = C.patch_components(model, source, target, ids)
    cells = exact_cells(grid)
    effect = grid.source_value - grid.unpatched
    cut = len(grid.positions) - 1
    key = Cell(ComponentKind.ATTN, 1, 0, cut)
    assert effect == pytest.approx(3 - math.tanh(3), abs=1e-6)
    assert cells[key] - grid.unpatched == pytest.approx(effect, abs=1e-6)  # the write at the cut carries all of it
    assert cells[Cell(ComponentKind.HEAD, 1, 0, cut)] == cells[key]
    screened = screen(model, source, target, ids, k=2)
    assert screened.estimates[key] == 0.0  # its direct and its tanh path cancel in the gradient at the target's 0
    assert screened.graddrop[key] == pytest.approx(3.0)  # layer 2 held constant: the direct path alone, 3 x 1
    assert key not in screened.top(2, graddrop=False)  # attribution patching alone ranks it among the zeros
    assert {key, Cell(ComponentKind.HEAD, 1, 0, cut)} == set(screened.top(2))  # GradDrop ranks the write and its head first
    assert screened.verified[key] == cells[key]  # and the verification gives the exact value
    every = len(screened.estimates)
    score = screen_score(screened.top(every), screened.top(every, graddrop=False),
                         {c: v - grid.unpatched for c, v in cells.items()}, 2)
    assert score.found_at == [1, 2] and score.area > score.area_plain  # GradDrop finds the write first, |estimate| late


def test_with_the_float32_metric_the_screen_verifies_and_measures_as_the_grid_does() -> None:
    from pytest_gotchas.scoring.patching import _metric, _reading

    model = component_model()
    with torch.no_grad():  # the cut token's own direction, read so faintly that bfloat16 logits round it away
        model.lm_head.weight[NO, EQ], model.lm_head.weight[YES, EQ] = 2 ** -8, -2 ** -8
    source = C.component_pass(model, (BOS, 4, X, A, Y, Z, EQ))
    target = C.component_pass(model, (BOS, 5, X, B, Y, Z, EQ))
    ids = (NO, YES)
    grid = C.patch_components(model, source, target, ids, metric="float32")
    screened = screen(model, source, target, ids, k=4, metric="float32")
    assert grid.unpatched != _metric(_reading(target.member.logits, ids))  # the two metrics differ here
    assert screened.unpatched == grid.unpatched  # fractions of the screen and of the grid share one unpatched
    cells = exact_cells(grid)
    assert screened.verified and all(screened.verified[c] == cells[c] for c in screened.verified)
