"""Circuits of a direction's edges run on the model (--gotchas-patch-edges): the target's pass with a chosen set of
edges reading the source's writes instead of their own, every other edge as the pass computes it. The source's
writes are one row at the target's aligned positions: the partner's, or the chapter's mean (chaptermean.py).

A row corrupts the edges whose rank (edges.ranking: by |EAP-IG|) lies in [lo, hi): the circuit of the top n edges is
[n, count) (everything outside it reads the source), its complement [0, n), one edge of rank k alone [k, k + 1), the
empty circuit [0, count) and the full model [count, count). Rows are batched, each row its own set.

How an input reads the source's write. Before each input is computed, its residual stream (the input's own, at each
aligned position) becomes ``stream - sum over its corrupted edges (node's write in this pass - node's write in the
source's pass)``, in float32, then the input's norm and projection run on it (the model's own modules): a query
head's slice of q_proj's output, a key-value head's slice of k_proj's and v_proj's, the MLP's input, the final norm's
input at the cut. Under a post-norm, an upstream layer's attention write is recomputed as edgegraph.py defines it:
``post_norm(o - sum of the corrupted heads' slices + their source slices)``. A row and position whose correction is
exactly zero is left as the model computed it, so the full model's row is the target's own pass bit for bit where the
kernels compute a batch's row as the row alone (that row is the batch's check: where it differs, every row is run
again as a pass of its own, as components.py does).

torch is imported inside the functions that need it.
"""

from __future__ import annotations

from typing import Any

from .edgegraph import Graph, Writes, edge_blocks, final_norm, post_normed, record
from .head import float32_head
from .hooks import Hooks, counting
from .patching import Ids, Reading, _reading

CHUNK = 8  # rows per pass


class Corrector:
    """The hooks of one batch: rows ``spans`` [(lo, hi)], ``ranks`` [positions, inputs, nodes] of the edges,
    ``source`` the source's writes at its aligned positions (one row)."""

    def __init__(self, model: Any, graph: Graph, ranks: Any, spans: list[tuple[int, int]], source: Writes) -> None:
        import torch

        self.model, self.graph, self.ranks, self.source = model, graph, ranks, source
        device = source.nodes.device
        self.lo = torch.tensor([lo for lo, _ in spans], device=device)[:, None, None, None]
        self.hi = torch.tensor([hi for _, hi in spans], device=device)[:, None, None, None]
        self.at = torch.tensor([t for _, t in graph.positions], device=device)
        self.blocks = edge_blocks(model)
        self.linear = torch.ones(graph.nodes, dtype=torch.bool, device=device)
        if graph.post_norms:  # a head's write under a post-norm is recomputed through it, not added
            for layer in range(1, graph.layers + 1):
                self.linear[graph.head_node(layer, 0):graph.mlp_node(layer)] = False
        self.streams: dict[str, Any] = {}
        self.current: Writes | None = None
        self.change: Any = None  # [rows, positions, nodes, hidden]: source's write - this pass's, node by node
        self.done = 0  # the nodes whose change is computed (a node's write is final once its readers run)

    def correction(self, first: int, count: int) -> tuple[Any, Any]:
        """The corrections of inputs first..first+count-1 (they read the same nodes) [rows, positions, inputs,
        hidden] in float32, and where each is not zero [rows, positions, inputs]."""
        import torch

        assert self.current is not None
        reads = self.graph.reads(first)
        if reads > self.done:
            self.change[:, :, self.done:reads] = (self.source.nodes[:, :, self.done:reads]
                                                  - self.current.nodes[:, :, self.done:reads])
            self.done = reads
        rank = self.ranks[:, first:first + count, :reads].to(self.lo.device)
        corrupt = (rank[None] >= self.lo) & (rank[None] < self.hi)  # [rows, positions, inputs, nodes]
        total = torch.matmul((corrupt & self.linear[:reads]).float(), self.change[:, :, :reads])
        if self.graph.post_norms:
            total = total + self._heads(corrupt, reads)
        return total, total.ne(0).any(-1)

    def _heads(self, corrupt: Any, reads: int) -> Any:
        """What the corrupted heads change in each upstream layer's post-normed attention write."""
        import torch

        assert self.current is not None
        g = self.graph
        total = torch.zeros(*corrupt.shape[:3], self.source.nodes.shape[-1], device=corrupt.device)
        for layer in range(1, g.layers + 1):
            first = g.head_node(layer, 0)
            if first >= reads:
                break
            heads = corrupt[..., first:first + g.heads].float()  # [rows, positions, inputs, heads]
            if not heads.any():
                continue
            change = self.change[:, :, first:first + g.heads]
            own = self.current.o[:, :, layer - 1][:, :, None]  # [rows, positions, 1, hidden]
            moved = post_normed(self.blocks[layer - 1].post_attn, own, own + torch.matmul(heads, change))
            total += torch.where(heads.any(-1, keepdim=True), moved, 0.0)
        return total

    def _rewrite(self, stream: Any, change: Any, norm: Any) -> Any:
        """norm(stream + change) at the aligned positions [rows, positions, inputs, hidden], in the model's dtype
        (``forward`` itself: the norm's hooks keep the streams)."""
        shifted = stream[:, self.at].float()[:, :, None] + change
        return norm.forward(shifted.to(stream.dtype))

    def install(self, hooks: Hooks, rows: int) -> None:
        import torch

        self.current = record(hooks, self.model, self.graph, [t for _, t in self.graph.positions], rows)
        self.change = torch.empty_like(self.current.nodes)
        g = self.graph
        for layer, b in enumerate(self.blocks, start=1):
            hooks.before(b.input_norm, self._keep(f"pre{layer}"))
            first = g.first_input(layer)
            for module, start, count in ((b.q, first, g.heads), (b.k, first + g.heads, g.kv_heads),
                                         (b.v, first + g.heads + g.kv_heads, g.kv_heads)):
                hooks.after(module, self._projection(layer, module, start, count))
            hooks.before(b.mlp_norm, self._keep(f"mid{layer}"))
            hooks.before(b.mlp, self._mlp(layer))
        hooks.before(final_norm(self.model), self._logits())

    def _keep(self, name: str) -> Any:
        return lambda module, args: self.streams.__setitem__(name, args[0])

    def _projection(self, layer: int, module: Any, start: int, count: int) -> Any:
        import torch

        dim = self.graph.head_dim
        weight = module.weight.view(count, dim, -1)
        bias = None if module.bias is None else module.bias.view(count, dim)

        def hook(mod: Any, args: Any, output: Any) -> Any:
            change, where = self.correction(start, count)
            if not where.any():
                return None
            normed = self._rewrite(self.streams[f"pre{layer}"], change, self.blocks[layer - 1].input_norm)
            new = torch.einsum("rpiD,idD->rpid", normed, weight)  # [rows, positions, inputs, dim]
            if bias is not None:
                new = new + bias
            out = output.clone()
            old = out[:, self.at].view(*new.shape)
            out[:, self.at] = torch.where(where[..., None], new.to(out.dtype), old).view(*old.shape[:2], -1)
            return out
        return hook

    def _mlp(self, layer: int) -> Any:
        import torch

        index = self.graph.first_input(layer) + self.graph.per_layer - 1

        def hook(module: Any, args: Any) -> Any:
            change, where = self.correction(index, 1)
            if not where.any():
                return None
            normed = self._rewrite(self.streams[f"mid{layer}"], change, self.blocks[layer - 1].mlp_norm)
            value = args[0].clone()
            value[:, self.at] = torch.where(where, normed[:, :, 0], value[:, self.at])
            return (value, *args[1:])
        return hook

    def _logits(self) -> Any:
        import torch

        index = self.graph.inputs - 1

        def hook(module: Any, args: Any) -> Any:
            change, where = self.correction(index, 1)
            change, where = change[:, -1:], where[:, -1:]  # the logits read the cut alone
            if not where.any():
                return None
            value = args[0].clone()
            shifted = (value[:, -1:].float() + change[:, :, 0]).to(value.dtype)
            value[:, -1:] = torch.where(where, shifted, value[:, -1:])
            return (value, *args[1:])
        return hook


def run_spans(model: Any, graph: Graph, ranks: Any, spans: list[tuple[int, int]], source: Writes,
              target_ids: tuple[int, ...], ids: Ids, batched: bool = True) -> tuple[list[Reading], int]:
    """The (correct, wrong) float32 logits of the target's pass for each row of ``spans``, and the model calls made;
    ``batched=False`` runs each row as a pass of its own."""
    import torch

    size = CHUNK if batched else 1
    readings: list[Reading] = []
    with Hooks() as outer, torch.inference_mode(), float32_head(model, ids):
        calls = counting(outer, model)
        for first in range(0, len(spans), size):
            chunk = spans[first:first + size]
            with Hooks() as hooks:
                Corrector(model, graph, ranks, chunk, source).install(hooks, len(chunk))
                logits = model(input_ids=torch.tensor([list(target_ids)] * len(chunk), device=model.device),
                               logits_to_keep=1, use_cache=False).logits[:, -1]
            readings += [_reading(row, ids) for row in logits]
    return readings, calls[0]
