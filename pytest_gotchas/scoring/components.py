"""Exact component patching of a pair (--gotchas-patch-components): which attention block, MLP block and attention
head carries the target's answer, per layer and aligned position (align.py), with patching.py's metric.

Components of decoder layer L, each at one aligned position (source s -> target t):

- ``attn``: the attention block's write to the residual stream, what it adds to it. Where the layer has a post-norm
  (Gemma 2 and 3: ``post_attention_layernorm`` after the attention, ``pre_feedforward_layernorm`` before the MLP) that
  is the post-norm's output; elsewhere (Llama, SmolLM2: their ``post_attention_layernorm`` is the MLP's pre-norm) the
  attention module's output.
- ``mlp``: the MLP block's write: ``post_feedforward_layernorm``'s output where there is one, else the MLP's output.
- ``head h``: query head h's output, its slice of ``o_proj``'s input (grouped-query attention shares keys and values
  between query heads, not outputs: each query head has its own slice).

A patch at layer L leaves layers 1..L-1 of the target as they were, so a layer's cells are one batch that starts at
layer L from the target's own residual stream after layer L-1 (patching.py's from-layer batching; layer 1 runs the
whole model): one row per component and position. Where the batch's checks fail (kernels that round a batch's row
otherwise than the row alone), every row is computed again as a pass of its own, and the result says so.

Checks run with every call, bit for bit: every component of every layer patched at a shared-prefix position equals
``unpatched`` (its premise, the members' own activations being equal there, is measured as in patching.py); the
target patched with its own activations at its last position changes nothing; and every head of layer L patched at
t at once equals the attention write of layer L patched at t. The last holds exactly where ``o_proj`` is the
attention's last step before the write (its input at t alone makes its output at t, and a post-norm is per position)
and computes a row alike in every shape of product: Llama, Gemma and their kind, on kernels that do. Its second
premise is the kernels' (on an Intel AMX Xeon o_proj's row is other bits in a batch of other shape: 0.0127 apart at
layer 17 of gemma-3-270m, three quarters of a pair's effect), so where the check finds a difference the premise is
measured (o_proj, and the post-norm, on the source's heads in the layer's batch shape against the source's own
write): measured false, the difference is a measurement (``heads_apart``), noise in every cell of the direction and a
floor under its effect (results/effects.py); measured true, it is a failure the patch made.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from .align import Alignment, align
from .head import float32_head
from .hooks import Hooks, counting
from ..results.effects import spacing
from .patching import (CheckError, Exactness, Ids, MemberPass, Reading, _forward, _hidden, _metric, _own_readings,
                       _reading, _StartedAt, _with_hidden, find_layers, member_pass)
from ..results.vocabulary import ComponentKind, PatchMetric



@dataclass(frozen=True)
class Blocks:
    """Where one decoder layer's components can be read and replaced."""

    attn: Any  # the module whose output is the attention write
    mlp: Any  # the module whose output is the MLP write
    o_proj: Any  # the attention's output projection: its input holds the heads' outputs
    heads: int
    head_dim: int
    post_norms: bool  # the writes are post-norm outputs (Gemma 2 and 3)


def blocks(layer: Any, heads: int) -> Blocks:
    attention = layer.self_attn
    post = hasattr(layer, "pre_feedforward_layernorm") and hasattr(layer, "post_feedforward_layernorm")
    o_proj = attention.o_proj
    return Blocks(layer.post_attention_layernorm if post else attention,
                  layer.post_feedforward_layernorm if post else layer.mlp, o_proj, heads, o_proj.in_features // heads,
                  post)


def layer_blocks(model: Any) -> list[Blocks]:
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    return [blocks(layer, config.num_attention_heads) for layer in find_layers(model)[1]]


@dataclass(frozen=True)
class ComponentPass:
    """A member's plain pass (patching.MemberPass) and every component's activation at every position."""

    member: MemberPass
    attn: Any  # [layers, positions, hidden]
    mlp: Any  # [layers, positions, hidden]
    heads: Any  # [layers, positions, heads * head_dim]: o_proj's input


def component_pass(model: Any, ids: tuple[int, ...]) -> ComponentPass:
    """The member's plain pass with every layer's attention write, MLP write and o_proj input kept."""
    import torch

    found = layer_blocks(model)
    kept: dict[tuple[str, int], Any] = {}

    def keep(kind: str, k: int, pre: bool = False) -> Any:
        def hook(module: Any, args: Any, output: Any = None) -> None:
            value = args[0] if pre else _hidden(output)
            kept[(kind, k)] = value[0].detach().clone()
        return hook

    with Hooks() as hooks:
        for k, b in enumerate(found):
            hooks.after(b.attn, keep(ComponentKind.ATTN, k))
            hooks.after(b.mlp, keep(ComponentKind.MLP, k))
            hooks.before(b.o_proj, keep(ComponentKind.HEAD, k, pre=True))
        member = member_pass(model, ids)
    # Kept on the logits' device, as member_pass keeps the states (layers split over devices: device_map)
    stack = lambda kind: torch.stack([kept[(kind, k)].to(member.logits.device)  # noqa: E731
                                      for k in range(len(found))])
    return ComponentPass(member, stack(ComponentKind.ATTN), stack(ComponentKind.MLP), stack(ComponentKind.HEAD))


@dataclass(frozen=True)
class Patch:
    """One row's patch: component ``kind`` (head ``head``) of layer ``layer`` at target position ``position``,
    replaced by ``vector`` (for several heads at once, ``head`` is -1 and ``vector`` is o_proj's whole input)."""

    layer: int
    kind: str
    head: int
    position: int
    vector: Any


def _vector(source: ComponentPass, kind: str, layer: int, head: int, s: int, dim: int) -> Any:
    if kind == ComponentKind.ATTN:
        return source.attn[layer - 1, s]
    if kind == ComponentKind.MLP:
        return source.mlp[layer - 1, s]
    row = source.heads[layer - 1, s]
    return row if head < 0 else row[head * dim:(head + 1) * dim]


@contextmanager
def _patched(found: list[Blocks], rows: list[list[Patch]]) -> Iterator[None]:
    """Hooks that apply batch row r's patches (rows[r]) at their layers."""

    def output_hook(patches: list[tuple[int, Patch]]) -> Any:
        def hook(module: Any, args: Any, output: Any) -> Any:
            hidden = _hidden(output).clone()
            for r, p in patches:
                hidden[r, p.position] = p.vector.to(device=hidden.device, dtype=hidden.dtype)
            return _with_hidden(output, hidden)
        return hook

    def input_hook(patches: list[tuple[int, Patch]], dim: int) -> Any:
        def hook(module: Any, args: Any) -> Any:
            value = args[0].clone()
            for r, p in patches:
                span = slice(None) if p.head < 0 else slice(p.head * dim, (p.head + 1) * dim)
                value[r, p.position, span] = p.vector.to(device=value.device, dtype=value.dtype)
            return (value, *args[1:])
        return hook

    by: dict[tuple[int, str], list[tuple[int, Patch]]] = {}
    for r, patches in enumerate(rows):
        for p in patches:
            by.setdefault((p.layer, p.kind), []).append((r, p))
    with Hooks() as hooks:
        for (layer, kind), at in by.items():
            b = found[layer - 1]
            if kind == ComponentKind.HEAD:
                hooks.before(b.o_proj, input_hook(at, b.head_dim))
            else:
                hooks.after(b.attn if kind == ComponentKind.ATTN else b.mlp, output_hook(at))
        yield


def _run_layer(model: Any, target: ComponentPass, layer: int, rows: list[list[Patch]], ids: Ids,
               batched: bool) -> list[Reading]:
    """The readings of rows that each patch components of ``layer`` (and none below it), the pass started at it."""
    layers, found = find_layers(model)[1], layer_blocks(model)
    member = target.member
    groups = [rows] if batched else [[row] for row in rows]
    readings: list[Reading] = []
    for group in groups:
        start = (_StartedAt(layers, layer - 1, member.states[layer - 2].unsqueeze(0).repeat(len(group), 1, 1),
                            member.tuple_output) if layer > 1 else nullcontext())
        with start, _patched(found, group):
            readings += [_reading(row, ids) for row in _forward(model, member.ids, len(group))]
    return readings


@dataclass(frozen=True)
class ComponentResult:
    """One direction: attn[i][j] and mlp[i][j] are the metric with that block's write of layer layers[i] patched at
    positions[j] = [s, t]; head[i][h][j] with query head h's output patched there."""

    layers: list[int]
    heads: int
    positions: list[list[int]]
    attn: list[list[float]]
    mlp: list[list[float]]
    head: list[list[list[float]]]
    unpatched: float
    source_value: float
    metric_dtype: str
    step: float
    alignment: Alignment
    checks: list[Exactness]
    batched: bool  # each layer's cells as one batch (False: a pass per cell, where the batch's checks failed)
    post_norms: bool  # the attention and MLP writes are post-norm outputs (Gemma 2 and 3)
    seconds: float
    passes: int
    # The largest difference between every head patched at once and the attention write patched there, on layers
    # where o_proj is measured to compute a row otherwise in the batch's shape (a premise of the kernels, not of the
    # patch: a measurement, noise in every cell); 0.0 where they agreed
    heads_apart: float = 0.0
    magnitude: float = 0.0  # the largest |logit| of the metric's four: where the effect floor counts its steps


def _rows(source: ComponentPass, target: ComponentPass, alignment: Alignment, layer: int, b: Blocks
          ) -> tuple[list[list[Patch]], dict[str, list[int]]]:
    """The rows of one layer's batch: the cells (attn, mlp, each head, per aligned pair), then the checks' rows."""
    rows: list[list[Patch]] = []
    where: dict[str, list[int]] = {"cells": [], "all-heads": [], "shared-prefix": [], "self-patch": []}

    def add(name: str, member: ComponentPass, kind: str, head: int, s: int, t: int) -> None:
        where[name].append(len(rows))
        rows.append([Patch(layer, kind, head, t, _vector(member, kind, layer, head, s, b.head_dim))])

    for s, t in alignment.pairs:
        cells = [(ComponentKind.ATTN, 0), (ComponentKind.MLP, 0), *((ComponentKind.HEAD, h) for h in range(b.heads))]
        for kind, head in cells:
            add("cells", source, kind, head, s, t)
        add("all-heads", source, ComponentKind.HEAD, -1, s, t)
    if alignment.prefix_check is not None:
        s, t = alignment.prefix_check
        for kind, head in [(ComponentKind.ATTN, 0), (ComponentKind.MLP, 0), (ComponentKind.HEAD, -1)]:
            add("shared-prefix", source, kind, head, s, t)
    last = alignment.pairs[-1][1]
    for kind, head in [(ComponentKind.ATTN, 0), (ComponentKind.MLP, 0), (ComponentKind.HEAD, -1)]:
        add("self-patch", target, kind, head, last, last)
    return rows, where


def _layer_checks(layer: int, readings: list[Reading], where: dict[str, list[int]], own: Reading, heads: int,
                  premise: bool) -> dict[str, list[str]]:
    """What failed in one layer's checks (the shared prefix's only where its premise holds)."""
    failed: dict[str, list[str]] = {"shared-prefix": [], "self-patch": []}
    for name in ("shared-prefix", "self-patch"):
        if name == "shared-prefix" and not premise:
            continue
        failed[name] += [f"{name}: layer {layer} row {n} gave {readings[n]!r}, expected {own!r}"
                         for n in where[name] if readings[n] != own]
    return failed


def _heads_apart(readings: list[Reading], where: dict[str, list[int]], heads: int) -> list[tuple[int, float]]:
    """Per aligned pair whose every head patched at once gave another reading than the attention write patched
    there: (pair, |difference| of the metric)."""
    per = 2 + heads
    found = []
    for j, n in enumerate(where["all-heads"]):
        attn = readings[where["cells"][j * per]]
        if readings[n] != attn:
            found.append((j, abs(_metric(readings[n]) - _metric(attn))))
    return found


def _heads_premise(model: Any, source: ComponentPass, target: ComponentPass, alignment: Alignment, layer: int,
                   rows: int) -> bool:
    """The all-heads check's premise at ``layer``: the source's heads at s, put through o_proj (and the post-norm
    where the write is one) at t in a batch of the layer's shape (``rows`` rows of the target), give the source's own
    attention write at s bit for bit. Kernels that compute a row otherwise in products of other shapes (o_proj on an
    Intel AMX Xeon) make it false: the check then measures them, not the patch."""
    import torch

    b = layer_blocks(model)[layer - 1]
    pairs = list(alignment.pairs)
    groups = [pairs] if rows >= len(pairs) else [[pair] for pair in pairs]
    with torch.inference_mode():
        for group in groups:
            x = target.heads[layer - 1].unsqueeze(0).repeat(max(rows, len(group)), 1, 1)
            for r, (s, t) in enumerate(group):
                x[r, t] = source.heads[layer - 1, s]
            out = b.o_proj(x)
            write = _hidden(b.attn(out)) if b.post_norms else out
            if any(not torch.equal(write[r, t], source.attn[layer - 1, s]) for r, (s, t) in enumerate(group)):
                return False
    return True


def _premise(source: ComponentPass, target: ComponentPass, alignment: Alignment) -> float:
    """How far the members' own activations at the shared-prefix check's position differ (0: the premise holds)."""
    if alignment.prefix_check is None:
        return 0.0
    p = alignment.prefix_check[0]
    return max((a[:, p].float() - b[:, p].float()).abs().max().item()
               for a, b in ((source.attn, target.attn), (source.mlp, target.mlp), (source.heads, target.heads)))


def _grid(readings: dict[int, list[Reading]], wheres: dict[int, dict[str, list[int]]], layers: list[int],
          pairs: int, heads: int) -> tuple[list[list[float]], list[list[float]], list[list[list[float]]]]:
    per = 2 + heads
    attn, mlp, head = [], [], []
    for layer in layers:
        cells = [_metric(readings[layer][n]) for n in wheres[layer]["cells"]]
        attn.append([cells[j * per] for j in range(pairs)])
        mlp.append([cells[j * per + 1] for j in range(pairs)])
        head.append([[cells[j * per + 2 + h] for j in range(pairs)] for h in range(heads)])
    return attn, mlp, head


def _compute(model: Any, source: ComponentPass, target: ComponentPass, alignment: Alignment, ids: Ids,
             batched: bool) -> tuple[dict[int, list[Reading]], dict[int, dict[str, list[int]]]]:
    found = layer_blocks(model)
    readings, wheres = {}, {}
    for layer in range(1, len(found) + 1):
        rows, wheres[layer] = _rows(source, target, alignment, layer, found[layer - 1])
        readings[layer] = _run_layer(model, target, layer, rows, ids, batched)
    return readings, wheres


def _checks(readings: dict[int, list[Reading]], wheres: dict[int, dict[str, list[int]]], own: Reading, heads: int,
            apart: float, alignment: Alignment, kernels: dict[int, float]) -> list[Exactness]:
    """The three checks; ``kernels`` maps each layer whose all-heads premise was measured false to the largest
    difference it made (a measurement, not a failure: heads_apart)."""
    failed: dict[str, list[str]] = {"shared-prefix": [], "self-patch": [], "all-heads": []}
    for layer in readings:
        for name, found in _layer_checks(layer, readings[layer], wheres[layer], own, heads, not apart).items():
            failed[name] += found
        if layer not in kernels:
            failed["all-heads"] += [f"all-heads: layer {layer}, aligned pair {j}: every head at once and the attention "
                                    f"write gave metrics {delta:g} apart, though o_proj computes their rows alike here"
                                    for j, delta in _heads_apart(readings[layer], wheres[layer], heads)]
    prefix = alignment.prefix_check
    measured = (f"; where o_proj computes a row otherwise in another shape on this machine (layer(s) "
                f"{sorted(kernels)}) a measurement: apart by up to {max(kernels.values()):g}" if kernels else "")
    return [
        Exactness("shared-prefix", prefix is not None and not apart,
                  "not run: the members share no leading token" if prefix is None else
                  f"not run: the members' own activations at shared position {prefix[1]} differ by up to {apart:g}"
              if apart else f"every layer's attention write, MLP write and heads patched at shared position "
                  f"{prefix[1]} equal unpatched", tuple(failed["shared-prefix"])),
        Exactness("self-patch", True, f"the target's own attention write, MLP write and heads of every layer at its "
                  f"last position {alignment.pairs[-1][1]} equal unpatched", tuple(failed["self-patch"])),
        Exactness("all-heads", True, "every head of a layer patched at once equals that layer's attention write "
                  "patched there, at every aligned position" + measured, tuple(failed["all-heads"])),
    ]


def _kernels(model: Any, source: ComponentPass, target: ComponentPass, alignment: Alignment,
             readings: dict[int, list[Reading]], wheres: dict[int, dict[str, list[int]]], heads: int,
             batched: bool) -> dict[int, float]:
    """The layers whose all-heads check found a difference and whose premise is measured false, with the largest
    difference there (the premise is measured only where the check found one)."""
    found = {}
    for layer in readings:
        apart = _heads_apart(readings[layer], wheres[layer], heads)
        rows = len(readings[layer]) if batched else 1
        if apart and not _heads_premise(model, source, target, alignment, layer, rows):
            found[layer] = max(delta for _, delta in apart)
    return found


def patch_components(model: Any, source: ComponentPass, target: ComponentPass, ids: Ids,
                     metric: PatchMetric = PatchMetric.MODEL, batched: bool = True, strict: bool = True) -> ComponentResult:
    """One direction, source -> target, with the target's (correct id, wrong id). Where a batch's checks fail the
    cells are computed again a pass each; a check that fails then raises CheckError (``strict``)."""
    alignment = align(source.member.ids, target.member.ids)
    found = layer_blocks(model)
    heads = found[0].heads
    own, theirs, dtype = _own_readings(model, source.member, target.member, ids, metric)
    apart = _premise(source, target, alignment)
    import torch

    started = time.perf_counter()
    with Hooks() as hooks:
        calls = counting(hooks, model)
        with torch.inference_mode(), float32_head(model, ids) if metric == PatchMetric.FLOAT32 else nullcontext():
            readings, wheres = _compute(model, source, target, alignment, ids, batched)
            kernels = _kernels(model, source, target, alignment, readings, wheres, heads, batched)
            checks = _checks(readings, wheres, own, heads, apart, alignment, kernels)
            if batched and not all(c.passed for c in checks):
                batched = False
                readings, wheres = _compute(model, source, target, alignment, ids, batched)
                kernels = _kernels(model, source, target, alignment, readings, wheres, heads, batched)
                checks = _checks(readings, wheres, own, heads, apart, alignment, kernels)
    failures = [f for c in checks for f in c.failures]
    if strict and failures:
        more = f"; and {len(failures) - 3} more" if len(failures) > 3 else ""
        raise CheckError("component patching check failed: " + "; ".join(failures[:3]) + more)
    layers = list(range(1, len(found) + 1))
    attn, mlp, head = _grid(readings, wheres, layers, len(alignment.pairs), heads)
    magnitude = max(abs(v) for v in (*own, *theirs))
    return ComponentResult(layers, heads, [list(p) for p in alignment.pairs], attn, mlp, head, _metric(own),
                           _metric(theirs), dtype, spacing(magnitude, dtype), alignment, checks, batched,
                           found[0].post_norms, time.perf_counter() - started, calls[0],
                           max(kernels.values(), default=0.0), magnitude)
