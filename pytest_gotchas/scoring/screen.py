"""The screened method: attribution patching of every component at every aligned position (components.py's cells)
from the members' two forward passes and one backward pass on the target, then the top-k cells verified by exact
patching (Nanda 2023; AtP*, Kramar et al. 2024, arXiv 2403.00745).

estimate(component at s -> t) = (source activation at s - target activation at t) . d metric / d activation at t,
the gradient taken on the target's own pass: the first-order change of the metric a patch there would make. It is a
screen: saturated attention and cancellation (AtP*'s failure modes; TransformerLens's demo: "the main place it fails
is MLP0 and the residual stream") make estimates wrong, so every estimate that is reported beside its cell's exact
value, and the top-k by |estimate| are patched exactly (components.py's rows, a pass each layer). AtP*'s QK fix and
GradDrop are not implemented: where they matter, the verified values say how far the screen was off.

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
from .components import ATTN, HEAD, MLP, ComponentPass, Patch, _run_layer, _vector, layer_blocks
from .patching import Ids, _metric, _reading

DEFAULT_K = 20

Cell = tuple[str, int, int, int]  # (kind, layer, head (0 unless a head), aligned pair index)


@dataclass(frozen=True)
class Screened:
    """One direction's screen: every cell's estimated change of the metric, and the top-k verified exactly."""

    estimates: dict[Cell, float]  # estimated cell - unpatched
    verified: dict[Cell, float]  # exact cell value (the metric) of the top-k by |estimate|
    unpatched: float
    seconds: float  # the backward pass and the estimates
    verify_seconds: float  # the exact passes of the top-k

    def top(self, k: int) -> list[Cell]:
        return sorted(self.estimates, key=lambda c: -abs(self.estimates[c]))[:k]


def _gradients(model: Any, target: ComponentPass, ids: Ids) -> dict[str, Any]:
    """d metric / d activation for every component kind, on the target's own pass: [layers, positions, width]."""
    import torch

    found = layer_blocks(model)
    kept: dict[tuple[str, int], Any] = {}

    def keep(kind: str, k: int, pre: bool = False) -> Any:
        def hook(module: Any, args: Any, output: Any = None) -> None:
            value = args[0] if pre else (output[0] if isinstance(output, tuple) else output)
            value.retain_grad()
            kept[(kind, k)] = value
        return hook

    # Where the weights do not require gradients (a loaded model), the embeddings' output is made to.
    handles = [model.get_input_embeddings().register_forward_hook(
        lambda module, args, output: None if output.requires_grad else output.requires_grad_())]
    for k, b in enumerate(found):
        handles += [b.attn.register_forward_hook(keep(ATTN, k)), b.mlp.register_forward_hook(keep(MLP, k)),
                    b.o_proj.register_forward_pre_hook(keep(HEAD, k, pre=True))]
    try:
        with torch.enable_grad():
            logits = model(input_ids=torch.tensor([list(target.member.ids)], device=model.device), logits_to_keep=1,
                           use_cache=False).logits[0, -1]
            (logits[ids[0]].float() - logits[ids[1]].float()).backward()
    finally:
        for handle in handles:
            handle.remove()
        model.zero_grad(set_to_none=True)
    return {kind: torch.stack([kept[(kind, k)].grad[0].to(logits.device) for k in range(len(found))])
            for kind in (ATTN, MLP, HEAD)}


def screen(model: Any, source: ComponentPass, target: ComponentPass, ids: Ids, k: int = DEFAULT_K) -> Screened:
    """Estimates of every component cell of one direction, and the exact value of the top ``k``."""
    import torch

    alignment = align(source.member.ids, target.member.ids)
    found = layer_blocks(model)
    started = time.perf_counter()
    grads = _gradients(model, target, ids)
    activations = {ATTN: (source.attn, target.attn), MLP: (source.mlp, target.mlp), HEAD: (source.heads, target.heads)}
    estimates: dict[Cell, float] = {}
    for kind, (mine, theirs) in activations.items():
        delta = torch.stack([(mine[:, s] - theirs[:, t]).float() for s, t in alignment.pairs], dim=1)
        grad = torch.stack([grads[kind][:, t].float() for _, t in alignment.pairs], dim=1)
        if kind == HEAD:
            dim = found[0].head_dim
            per = (delta * grad).reshape(*delta.shape[:2], found[0].heads, dim).sum(-1)  # [layers, pairs, heads]
            estimates.update(((kind, layer + 1, h, j), float(per[layer, j, h]))
                             for layer in range(per.shape[0]) for j in range(per.shape[1]) for h in range(per.shape[2]))
        else:
            per = (delta * grad).sum(-1)
            estimates.update(((kind, layer + 1, 0, j), float(per[layer, j]))
                             for layer in range(per.shape[0]) for j in range(per.shape[1]))
    seconds = time.perf_counter() - started
    unpatched = _metric(_reading(target.member.logits, ids))
    top = sorted(estimates, key=lambda c: -abs(estimates[c]))[:k]
    started = time.perf_counter()
    verified: dict[Cell, float] = {}
    with torch.inference_mode():
        for layer in sorted({c[1] for c in top}):
            cells = [c for c in top if c[1] == layer]
            rows = [[Patch(layer, kind, head, alignment.pairs[j][1],
                           _vector(source, kind, layer, head, alignment.pairs[j][0], found[layer - 1].head_dim))]
                    for kind, _, head, j in cells]
            readings = _run_layer(model, target, layer, rows, ids, batched=False)
            verified.update((cell, _metric(r)) for cell, r in zip(cells, readings))
    return Screened(estimates, verified, unpatched, seconds, time.perf_counter() - started)


def recall(screened: Screened, exact: dict[Cell, float], effect: float, k: int, at_least: float = 0.1
           ) -> dict[str, tuple[int, int]]:
    """Per component kind: (exact cells whose |fraction| >= at_least that the screen's top-k holds, how many there
    are). ``exact`` maps each cell to its exact metric value."""
    top = set(screened.top(k))
    out: dict[str, tuple[int, int]] = {}
    for kind in (ATTN, MLP, HEAD):
        big = [c for c, v in exact.items() if c[0] == kind and effect and abs((v - screened.unpatched) / effect)
               >= at_least]
        out[kind] = (sum(c in top for c in big), len(big))
    return out
