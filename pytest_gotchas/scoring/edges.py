"""Edge attribution inside a pair (--gotchas-patch-edges): EAP and EAP-IG scores of every edge of a direction's graph
(edgegraph.py), on patching's metric in float32.

An edge's score estimates how far the metric moves when that edge alone reads the source's write instead of the
target's: (source's write - target's write) . d metric / d (the input's residual stream), the gradient taken at the
input's own residual stream, before the input's norm, so that it is the input's alone (the stream feeds every input
of a layer through one norm; each input's gradient is pulled back through that norm by itself, exactly, in float32).

- EAP (Syed et al. 2023; Nanda's attribution patching): the gradient at the target's own pass.
- EAP-IG (Hanna, Pezzelle and Belinkov 2024, "Have Faith in Faithfulness"): the gradient averaged over ``steps``
  passes whose embeddings at the aligned positions run from the source's to the target's, k/steps of the way for k =
  0..steps-1, as their library's inputs variant does (MIB's EAP-IG-inputs). The two members differ in length, so an
  interpolated pass is the target's, positions and all, with the source's embeddings at the aligned positions.

The metric is patching's, logit(correct) - logit(wrong) of the target at its cut, computed in float32 from the
final norm's output (head.py), and every gradient and product is taken in float32 from the model's own activations.
All rows (the EAP-IG steps and the target's own) are one batch of forward and backward passes, chunked.

torch is imported inside the functions that need it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .edgegraph import Graph, Writes, edge_blocks, final_norm
from .head import Float32Head, head_of
from .hooks import Hooks
from .patching import Ids

CHUNK = 8  # rows per forward and backward pass


@dataclass(frozen=True)
class Scores:
    """[positions, inputs, nodes] float32 tensors of one direction (0 where there is no edge)."""

    eap: Any
    eap_ig: Any
    exists: Any  # bool
    passes: int  # forward passes, each with a backward pass


def _metric(model: Any, ids: Ids, head_input: Any) -> Any:
    """The float32 metric of each row [rows] from the head's input at the last position [rows, hidden]."""
    import torch

    head = Float32Head(model, ids)
    logits = head.product(head_input)
    if head.cap is not None:
        logits = torch.tanh(logits / head.cap) * head.cap
    return logits[:, 0] - logits[:, 1]


def pull_back(norm: Any, stream: Any, wanted: Any) -> Any:
    """The gradient at the residual stream ``stream`` [rows, positions, hidden] of each of several inputs that read
    it through ``norm``: ``wanted`` [inputs, rows, positions, hidden] is each one's gradient at the norm's output."""
    import torch

    with torch.enable_grad():
        x = stream.detach().float().expand(wanted.shape[0], *stream.shape).clone().requires_grad_()
        (grad,) = torch.autograd.grad((norm.forward(x) * wanted).sum(), x)
    return grad


def _slices(weight: Any, grad: Any, count: int, dim: int) -> Any:
    """Each head's gradient at the norm's output through its slice of a projection: [count, rows, positions, hidden]."""
    import torch

    w = weight.float().view(count, dim, -1)
    g = grad.float().view(*grad.shape[:2], count, dim)
    return torch.einsum("rphd,hdD->hrpD", g, w)


def _kept(model: Any, graph: Graph, hooks: Hooks, alphas: list[float], embeds: tuple[Any, Any]) -> dict[str, Any]:
    """Hooks for a gradient pass: the embeddings interpolated per row, and what each input's gradient needs kept."""
    import torch

    kept: dict[str, Any] = {}
    at = torch.tensor([t for _, t in graph.positions])
    source, target = embeds

    def embed(module: Any, args: Any, output: Any) -> Any:
        out = output.detach().clone()
        for r, alpha in enumerate(alphas):
            if alpha != 1.0:
                out[r, at] = (source + alpha * (target - source)).to(out.dtype)
        return out.requires_grad_()

    def keep(name: str, pre: bool) -> Any:
        if pre:
            return lambda module, args: kept.__setitem__(name, args[0])
        return lambda module, args, output: kept.__setitem__(name, output)

    hooks.after(model.get_input_embeddings(), embed)
    for layer, b in enumerate(edge_blocks(model), start=1):
        hooks.before(b.input_norm, keep(f"pre{layer}", True))
        for name, module in (("q", b.q), ("k", b.k), ("v", b.v)):
            hooks.after(module, keep(f"{name}{layer}", False))
        hooks.before(b.mlp_norm, keep(f"mid{layer}", True))
        hooks.before(b.mlp, keep(f"mlp{layer}", True))
    hooks.before(final_norm(model), keep("final", True))
    hooks.before(head_of(model), keep("head", True))
    return kept


def _chunk_gradients(model: Any, graph: Graph, ids: Ids, target_ids: tuple[int, ...], alphas: list[float],
                     embeds: tuple[Any, Any]) -> Any:
    """[rows, positions, inputs, hidden]: every input's gradient at its residual stream, per row."""
    import torch

    at = torch.tensor([t for _, t in graph.positions])
    found = edge_blocks(model)
    out = torch.zeros(len(alphas), len(at), graph.inputs, embeds[0].shape[-1])
    with Hooks() as hooks, torch.enable_grad():
        kept = _kept(model, graph, hooks, alphas, embeds)
        model(input_ids=torch.tensor([list(target_ids)] * len(alphas), device=model.device), logits_to_keep=1,
              use_cache=False)
        metric = _metric(model, ids, kept["head"][:, -1]).sum()
        names = [f"{n}{layer}" for layer in range(1, graph.layers + 1) for n in ("q", "k", "v", "mlp")] + ["head"]
        grads = dict(zip(names, torch.autograd.grad(metric, [kept[n] for n in names], allow_unused=True)))
    zero = lambda name: torch.zeros_like(kept[name]) if grads[name] is None else grads[name]  # noqa: E731
    for layer, b in enumerate(found, start=1):
        wanted = torch.cat([_slices(b.q.weight, zero(f"q{layer}")[:, at], graph.heads, graph.head_dim),
                            _slices(b.k.weight, zero(f"k{layer}")[:, at], graph.kv_heads, graph.head_dim),
                            _slices(b.v.weight, zero(f"v{layer}")[:, at], graph.kv_heads, graph.head_dim)])
        first = graph.first_input(layer)
        out[:, :, first:first + len(wanted)] = pull_back(b.input_norm, kept[f"pre{layer}"][:, at],
                                                         wanted).permute(1, 2, 0, 3).cpu()
        mlp = pull_back(b.mlp_norm, kept[f"mid{layer}"][:, at], zero(f"mlp{layer}")[:, at].float()[None])
        out[:, :, first + len(wanted)] = mlp[0].cpu()
    last = pull_back(final_norm(model), kept["final"][:, -1:], zero("head")[:, -1:].float()[None])
    out[:, -1, graph.inputs - 1] = last[0, :, 0].cpu()
    return out


def gradients(model: Any, graph: Graph, ids: Ids, target_ids: tuple[int, ...], source: Writes, target: Writes,
              steps: int) -> tuple[Any, Any, int]:
    """The gradients of EAP (the target's own pass) and of EAP-IG (the mean over ``steps`` interpolated passes),
    each [positions, inputs, hidden], and the passes they took."""
    alphas = [k / steps for k in range(steps)] + [1.0]
    embeds = (source.nodes[0, [s for s, _ in graph.positions], 0], target.nodes[0, [t for _, t in graph.positions], 0])
    rows = []
    try:
        for first in range(0, len(alphas), CHUNK):
            rows.append(_chunk_gradients(model, graph, ids, target_ids, alphas[first:first + CHUNK], embeds))
    finally:
        model.zero_grad(set_to_none=True)
    import torch

    every = torch.cat(rows)
    return every[-1], every[:-1].mean(0), len(rows)


def scores(model: Any, graph: Graph, ids: Ids, target_ids: tuple[int, ...], source: Writes, target: Writes,
           delta: Any, steps: int) -> Scores:
    """Every edge's EAP and EAP-IG score: delta[p, u] . gradient[p, i] where edge (u -> i at p) exists."""
    import torch

    eap, integrated, passes = gradients(model, graph, ids, target_ids, source, target, steps)
    exists = graph.exists()
    delta = delta.cpu()
    product = lambda g: torch.einsum("pud,pid->piu", delta, g) * exists  # noqa: E731
    return Scores(product(eap), product(integrated), exists, passes)


def ranking(found: Scores) -> Any:
    """[positions, inputs, nodes] int64: each edge's rank by |EAP-IG| (0 first; ties in position, input, node
    order), and the number of edges where there is none."""
    import torch

    flat = found.eap_ig.flatten()
    real = found.exists.flatten()
    count = int(real.sum())
    order = torch.argsort(torch.where(real, -flat.abs(), torch.inf), stable=True)
    ranks = torch.full_like(flat, count, dtype=torch.int64)
    ranks[order[:count]] = torch.arange(count)
    return ranks.view(found.eap_ig.shape)
