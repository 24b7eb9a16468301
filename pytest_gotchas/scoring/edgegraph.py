"""The graph of a pair's edges (--gotchas-patch-edges): its nodes, its inputs, which input reads which node where,
and the nodes' writes as one member's pass computes them.

Nodes (the writers, in this order: every node's readers come after it): the token embeddings; per decoder layer
each query head's output, then the MLP's write. Inputs (the readers): per layer each query head's query input, each
key-value head's key input and value input (where the model groups query heads, as Gemma 3 and SmolLM2 do, a
key-value head's input is one input, shared by its query heads), the MLP's input; then the logits at the cut. An
edge is a node's write at one position read by a later input at that position: the residual stream is a sum per
position, and what moves between positions moves inside an attention node (its key and value inputs at a position
are read by the queries after it). Attention inputs of layer L read the embeddings and every node of the layers
before L; the MLP of layer L also reads layer L's heads; the logits read every node, at the cut only (the head reads
no other position).

Positions are the direction's aligned positions (scoring/align.py), as the residual and component grids use them:
the members of a pair differ in length, and only an aligned position has a write of the partner's to read; the
shared prefix is left out (its writes are equal in both members) and unaligned positions keep the target's own.

What a node writes. The embeddings: the embedding module's output (Gemma's scale included). An MLP: its block's
write, after the post-norm where the model has one (Gemma 2 and 3), else the MLP's output. A head, without a
post-norm (Llama, SmolLM2): its slice of o_proj, ``W_O[:, h] z_h``, and the heads' writes add up to the attention
write. Under a post-norm (Gemma) the attention write is ``post_norm(sum of the heads' o_proj slices)``, which no sum
of per-head vectors reproduces. A head's edge there is defined as in Hanna et al.'s EAP-IG library: the input that
reads it sees ``post_norm(o - o_h + o_h')``, the post-norm recomputed over the layer's sum with that head's slice
replaced (and with several heads replaced, all of them), so that the edge is an exact intervention on the model and
not a linearisation; every head in leaves the model's own write, every head out the partner's. What it costs is
additivity: single heads' changes do not add up to the layer's. It is measured per direction (``head_gap``: over
every layer and aligned position, the sum of |sum of single heads' changes - the layer's change| over the sum of
|the layer's change|, Euclidean norms).

torch is imported inside the functions that need it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..results.vocabulary import EdgeInput, EdgeNode
from .hooks import Hooks
from .patching import _hidden, find_layers


@dataclass(frozen=True)
class Block:
    """One decoder layer's modules, as the edges read and replace them."""

    input_norm: Any  # before the attention: its input is the residual stream the attention inputs read
    q: Any
    k: Any
    v: Any
    o: Any
    post_attn: Any  # the attention's post-norm (Gemma 2 and 3), or None
    mlp_norm: Any  # before the MLP: its input is the residual stream the MLP input reads
    mlp: Any
    post_mlp: Any  # the MLP's post-norm, or None


def edge_blocks(model: Any) -> list[Block]:
    found = []
    for layer in find_layers(model)[1]:
        attention = layer.self_attn
        post = hasattr(layer, "pre_feedforward_layernorm") and hasattr(layer, "post_feedforward_layernorm")
        found.append(Block(layer.input_layernorm, attention.q_proj, attention.k_proj, attention.v_proj,
                           attention.o_proj, layer.post_attention_layernorm if post else None,
                           layer.pre_feedforward_layernorm if post else layer.post_attention_layernorm, layer.mlp,
                           layer.post_feedforward_layernorm if post else None))
    return found


def final_norm(model: Any) -> Any:
    """The norm between the last layer and the head."""
    inner = getattr(model, "model", None)
    norm = getattr(inner, "norm", None) if inner is not None else None
    if norm is None:
        from .patching import PatchingError
        raise PatchingError(f"cannot read edges of model class {type(model).__name__}: no final norm at model.norm")
    return norm


@dataclass(frozen=True)
class Graph:
    """The shape of one direction's graph: ``layers`` decoder layers of ``heads`` query heads and ``kv_heads``
    key-value heads of ``head_dim``, over ``positions`` aligned pairs (s, t) of which the last is the cut.

    Nodes are numbered embeddings 0, then layer L's heads 1 + (L-1)(heads+1) + h and its MLP after them; inputs are
    numbered per layer q heads, k heads, v heads, MLP (``per_layer`` of them), then the logits last. The nodes an
    input reads are a prefix of the nodes' order (``reads``)."""

    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    post_norms: bool
    positions: tuple[tuple[int, int], ...]

    @property
    def nodes(self) -> int:
        return 1 + self.layers * (self.heads + 1)

    @property
    def per_layer(self) -> int:
        return self.heads + 2 * self.kv_heads + 1

    @property
    def inputs(self) -> int:
        return self.layers * self.per_layer + 1

    def head_node(self, layer: int, head: int) -> int:
        return 1 + (layer - 1) * (self.heads + 1) + head

    def mlp_node(self, layer: int) -> int:
        return self.head_node(layer, self.heads)

    def first_input(self, layer: int) -> int:
        return (layer - 1) * self.per_layer

    def node(self, u: int) -> tuple[EdgeNode, int, int]:
        """(kind, layer, head) of node ``u``."""
        if u == 0:
            return EdgeNode.EMBED, 0, 0
        layer, h = divmod(u - 1, self.heads + 1)
        return (EdgeNode.MLP, layer + 1, 0) if h == self.heads else (EdgeNode.HEAD, layer + 1, h)

    def input(self, i: int) -> tuple[EdgeInput, int, int]:
        """(kind, layer, head) of input ``i``: the logits' layer is layers + 1."""
        if i == self.inputs - 1:
            return EdgeInput.LOGITS, self.layers + 1, 0
        layer, n = divmod(i, self.per_layer)
        if n < self.heads:
            return EdgeInput.QUERY, layer + 1, n
        n -= self.heads
        if n < 2 * self.kv_heads:
            return (EdgeInput.KEY, layer + 1, n) if n < self.kv_heads else (EdgeInput.VALUE, layer + 1,
                                                                            n - self.kv_heads)
        return EdgeInput.MLP, layer + 1, 0

    def reads(self, i: int) -> int:
        """How many nodes input ``i`` reads (the first ones in the nodes' order)."""
        kind, layer, _ = self.input(i)
        if kind == EdgeInput.LOGITS:
            return self.nodes
        return self.mlp_node(layer) if kind == EdgeInput.MLP else self.head_node(layer, 0)

    def count(self) -> int:
        """How many edges there are (what exists() holds), without building it."""
        per_position = sum(self.reads(i) for i in range(self.inputs - 1))
        return len(self.positions) * per_position + self.nodes

    def exists(self) -> Any:
        """[positions, inputs, nodes] bool: where an edge is; the logits' only at the cut."""
        import torch

        found = torch.zeros(len(self.positions), self.inputs, self.nodes, dtype=torch.bool)
        for i in range(self.inputs):
            found[:, i, :self.reads(i)] = True
        found[:-1, self.inputs - 1] = False
        return found


def graph_of(model: Any, positions: tuple[tuple[int, int], ...]) -> Graph:
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    found = edge_blocks(model)
    heads = config.num_attention_heads
    kv = getattr(config, "num_key_value_heads", None) or heads
    return Graph(len(found), heads, kv, found[0].o.in_features // heads, found[0].post_attn is not None, positions)


@dataclass
class Writes:
    """Every node's write at chosen positions of ``rows`` passes, in float32: ``nodes[r, p, u]`` (a head's entry is
    its o_proj slice, before any post-norm), ``o[r, p, L-1]`` the o_proj output and ``attn[r, p, L-1]`` the
    attention write (the post-norm's output where there is one)."""

    nodes: Any  # [rows, positions, nodes, hidden]
    o: Any  # [rows, positions, layers, hidden]
    attn: Any  # [rows, positions, layers, hidden]


def record(hooks: Hooks, model: Any, graph: Graph, positions: list[int], rows: int) -> Writes:
    """Hooks that fill a Writes with the nodes' writes at ``positions`` as a pass of ``rows`` rows computes them
    (they change nothing)."""
    import torch

    found = edge_blocks(model)
    weight = found[0].o.weight
    hidden, count = weight.shape[0], len(positions)
    make = lambda n: torch.zeros(rows, count, n, hidden, dtype=torch.float32, device=weight.device)  # noqa: E731
    writes = Writes(make(graph.nodes), make(graph.layers), make(graph.layers))
    at = torch.tensor(positions, device=weight.device)

    def put(target: Any, index: int) -> Any:
        def hook(module: Any, args: Any, output: Any) -> None:  # returns None: the output stays as it was
            target[:, :, index] = _hidden(output)[:, at].float()
        return hook

    def heads(layer: int, o: Any) -> Any:
        w = o.weight.float().view(hidden, graph.heads, graph.head_dim)
        first = graph.head_node(layer, 0)

        def hook(module: Any, args: Any) -> None:
            z = args[0][:, at].float().view(rows, count, graph.heads, graph.head_dim)
            writes.nodes[:, :, first:first + graph.heads] = torch.einsum("rphd,Dhd->rphD", z, w)
        return hook

    hooks.after(model.get_input_embeddings(), put(writes.nodes, 0))
    for layer, b in enumerate(found, start=1):
        hooks.before(b.o, heads(layer, b.o))
        hooks.after(b.o, put(writes.o, layer - 1))
        hooks.after(b.post_attn if b.post_attn is not None else b.o, put(writes.attn, layer - 1))
        hooks.after(b.post_mlp if b.post_mlp is not None else b.mlp, put(writes.nodes, graph.mlp_node(layer)))
    return writes


def member_writes(model: Any, graph: Graph, ids: tuple[int, ...]) -> Writes:
    """A member's own pass with every node's write kept at every position (one row)."""
    import torch

    with Hooks() as hooks, torch.inference_mode():
        writes = record(hooks, model, graph, list(range(len(ids))), 1)
        model(input_ids=torch.tensor([list(ids)], device=model.device), logits_to_keep=1, use_cache=False)
    return writes


def post_normed(norm: Any, base: Any, changed: Any) -> Any:
    """post_norm(changed) - post_norm(base) in float32, both through the model's own norm in one call (the same
    arithmetic for each row); ``base`` broadcasts against ``changed``."""
    import torch

    base = base.expand_as(changed)
    with torch.no_grad():
        both = norm.forward(torch.stack([changed, base]).float())
    return (both[0] - both[1]).float()


def deltas(model: Any, graph: Graph, source: Writes, target: Writes) -> tuple[Any, float | None]:
    """[positions, nodes, hidden]: each node's write at the source's aligned position less the target's (a head under
    a post-norm: its single-head change of the attention write, module doc), and the heads' additivity gap (None
    without post-norms; 0.0 where no attention write changes)."""
    import torch

    s = torch.tensor([p[0] for p in graph.positions])
    t = torch.tensor([p[1] for p in graph.positions])
    delta = source.nodes[0, s] - target.nodes[0, t]
    if not graph.post_norms:
        return delta, None
    missed, moved = 0.0, 0.0
    for layer, b in enumerate(edge_blocks(model), start=1):
        first = graph.head_node(layer, 0)
        own = target.o[0, t, layer - 1]  # [P, hidden]
        swapped = (own[:, None] - target.nodes[0, t, first:first + graph.heads]
                   + source.nodes[0, s, first:first + graph.heads])  # [P, heads, hidden]
        delta[:, first:first + graph.heads] = post_normed(b.post_attn, own[:, None], swapped)
        whole = source.attn[0, s, layer - 1] - target.attn[0, t, layer - 1]
        moved += float(whole.norm(dim=-1).sum())
        missed += float((delta[:, first:first + graph.heads].sum(1) - whole).norm(dim=-1).sum())
    return delta, missed / moved if moved else 0.0
