"""AtP*'s QK fix, carried to this screen's nodes, measured: a cell's estimate with the next layer's attention computed
exactly, against the plain estimate, on how the screen finds the exact grid's top cells (results/screening.py).

    python -m bench.qkfix REPORT.json --chapter sets --metric float32 [--model smollm2-135m]

REPORT.json is any run's report (its prompts: each member is cut again by the model's tokenizer, as bench/effects.py
does). Per direction: how many of the exact top-20 (of cells above the effect floor) are in layer 1, how far the
screen's estimates of layer 1's cells are from their exact changes (sum of |estimate - exact| over sum of |exact|),
plain and with the next attention exact, and the screen's score three ways: plain, layer 1 fixed, every layer fixed;
with the CPU seconds of each. The figures are in bench/RESULTS.md ("Effects worth explaining"): the fix does not
make layer 1's estimates better, so scoring/screen.py does not use it.

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
after it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from pytest_gotchas.results.effects import Floor, least
from pytest_gotchas.results.screening import exact_top, screen_score
from pytest_gotchas.results.vocabulary import Cell, ComponentKind
from pytest_gotchas.scoring.components import ComponentPass, Patch, _patched, _vector, layer_blocks
from pytest_gotchas.scoring.hooks import Hooks
from pytest_gotchas.scoring.patching import _StartedAt, _forward, _hidden, find_layers


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


def _changes(grid: Any) -> dict[Cell, float]:
    found: dict[Cell, float] = {}
    for i, layer in enumerate(grid.layers):
        for j in range(len(grid.positions)):
            found[Cell(ComponentKind.ATTN, layer, 0, j)] = grid.attn[i][j] - grid.unpatched
            found[Cell(ComponentKind.MLP, layer, 0, j)] = grid.mlp[i][j] - grid.unpatched
            found.update((Cell(ComponentKind.HEAD, layer, h, j), grid.head[i][h][j] - grid.unpatched)
                         for h in range(grid.heads))
    return found


def _ranked(estimates: dict[Cell, float]) -> list[Cell]:
    return sorted(estimates, key=lambda c: -abs(estimates[c]))


def direction(model: Any, source: ComponentPass, target: ComponentPass, ids: tuple[int, int], metric: str,
              totals: Counter[str]) -> str:
    """One direction's lines (see the module's docstring), its counts added to ``totals``."""
    from pytest_gotchas.scoring.align import align
    from pytest_gotchas.scoring.components import patch_components
    from pytest_gotchas.scoring.screen import _cells, _estimates, _gradients

    started = time.process_time()
    grid = patch_components(model, source, target, ids, metric)
    seconds = {"grid": time.process_time() - started}
    changes, pairs, found = _changes(grid), list(align(source.member.ids, target.member.ids).pairs), layer_blocks(model)
    started = time.process_time()
    grads = _gradients(model, target, ids)[0]
    plain = _cells(_estimates(found, source, target, pairs, grads))
    seconds["screen"] = time.process_time() - started
    fixed = {"plain": plain, "layer 1 fixed": dict(plain), "every layer fixed": dict(plain)}
    for layer in range(1, len(found)):
        started = time.process_time()
        better = through_next(model, source, target, pairs, layer, grads[ComponentKind.ATTN][layer])
        seconds["every layer fixed"] = seconds.get("every layer fixed", 0.0) + time.process_time() - started
        fixed["every layer fixed"].update(better)
        if layer == 1:
            fixed["layer 1 fixed"].update(better)
            seconds["layer 1 fixed"] = seconds["every layer fixed"]
    floor = least(grid.magnitude, grid.metric_dtype, Floor())
    top = exact_top(changes, 20, floor)
    if not top:
        return "  no cell above the effect floor"
    ones = [c for c in changes if c.layer == 1 and changes[c]]

    def error(estimates: dict[Cell, float]) -> float:
        return sum(abs(estimates[c] - changes[c]) for c in ones) / (sum(abs(changes[c]) for c in ones) or 1.0)

    lines = [f"  effect {grid.source_value - grid.unpatched:+.4g} ({grid.metric_dtype}); exact top-{len(top)} in "
             f"layer 1: {sum(c.layer == 1 for c in top)}; layer 1's estimates off by {error(plain):.2f} plain, "
             f"{error(fixed['layer 1 fixed']):.2f} with the next attention exact; CPU s: "
             + ", ".join(f"{name} {s:.1f}" for name, s in seconds.items())]
    for name, estimates in fixed.items():
        score = screen_score(_ranked(estimates), _ranked(estimates), changes, 20, floor)
        assert score is not None
        mine = sorted(p for c, p in zip(top, score.found_at) if c.layer == 1)
        totals.update({f"{name} k": score.k, f"{name} found within k": sum(p <= score.k for p in score.found_at),
                       f"{name} layer 1": len(mine), f"{name} layer 1 within k": sum(p <= score.k for p in mine),
                       f"{name} overlap": score.overlap})
        lines.append(f"    {name}: overlap {score.overlap}/{score.k}, mass {score.mass:.2f}, area {score.area:.3f}, "
                     f"all found after {max(score.found_at)}, layer 1's found after {mine}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.qkfix", description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="a run's JSON report: its prompts")
    parser.add_argument("--chapter", required=True)
    parser.add_argument("--metric", choices=("model", "float32"), default="float32")
    parser.add_argument("--model", default=None, help="default: the embedded default")
    args = parser.parse_args(argv)

    from pytest_gotchas.model.load import ModelSpec, load_model
    from pytest_gotchas.results.report import from_data
    from pytest_gotchas.scoring.components import component_pass
    from pytest_gotchas.scoring.cut import plan_cut
    from pytest_gotchas.settings.options import Settings

    report = from_data(json.loads(args.report.read_text(encoding="utf-8")))
    loaded = load_model(ModelSpec(name=args.model, device="cpu"), Settings().model_cache)
    info = report.infos[args.chapter]
    prompts = {c.id: {r.primer: (r.prompt, r.correct, r.wrong) for r in c.runs if r.variant is None}
               for c in report.results if c.chapter == args.chapter and c.scored}
    totals: Counter[str] = Counter()
    for first, last in [*info.pairs.values(), *info.twins.values()]:
        for primer in [p for p in prompts.get(last, {}) if p in prompts.get(first, {})]:
            for source, target in ((first, last), (last, first)):
                cuts = [plan_cut(loaded.tokenizer, *prompts[case][primer]) for case in (source, target)]
                passes = [component_pass(loaded.model, tuple(cut.context_ids)) for cut in cuts]
                ids = (cuts[1].correct_ids[0], cuts[1].wrong_ids[0])
                print(f"{source} -> {target}{f' [{primer}]' if primer else ''}:")
                print(direction(loaded.model, *passes, ids, args.metric, totals), flush=True)
    if not totals:
        sys.exit("bench: no direction above the effect floor")
    for name in ("plain", "layer 1 fixed", "every layer fixed"):
        print(f"{name}: {totals[name + ' found within k']} of {totals[name + ' k']} exact top cells found within k "
              f"verifications ({totals[name + ' overlap']} in the top-k); layer 1: "
              f"{totals[name + ' layer 1 within k']} of {totals[name + ' layer 1']}")


if __name__ == "__main__":
    main()
