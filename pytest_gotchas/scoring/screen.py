"""The screened method: attribution patching of every component at every aligned position (components.py's cells)
from the members' two forward passes and one backward pass on the target, then the top-k cells verified by exact
patching (Nanda 2023; AtP*, Kramar et al. 2024, arXiv 2403.00745).

estimate(component at s -> t) = (source activation at s - target activation at t) . d metric / d activation at t,
the gradient taken on the target's own pass: the first-order change of the metric a patch there would make. It is a
screen: saturated attention and cancellation (AtP*'s failure modes; TransformerLens's demo: "the main place it fails
is MLP0 and the residual stream") make estimates wrong, so every estimate that is reported beside its cell's exact
value, and the top-k are patched exactly (components.py's rows, a pass each layer).

Cancellation, AtP*'s GradDrop: a component whose paths to the metric cancel in the gradient at the target's
activations (a direct path +g, a path through a later block -g) gets an estimate near 0 even where its patch moves the
metric far, because the later block is not linear over the patch's range. GradDrop takes, for each layer l, the
gradient with layer l's attention and MLP writes held constant in the backward pass (no gradient flows through them
into what they read), and scores a cell of layer m by the mean over l != m of |estimate with layer l dropped| (for
l < m that is the plain |estimate|). The same forward pass serves every l (one backward each: layers - 1 more).
Cells are ranked by the larger of |estimate| and that score, so a cell enters the top-k by GradDrop only where its
score exceeds its plain estimate: where cancellation is suspected. The score is a magnitude, not a signed
estimate; the verification says what the patch really does.

AtP*'s QK fix is not used, for a measured reason. It recomputes the attention softmax exactly for patched queries
and keys; this screen's nodes are head outputs and block writes, not queries or keys, but a write at a position
before the cut reaches the metric through the keys, values and queries of the next layers, so bench/qkfix.py carries
the fix to them: the cell patched exactly through its own layer and the next layer's attention, the gradient taken
from there. On the sets chapter (both embedded models, float32 metric; bench/RESULTS.md, "Effects worth
explaining") it leaves layer 1's estimates as far from their exact changes as before and the screen's curve where it
was: what the linear estimate misses in layer 1 is not the next softmax. The earlier finding that the screen "misses
layer 1 almost entirely" (164 of 171 cells of 10% or more) was the 10% line's: layer 1's cells are many and small,
and few of them are among a direction's exact top-20 (results/screening.py judges the screen by those).

Gradients: in the model's dtype, through the model's own pass. The screen linearises around the very activations that
exact patching replaces; a float32 copy of the weights would linearise around other activations (and hold a second
copy of the model). The dot products are summed in float32. On a model linear in its components the estimate is the
exact change (tests/unit/scoring/test_screen.py), so what the screen misses on a real model is its nonlinearity.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from .align import align
from .components import ComponentPass, Patch, _run_layer, _vector, layer_blocks
from .head import float32_head
from .hooks import Hooks
from .patching import Ids, _hidden, _metric, _own_readings, _with_hidden
from ..results.vocabulary import Cell, ComponentKind, PatchMetric

DEFAULT_K = 20

@dataclass(frozen=True)
class Screened:
    """One direction's screen: every cell's estimated change of the metric, its GradDrop score, and the top-k
    verified exactly."""

    estimates: dict[Cell, float]  # estimated cell - unpatched
    verified: dict[Cell, float]  # exact cell value (the metric) of the top-k
    unpatched: float
    seconds: float  # the backward passes and the estimates
    verify_seconds: float  # the exact passes of the top-k
    graddrop: dict[Cell, float]  # AtP*'s GradDrop score (a magnitude); empty where it was not computed

    def score(self, cell: Cell, graddrop: bool = True) -> float:
        """What the ranking uses: the larger of |estimate| and the GradDrop score (``graddrop``), else |estimate|."""
        plain = abs(self.estimates[cell])
        return max(plain, self.graddrop.get(cell, 0.0)) if graddrop else plain

    def top(self, k: int, graddrop: bool = True) -> list[Cell]:
        return sorted(self.estimates, key=lambda c: -self.score(c, graddrop))[:k]


def _gate(drop: list[int], k: int) -> Any:
    """An identity whose backward passes no gradient while ``drop[0] == k``: layer k's write held constant."""
    import torch

    class Gate(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, value: Any) -> Any:
            return value.clone()

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return torch.zeros_like(grad) if drop[0] == k else grad

    return Gate.apply


def _gradients(model: Any, target: ComponentPass, ids: Ids, graddrop: bool = False) -> list[dict[ComponentKind, Any]]:
    """d metric / d activation for every component kind, on the target's own pass: [layers, positions, width]; with
    ``graddrop``, then the same with layer l's writes held constant, for l = 2..layers (one forward pass for all)."""
    import torch

    found = layer_blocks(model)
    kept: dict[tuple[str, int], Any] = {}
    drop = [0]

    def gate(k: int) -> Any:
        through = _gate(drop, k)
        return lambda module, args, output: _with_hidden(output, through(_hidden(output)))

    def keep(kind: str, k: int, pre: bool = False) -> Any:
        def hook(module: Any, args: Any, output: Any = None) -> None:
            kept[(kind, k)] = args[0] if pre else _hidden(output)
        return hook

    # Where the weights do not require gradients (a loaded model), the embeddings' output is made to.
    order = [(kind, k) for kind in tuple(ComponentKind) for k in range(len(found))]
    passes = []
    try:
        with Hooks() as hooks, torch.enable_grad():
            hooks.after(model.get_input_embeddings(),
                        lambda module, args, output: None if output.requires_grad else output.requires_grad_())
            for k, b in enumerate(found):  # the gates first: the kept writes are the gates' outputs
                hooks.after(b.attn, gate(k + 1))
                hooks.after(b.mlp, gate(k + 1))
                hooks.after(b.attn, keep(ComponentKind.ATTN, k))
                hooks.after(b.mlp, keep(ComponentKind.MLP, k))
                hooks.before(b.o_proj, keep(ComponentKind.HEAD, k, pre=True))
            logits = model(input_ids=torch.tensor([list(target.member.ids)], device=model.device), logits_to_keep=1,
                           use_cache=False).logits[0, -1]
            metric = logits[ids[0]].float() - logits[ids[1]].float()
            for dropped in [0, *(range(2, len(found) + 1) if graddrop else ())]:
                drop[0] = dropped
                grads = torch.autograd.grad(metric, [kept[key] for key in order], retain_graph=True,
                                            allow_unused=True)
                by = {key: (torch.zeros_like(kept[key]) if g is None else g) for key, g in zip(order, grads)}
                passes.append({kind: torch.stack([by[(kind, k)][0].detach().to(logits.device)
                                                  for k in range(len(found))]) for kind in tuple(ComponentKind)})
    finally:
        model.zero_grad(set_to_none=True)
    return passes


def _estimates(found: list[Any], source: ComponentPass, target: ComponentPass, pairs: list[tuple[int, int]],
               grads: dict[ComponentKind, Any]) -> dict[ComponentKind, Any]:
    """Per kind, (source - target activation) . gradient: [layers, pairs] ([layers, pairs, heads] for heads)."""
    import torch

    activations = {ComponentKind.ATTN: (source.attn, target.attn), ComponentKind.MLP: (source.mlp, target.mlp),
                   ComponentKind.HEAD: (source.heads, target.heads)}
    out = {}
    for kind, (mine, theirs) in activations.items():
        delta = torch.stack([(mine[:, s] - theirs[:, t]).float() for s, t in pairs], dim=1)
        grad = torch.stack([grads[kind][:, t].float() for _, t in pairs], dim=1)
        product = delta * grad
        per_head = kind == ComponentKind.HEAD
        out[kind] = (product.reshape(*delta.shape[:2], found[0].heads, found[0].head_dim).sum(-1) if per_head
                     else product.sum(-1))
    return out


def _cells(per: dict[ComponentKind, Any]) -> dict[Cell, float]:
    cells: dict[Cell, float] = {}
    for kind, values in per.items():
        if kind == ComponentKind.HEAD:
            cells.update((Cell(kind, layer + 1, h, j), float(values[layer, j, h])) for layer in range(values.shape[0])
                         for j in range(values.shape[1]) for h in range(values.shape[2]))
        else:
            cells.update((Cell(kind, layer + 1, 0, j), float(values[layer, j])) for layer in range(values.shape[0])
                         for j in range(values.shape[1]))
    return cells


def _graddrop(plain: dict[ComponentKind, Any], dropped: list[dict[ComponentKind, Any]]) -> dict[Cell, float]:
    """AtP*'s GradDrop score of every cell: for a cell of layer m, the mean over l != m of |its estimate with layer
    l's writes held constant|; dropped[i] holds the estimates with layer i + 2 dropped (for l < m, the plain one)."""
    layers = next(iter(plain.values())).shape[0]
    if layers < 2:
        return {cell: abs(value) for cell, value in _cells(plain).items()}
    scores = {}
    for kind, values in plain.items():
        total = values.abs() * 0
        for m in range(layers):
            total[m] = sum(values[m].abs() if ell < m + 1 else dropped[ell - 2][kind][m].abs()
                           for ell in range(1, layers + 1) if ell != m + 1)
        scores[kind] = total / (layers - 1)
    return _cells(scores)


def screen(model: Any, source: ComponentPass, target: ComponentPass, ids: Ids, k: int = DEFAULT_K,
           graddrop: bool = True, metric: PatchMetric = PatchMetric.MODEL) -> Screened:
    """Estimates of every component cell of one direction (with ``graddrop``, their GradDrop scores, and the ranking
    by the larger of the two), and the exact value of the top ``k`` with head.py's ``metric`` (``unpatched`` too, so
    that fractions compare with components.py's grid of the same metric; the gradient is the model's own)."""
    from contextlib import nullcontext

    import torch

    alignment = align(source.member.ids, target.member.ids)
    found = layer_blocks(model)
    started = time.perf_counter()
    passes = _gradients(model, target, ids, graddrop)
    pairs = list(alignment.pairs)
    plain = _estimates(found, source, target, pairs, passes[0])
    estimates = _cells(plain)
    scores = (_graddrop(plain, [_estimates(found, source, target, pairs, g) for g in passes[1:]]) if graddrop
              else {})
    seconds = time.perf_counter() - started
    unpatched = _metric(_own_readings(model, source.member, target.member, ids, metric)[0])
    ranked = Screened(estimates, {}, unpatched, seconds, 0.0, scores)
    top = ranked.top(k, graddrop)
    started = time.perf_counter()
    verified: dict[Cell, float] = {}
    with torch.inference_mode(), float32_head(model, ids) if metric == PatchMetric.FLOAT32 else nullcontext():
        for layer in sorted({c.layer for c in top}):
            cells = [c for c in top if c.layer == layer]
            rows = [[Patch(layer, c.kind, c.head, alignment.pairs[c.position][1],
                           _vector(source, c.kind, layer, c.head, alignment.pairs[c.position][0],
                                   found[layer - 1].head_dim))]
                    for c in cells]
            readings = _run_layer(model, target, layer, rows, ids, batched=False)
            verified.update((cell, _metric(r)) for cell, r in zip(cells, readings))
    return Screened(estimates, verified, unpatched, seconds, time.perf_counter() - started, scores)
