"""scoring/hooks.py: a hook lasts for its block, however the block ends, so that no pass after an error is patched
by a hook left behind."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from pytest_gotchas.scoring.hooks import Hooks, counting  # noqa: E402


def test_hooks_act_inside_the_block_and_are_gone_after_it_even_after_an_error() -> None:
    layer = torch.nn.Linear(2, 2, bias=False)
    torch.nn.init.eye_(layer.weight)
    x = torch.tensor([[1.0, 2.0]])
    with Hooks() as hooks:
        hooks.after(layer, lambda module, args, output: output * 10)
        hooks.before(layer, lambda module, args: (args[0] + 1,))
        assert layer(x).tolist() == [[20.0, 30.0]]
    assert layer(x).tolist() == [[1.0, 2.0]]
    with pytest.raises(RuntimeError, match="mid-pass"):
        with Hooks() as hooks:
            hooks.after(layer, lambda module, args, output: output * 10)
            raise RuntimeError("mid-pass")
    assert layer(x).tolist() == [[1.0, 2.0]]
    assert not layer._forward_hooks and not layer._forward_pre_hooks


def test_counting_counts_the_passes_inside_the_block_only() -> None:
    layer = torch.nn.Linear(2, 2)
    x = torch.zeros(1, 2)
    with Hooks() as hooks:
        calls = counting(hooks, layer)
        layer(x)
        layer(x)
    layer(x)
    assert calls == [2]
