"""scoring/attention.py: the attention weights of chosen heads at the cut, on the tiny component model whose layer 1
attends uniformly (q = k = 0) and whose layer 2 has no query weights either."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from pytest_gotchas.scoring.attention import cut_patterns  # noqa: E402

from helpers.tinycomponents import component_model  # noqa: E402
from helpers.tinypatch import BOS, EQ, X, Y, Z, A  # noqa: E402


def test_the_uniform_heads_read_every_token_alike_and_the_model_keeps_its_attention() -> None:
    model = component_model()
    before = model.config._attn_implementation
    ids = (BOS, 4, X, A, Y, Z, EQ)
    found = cut_patterns(model, ids, [(1, 0), (2, 1)])
    assert set(found) == {(1, 0), (2, 1)}
    for weights in found.values():  # one bfloat16 value, 1/7 rounded, at every position
        assert len(set(weights)) == 1 and weights[0] == pytest.approx(1 / len(ids), rel=2 ** -8)
    assert model.config._attn_implementation == before
    assert cut_patterns(model, ids, []) == {}


def test_a_direction_s_components_name_the_head_that_carries_it_and_where_it_reads() -> None:
    from pytest_gotchas.scoring import components as C
    from pytest_gotchas.scoring.pairpatch import _components

    from helpers.tinypatch import NO, YES, B

    model = component_model()
    source = C.component_pass(model, (BOS, 4, X, A, Y, Z, EQ))
    target = C.component_pass(model, (BOS, 5, X, B, Y, Z, EQ))
    grid = _components(model, source, target, (NO, YES), "model", 4, lambda i: f"t{i}")
    # Only head 1.0 at the cut moves the metric among the heads there (head 1.1 and layer 2's write nothing).
    assert [(p.layer, p.head) for p in grid.patterns] == [(1, 0)]
    assert grid.patterns[0].tokens == [f"t{i}" for i in target.member.ids]
    assert len(set(grid.patterns[0].weights)) == 1  # q = k = 0: it reads every token alike
    assert grid.score is not None and (grid.score.k, grid.score.overlap, grid.score.mass) == (3, 3, 1.0)
    assert all(s.graddrop is not None for s in grid.screened)


def test_the_screen_alone_verifies_the_same_cells_as_beside_the_grid_and_says_what_it_cannot() -> None:
    """--gotchas-patch-screen: the same top-k, the same estimates and the same exact values bit for bit as the
    screen beside the exact grid, without the grid; no score (it needs the grid) and the top heads' patterns come
    from the verified cells."""
    from pytest_gotchas.scoring import components as C
    from pytest_gotchas.results.vocabulary import PatchMetric, PatchMode
    from pytest_gotchas.scoring.pairpatch import SCREEN_ONLY, _components

    from helpers.tinypatch import NO, YES, B

    model = component_model()
    source = C.component_pass(model, (BOS, 4, X, A, Y, Z, EQ))
    target = C.component_pass(model, (BOS, 5, X, B, Y, Z, EQ))
    both = _components(model, source, target, (NO, YES), PatchMetric.MODEL, 4, lambda i: f"t{i}",
                       PatchMode.COMPONENTS)
    alone = _components(model, source, target, (NO, YES), PatchMetric.MODEL, 4, lambda i: f"t{i}", PatchMode.SCREEN)
    assert (both.method, alone.method) == ("exact", "screen")
    assert alone.screened == both.screened and len(alone.screened) == 4  # cells, estimates, exact values, GradDrop
    assert alone.layers == alone.attn == alone.mlp == alone.head == []
    assert alone.score is None and alone.checks == [SCREEN_ONLY]
    assert alone.patterns == both.patterns and [(p.layer, p.head) for p in alone.patterns] == [(1, 0)]
    assert (alone.heads, alone.post_norms) == (both.heads, both.post_norms)
    assert alone.grid_seconds == 0.0 < both.grid_seconds
    assert all(c.screen_seconds > 0.0 and c.verify_seconds > 0.0 for c in (both, alone))
