"""bench/qkfix.py's estimate with the next layer's attention exact: on a model linear in its components it is the
plain estimate, which is there the exact change (tests/unit/scoring/test_screen.py)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from bench.qkfix import through_next  # noqa: E402
from helpers.lineartoy import linear_toy  # noqa: E402

from pytest_gotchas.results.vocabulary import ComponentKind  # noqa: E402
from pytest_gotchas.scoring import components as C  # noqa: E402
from pytest_gotchas.scoring.align import align  # noqa: E402
from pytest_gotchas.scoring.screen import _cells, _estimates, _gradients  # noqa: E402


def test_on_a_linear_model_the_next_attention_exact_is_the_plain_estimate() -> None:
    model = linear_toy()
    source, target = C.component_pass(model, (1, 4, 5, 6, 9)), C.component_pass(model, (1, 7, 5, 8, 9))
    ids = (2, 3)
    pairs = list(align(source.member.ids, target.member.ids).pairs)
    grads = _gradients(model, target, ids)[0]
    plain = _cells(_estimates(C.layer_blocks(model), source, target, pairs, grads))
    fixed = through_next(model, source, target, pairs, 1, grads[ComponentKind.ATTN][1])
    assert set(fixed) == {c for c in plain if c.layer == 1}
    assert fixed == pytest.approx({c: plain[c] for c in fixed}, rel=1e-3)
    assert any(fixed.values())
