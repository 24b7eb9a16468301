"""Activation patching of a pair (--gotchas-patch): how much of the target's answer the source's residual stream
carries, per layer and aligned position.

For two near-identical programs with opposite answers, the source member's output of decoder layer L at position s
replaces the target's at the aligned position t (align.py), and the metric is read at the target's cut:
logit(target's correct id) - logit(target's wrong id), the two logits as the model computed them (its dtype),
subtracted exactly in float64. Layers are numbered 1..N as in --gotchas-layers (layer k: the output of the k-th
decoder layer).

Methods (``method``), all computing the same cells:

- ``full``: one plain forward pass per cell, the patch made by a forward hook (``logits_to_keep=1``, no cache).
- ``layer-batch``: the N cells of one position as one batch of N rows of the whole target (row r patched at layer
  r+1); rows of equal length, never padded (padding changes bfloat16 logits). The same FLOPs as ``full`` in fewer,
  larger matrix products.
- ``from-layer`` (the default): the cells of one layer L, one row per aligned position, as one batch that starts at
  layer L+1. A patch at layer L leaves layers 1..L of the target as they were, so their outputs are not computed
  again: layer L's output is the target's own (kept by its plain pass) with the source's vector at the row's
  position, and layers 1..L-1 are skipped. About half the FLOPs of ``full`` (layers after L only: N(N-1)/2 layer
  passes per position instead of N*N), nothing approximated.

Both batched methods are bit-identical to ``full`` on the tiny models of tests/unit/scoring/test_patching.py and on
gemma-3-270m (tests/e2e/test_patching.py) where the kernels compute a batch's row as they compute it alone; where
they do not (measured at load, model/invariance.py, or found by the checks below: patch_exact), scoring patches
with ``full``. The KV cache of the shared prefix was measured in the research for #22 and is not used: a pass over
fewer query positions was not always bit-identical.

Checks run with every call, bit for bit, and a failure raises CheckError naming what failed (scoring names the pair):
a shared-prefix cell equals ``unpatched``; layer N at the last position gives ``source_value`` (the final norm and
the head read only that vector); the target patched with its own states, every layer at the first and the last
aligned position, equals ``unpatched`` (a member patched into itself changes nothing).

The shared-prefix check rests on a premise: the two members' own passes compute the same states there. On some CPUs
a pass of another length rounds those positions differently (measured on an Intel AVX-512 BF16 Xeon: gemma-3-270m's
states 512 apart in one dimension for lengths 15 and 16). The premise is then measured false, not a fault of the
patch: the check does not run, and the result says by how much the states differ (``prefix_apart``) and how far
patching there moved the metric (``prefix_shift``). With identical states a moved cell is still an error.

torch is imported inside the functions that need it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..results.effects import spacing
from .align import Alignment, align
from .head import Float32Head, float32_head, head_of
from .hooks import Hooks, counting
from .lens import attribute
from ..results.vocabulary import PatchMethod, PatchMetric

METHODS = tuple(PatchMethod)
DEFAULT = PatchMethod.FROM_LAYER
# Llama, Gemma, Mistral, Qwen and their kind; GPT-2; multimodal wrappers that keep the text model one level down.
LAYER_PATHS = ("model.layers", "transformer.h", "model.language_model.layers")

Ids = tuple[int, int]  # (correct id, wrong id) of the target
Reading = tuple[float, float]  # (logit of correct, logit of wrong): model dtype values as Python floats


class PatchingError(Exception):
    """This model cannot be patched; the message says why and names the model's class."""


class CheckError(PatchingError):
    """An exactness check failed; the message names the check, the layer and the position."""


def find_layers(model: Any) -> tuple[str, list[Any]]:
    """(where, the decoder layers in order); PatchingError names the model's class when there are none."""
    for path in LAYER_PATHS:
        layers = attribute(model, path)
        if layers is not None and len(layers) > 0:
            return path, list(layers)
    raise PatchingError(f"cannot patch model class {type(model).__name__}: no decoder layers found "
                        f"(looked for {', '.join(LAYER_PATHS)})")


def _hidden(output: Any) -> Any:
    # transformers 5: a decoder layer returns the hidden-state tensor; older versions a tuple led by it.
    return output if not isinstance(output, tuple) else output[0]


def _with_hidden(output: Any, hidden: Any) -> Any:
    return hidden if not isinstance(output, tuple) else (hidden, *output[1:])


@dataclass(frozen=True)
class MemberPass:
    """One member's plain pass: every decoder layer's output at every position, and the logits at its cut."""

    ids: tuple[int, ...]
    states: Any  # tensor [layers, positions, hidden]; row k-1 is layer k's output
    logits: Any  # tensor [vocab]: the model's own last-position logits, in its dtype
    tuple_output: bool = False  # the layers return (hidden, ...), as before transformers 5
    head_input: Any = None  # tensor [hidden]: the head's input at the cut (the final norm's output), for head.py


def member_pass(model: Any, ids: Sequence[int]) -> MemberPass:
    """The member's plain pass, its layers' outputs kept by hooks that change nothing."""
    import torch

    layers = find_layers(model)[1]
    kept: list[Any] = [None] * len(layers)
    tupled = [False]

    def keeper(k: int) -> Any:
        def hook(module: Any, args: Any, output: Any) -> None:
            tupled[0] = isinstance(output, tuple)
            kept[k] = _hidden(output)[0].detach().clone()  # None returned: the output stays as it was
        return hook

    head_input: list[Any] = [None]
    with Hooks() as hooks, torch.inference_mode():
        for k, layer in enumerate(layers):
            hooks.after(layer, keeper(k))
        hooks.after(head_of(model),
                    lambda module, args, output: head_input.__setitem__(0, args[0][0, -1].detach().clone()))
        logits = model(input_ids=torch.tensor([list(ids)], device=model.device), logits_to_keep=1,
                       use_cache=False).logits[0, -1]
    return MemberPass(tuple(ids), torch.stack([k.to(logits.device) for k in kept]), logits, tupled[0], head_input[0])


def _reading(logits: Any, ids: Ids) -> Reading:
    return float(logits[ids[0]]), float(logits[ids[1]])


def _metric(reading: Reading) -> float:
    return reading[0] - reading[1]  # Python floats: float64, exact for two bfloat16 (or float16) values


@dataclass(frozen=True)
class Job:
    """Cells that patch one target position: row r replaces the output of layer ``rows[r][0]`` by ``rows[r][1]``."""

    position: int
    rows: tuple[tuple[int, Any], ...]  # (layer number, vector [hidden])


def _patcher(rows: list[int], vectors: Any, position: int) -> Any:
    def hook(module: Any, args: Any, output: Any) -> Any:
        hidden = _hidden(output).clone()
        hidden[rows, position] = vectors.to(device=hidden.device, dtype=hidden.dtype)
        return _with_hidden(output, hidden)  # a forward hook's return value replaces the layer's output
    return hook


def _hooked(hooks: Hooks, layers: list[Any], job: Job, batched: bool) -> None:
    """Hooks for a batch that holds the job's rows in order (batched) or for its single row (not batched)."""
    import torch

    by_layer: dict[int, list[tuple[int, Any]]] = {}
    for r, (layer, vector) in enumerate(job.rows):
        by_layer.setdefault(layer, []).append((r if batched else 0, vector))
    for layer, rows in by_layer.items():
        hooks.after(layers[layer - 1], _patcher([r for r, _ in rows], torch.stack([v for _, v in rows]), job.position))


def _forward(model: Any, ids: Sequence[int], rows: int) -> Any:
    """Last-position logits [rows, vocab] of ``rows`` copies of ``ids``: one plain pass."""
    import torch

    input_ids = torch.tensor([list(ids)] * rows, device=model.device)
    return model(input_ids=input_ids, logits_to_keep=1, use_cache=False).logits[:, -1]


def _run(model: Any, target: Sequence[int], job: Job, ids: Ids, batched: bool) -> list[Reading]:
    layers = find_layers(model)[1]
    singles = [job] if batched else [Job(job.position, (row,)) for row in job.rows]
    readings = []
    for single in singles:
        with Hooks() as hooks:
            _hooked(hooks, layers, single, batched)
            readings += [_reading(row, ids) for row in _forward(model, target, len(single.rows))]
    return readings


class _StartedAt:
    """Within it, the model's pass starts after layer ``layer``: it and the layers before it return ``hidden`` without
    computing (what reaches layer ``layer`` is not read). Each layer's own ``forward`` (an instance attribute where
    accelerate has wrapped it) is put back on exit."""

    def __init__(self, layers: list[Any], layer: int, hidden: Any, tupled: bool) -> None:
        self.layers, self.layer, self.hidden, self.tupled = layers, layer, hidden, tupled
        self.saved: list[tuple[Any, Any]] = []

    def _out(self, hidden: Any) -> Any:
        return (hidden,) if self.tupled else hidden

    def __enter__(self) -> None:
        missing = object()
        for module in self.layers[:self.layer]:
            self.saved.append((module, module.__dict__.get("forward", missing)))
            module.forward = lambda *args, **kwargs: self._out(self.hidden)
        self.missing = missing

    def __exit__(self, *exc: object) -> None:
        for module, forward in self.saved:
            if forward is self.missing:
                del module.forward
            else:
                module.forward = forward


def _run_from_layer(model: Any, target: MemberPass, jobs: list[Job], ids: Ids) -> list[list[Reading]]:
    """One batch per layer L: a row per job that patches L, the pass started after L from the target's own states."""
    layers = find_layers(model)[1]
    by_layer: dict[int, list[tuple[int, int, Any]]] = {}  # layer -> (job, row within the job, vector)
    for j, job in enumerate(jobs):
        for r, (layer, vector) in enumerate(job.rows):
            by_layer.setdefault(layer, []).append((j, r, vector))
    readings: list[list[Reading]] = [[(0.0, 0.0)] * len(job.rows) for job in jobs]
    for layer, rows in sorted(by_layer.items()):
        hidden = target.states[layer - 1].unsqueeze(0).repeat(len(rows), 1, 1)
        for b, (j, _, vector) in enumerate(rows):
            hidden[b, jobs[j].position] = vector.to(device=hidden.device, dtype=hidden.dtype)
        with _StartedAt(layers, layer, hidden, target.tuple_output):
            logits = _forward(model, target.ids, len(rows))
        for b, (j, r, _) in enumerate(rows):
            readings[j][r] = _reading(logits[b], ids)
    return readings


def run_jobs(model: Any, method: PatchMethod, target: MemberPass, jobs: list[Job], ids: Ids) -> list[list[Reading]]:
    """The (correct, wrong) logits of every row of every job, by ``method``."""
    import torch

    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    with torch.inference_mode():
        if method == PatchMethod.FROM_LAYER:
            return _run_from_layer(model, target, jobs, ids)
        return [_run(model, target.ids, job, ids, batched=method == PatchMethod.LAYER_BATCH) for job in jobs]


@dataclass(frozen=True)
class Exactness:
    name: str  # "shared-prefix", "last-layer", "self-patch"
    ran: bool
    detail: str  # what was compared, or why it did not run
    failures: tuple[str, ...] = ()  # empty: it held bit for bit (or did not run)

    @property
    def passed(self) -> bool:
        return not self.failures


@dataclass(frozen=True)
class PatchResult:
    """One direction: cells[i][j] is the metric with layer layers[i] patched at positions[j] = [s, t]."""

    layers: list[int]
    positions: list[list[int]]
    cells: list[list[float]]
    unpatched: float  # the metric on the target's own pass
    source_value: float  # the same metric (the target's two ids) on the source's own pass
    method: PatchMethod
    alignment: Alignment
    checks: list[Exactness]
    seconds: float  # wall time of the patched passes and the checks (the members' own passes not included)
    passes: int  # model calls made for the cells and the checks
    prefix_apart: float = 0.0  # largest |difference| of the members' own states there, when its check failed
    prefix_shift: float = 0.0  # largest |cell - unpatched| patching there gave (0 unless prefix_apart is not)
    metric_dtype: str = ""  # the dtype the two logits were computed in (head.py): the model's, or float32
    step: float = 0.0  # that dtype's spacing at the largest of the unpatched and the source's logits
    magnitude: float = 0.0  # that largest |logit|: where the effect floor counts its steps (results/effects.py)

    @property
    def effect(self) -> float:
        return self.source_value - self.unpatched

    @property
    def fractions(self) -> list[list[float | None]]:
        """(cell - unpatched) / (source_value - unpatched); None where there is no effect to restore."""
        if self.effect == 0:
            return [[None for _ in row] for row in self.cells]
        return [[(cell - self.unpatched) / self.effect for cell in row] for row in self.cells]


def _jobs(source: MemberPass, target: MemberPass, alignment: Alignment, count: int) -> tuple[list[Job], dict]:
    """The cells' jobs (one per aligned pair), then the checks' jobs, with where each check's jobs are."""
    layers = range(1, count + 1)
    jobs = [Job(t, tuple((k, source.states[k - 1, s]) for k in layers)) for s, t in alignment.pairs]
    prefix, selfs = _check_jobs(alignment)
    where: dict[str, list[int]] = {"shared-prefix": [], "self-patch": []}
    if prefix is not None:
        s, t = prefix
        where["shared-prefix"].append(len(jobs))
        jobs.append(Job(t, tuple((k, source.states[k - 1, s]) for k in layers)))
    where["shared-prefix"] += [n for n, pair in enumerate(alignment.pairs) if alignment.shared(pair)]
    for t in selfs:
        where["self-patch"].append(len(jobs))
        jobs.append(Job(t, tuple((k, target.states[k - 1, t]) for k in layers)))
    return jobs, where


def _check_jobs(alignment: Alignment) -> tuple[tuple[int, int] | None, list[int]]:
    """The checks' own jobs: the shared-prefix pair (when no cell's pair is one) and the self-patch positions."""
    check = alignment.prefix_check
    return (check if check is not None and check not in alignment.pairs else None,
            sorted({alignment.pairs[0][1], alignment.pairs[-1][1]}))


def rows_per_layer(alignment: Alignment) -> int:
    """The jobs of one direction: one per aligned pair and the checks' (the rows of each from-layer batch)."""
    prefix, selfs = _check_jobs(alignment)
    return len(alignment.pairs) + (prefix is not None) + len(selfs)


def _failures(jobs: list[Job], readings: list[list[Reading]], indices: list[int], expected: Reading,
              what: str) -> list[str]:
    return [f"{what}: layer {layer} at target position {jobs[n].position} gave {r[0]!r} - {r[1]!r}, "
            f"expected {expected[0]!r} - {expected[1]!r}"
            for n in indices for (layer, _), r in zip(jobs[n].rows, readings[n]) if r != expected]


def _checks(jobs: list[Job], readings: list[list[Reading]], where: dict, alignment: Alignment, own: Reading,
            source: Reading) -> list[Exactness]:
    """The three exactness checks, each with what it compared and what failed."""
    prefix = [jobs[n].position for n in where["shared-prefix"]]
    selfs = [jobs[n].position for n in where["self-patch"]]
    last, top = len(alignment.pairs) - 1, len(jobs[0].rows)
    got = readings[last][-1]
    return [
        Exactness("shared-prefix", bool(prefix),
                  f"every layer patched at shared target position(s) {prefix} equals unpatched" if prefix
                  else "not run: the members share no leading token",
                  tuple(_failures(jobs, readings, where["shared-prefix"], own, "shared-prefix"))),
        Exactness("last-layer", True, f"layer {top} patched at {list(alignment.last)} equals source_value",
                  () if got == source else (f"last-layer: layer {top} at {list(alignment.last)} gave {got[0]!r} - "
                                            f"{got[1]!r}, the source's own {source[0]!r} - {source[1]!r}",)),
        Exactness("self-patch", True, f"the target patched with its own states, every layer at target "
                  f"position(s) {selfs}, equals unpatched",
                  tuple(_failures(jobs, readings, where["self-patch"], own, "self-patch"))),
    ]


def _prefix_premise(check: Exactness, source: MemberPass, target: MemberPass, alignment: Alignment, moved: float
                    ) -> tuple[Exactness, float]:
    """The shared-prefix check against its premise: when the members' own states there differ, the check cannot
    hold bit for bit and does not run (its detail says why); when they are identical, a moved cell is a failure."""
    if check.passed:
        return check, 0.0
    p = alignment.prefix
    apart = (source.states[:, :p].float() - target.states[:, :p].float()).abs().max().item()
    if not apart:
        return Exactness(check.name, check.ran, check.detail, (
            "shared-prefix: the source's and the target's states there are identical: the patch itself changed the "
            "result", *check.failures)), apart
    return Exactness(check.name, False, f"not run: the members' own states over the shared prefix differ by up to "
                     f"{apart:g} (lengths {alignment.source_length} and {alignment.target_length}: a pass of another "
                     f"length rounds the shared positions differently on this machine); patching there moved the "
                     f"metric by up to {moved:g}"), apart


def _raise_failed(checks: list[Exactness], method: PatchMethod) -> None:
    failed = [f for check in checks for f in check.failures]
    if failed:
        more = f"; and {len(failed) - 3} more" if len(failed) > 3 else ""
        raise CheckError(f"patching check failed (method {method}): " + "; ".join(failed[:3]) + more)


def _own_readings(model: Any, source: MemberPass, target: MemberPass, ids: Ids, metric: PatchMetric
                  ) -> tuple[Reading, Reading, str]:
    """The target's and the source's own (correct, wrong) logits, and the dtype they are in, by ``metric``."""
    if metric == PatchMetric.MODEL:
        return _reading(target.logits, ids), _reading(source.logits, ids), str(target.logits.dtype).split(".")[-1]
    if metric != PatchMetric.FLOAT32:
        raise ValueError(f"metric must be {PatchMetric.MODEL} or {PatchMetric.FLOAT32}, not {metric!r}")
    head = Float32Head(model, ids)
    return head.reading(target.head_input), head.reading(source.head_input), PatchMetric.FLOAT32


def patch(model: Any, source: MemberPass, target: MemberPass, ids: Ids, method: PatchMethod = DEFAULT,
          strict: bool = True, metric: PatchMetric = PatchMetric.MODEL) -> PatchResult:
    """One direction, source -> target, with the target's (correct id, wrong id), the metric's logits in the model's
    dtype or in float32 (``metric``, head.py). A failed check raises CheckError; with ``strict=False`` the result is
    returned with the failures in its checks (for measuring a method)."""
    from contextlib import nullcontext

    alignment = align(source.ids, target.ids)
    count = len(find_layers(model)[1])
    jobs, where = _jobs(source, target, alignment, count)
    own, theirs, dtype = _own_readings(model, source, target, ids, metric)
    started = time.perf_counter()
    with Hooks() as hooks, float32_head(model, ids) if metric == PatchMetric.FLOAT32 else nullcontext():
        calls = counting(hooks, model)
        readings = run_jobs(model, method, target, jobs, ids)
    seconds = time.perf_counter() - started
    checks = _checks(jobs, readings, where, alignment, own, theirs)
    moved = max((abs(_metric(r) - _metric(own)) for n in where["shared-prefix"] for r in readings[n]), default=0.0)
    checks[0], apart = _prefix_premise(checks[0], source, target, alignment, moved)
    if strict:
        _raise_failed(checks, method)
    heat = readings[:len(alignment.pairs)]
    cells = [[_metric(heat[j][i]) for j in range(len(heat))] for i in range(count)]
    magnitude = max(abs(v) for v in (*own, *theirs))
    return PatchResult(list(range(1, count + 1)), [list(p) for p in alignment.pairs], cells, _metric(own),
                       _metric(theirs), method, alignment, checks, seconds, calls[0], apart, moved if apart else 0.0,
                       dtype, spacing(magnitude, dtype), magnitude)


def patch_exact(model: Any, source: MemberPass, target: MemberPass, ids: Ids, method: PatchMethod = DEFAULT,
                metric: PatchMetric = PatchMetric.MODEL) -> PatchResult:
    """patch() by `method`, and by ``full`` again where a batched method's checks fail: kernels that round a batch's
    row otherwise than the row alone (model/invariance.py) in shapes the load's probe did not try. The result's
    ``method`` says which computed it; a failed check of ``full`` raises CheckError."""
    if method != PatchMethod.FULL:
        try:
            return patch(model, source, target, ids, method, metric=metric)
        except CheckError:
            pass
    return patch(model, source, target, ids, PatchMethod.FULL, metric=metric)
