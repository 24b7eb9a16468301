"""AtP*'s QK fix, carried to this screen's nodes: a cell's estimate with the next layer's attention computed exactly.

AtP* (Kramar et al. 2024, arXiv 2403.00745, section 3.1.1) corrects attribution patching where a node feeds an
attention softmax: for a query or key node it recomputes the attention pattern exactly with the patched query or key
and takes the gradient only from there on. This screen's nodes are head outputs and block writes, not queries or
keys; but a write at an aligned position t before the cut reaches the metric only through the keys, values and
queries at t of the layers after it, so its first-order estimate linearises the very softmax the fix is about. Here a
cell of layer L is patched exactly through layer L (its own MLP, post-norms and, for a head, o_proj) and through the
attention block of layer L + 1 at every position (the softmax over the patched keys and queries included), and the
gradient takes it from there: estimate = d metric / d r' . (r' patched - r'), where r' is the residual stream after
layer L + 1's attention write (the gradient the screen already has: that of layer L + 1's attention write, at every
position). The cells of the last layer have no next attention: their exact value is the estimate.

Cost: the rows of a layer's exact batch, run through one layer and one attention block instead of every layer
after it. torch is imported inside the functions that need it.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

from .components import ComponentPass, Patch, _patched, _vector, layer_blocks
from .hooks import Hooks
from .patching import _StartedAt, _forward, _hidden, find_layers
from ..results.vocabulary import Cell, ComponentKind


class _Enough(Exception):
    """Raised by a hook once the next layer's attention write is kept: nothing after it is computed."""


def through_next(model: Any, source: ComponentPass, target: ComponentPass, pairs: list[tuple[int, int]], layer: int,
                 grad_next: Any) -> dict[Cell, float]:
    """The estimates of every cell of ``layer`` (all kinds, every aligned pair) with layer + 1's attention exact;
    ``grad_next`` is d metric / d (layer + 1's attention write), [positions, hidden], on the target's own pass."""
    import torch

    found, layers = layer_blocks(model), find_layers(model)[1]
    b = found[layer - 1]
    kinds = [(ComponentKind.ATTN, 0), (ComponentKind.MLP, 0), *((ComponentKind.HEAD, h) for h in range(b.heads))]
    cells = [Cell(kind, layer, head, j) for j in range(len(pairs)) for kind, head in kinds]
    rows = [[Patch(layer, c.kind, c.head, pairs[c.position][1],
                   _vector(source, c.kind, layer, c.head, pairs[c.position][0], b.head_dim))] for c in cells]
    member = target.member
    kept: dict[str, Any] = {}

    def keep_residual(module: Any, args: Any, output: Any) -> None:
        kept["residual"] = _hidden(output)

    def keep_write(module: Any, args: Any, output: Any) -> None:
        kept["write"] = _hidden(output)
        raise _Enough

    start = (_StartedAt(layers, layer - 1, member.states[layer - 2].unsqueeze(0).repeat(len(rows), 1, 1),
                        member.tuple_output) if layer > 1 else nullcontext())
    with torch.inference_mode(), start, _patched(found, rows), Hooks() as hooks:
        hooks.after(layers[layer - 1], keep_residual)
        hooks.after(found[layer].attn, keep_write)
        try:
            _forward(model, member.ids, len(rows))
        except _Enough:
            pass
        moved = (kept["residual"].float() - member.states[layer - 1].float()) + \
            (kept["write"].float() - target.attn[layer].float())
        values = (moved * grad_next.float()).sum(dim=(1, 2))
    return {cell: float(v) for cell, v in zip(cells, values)}
