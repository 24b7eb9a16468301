"""What --gotchas-patch costs: against a plain warm run of the same cases in the same process run, per pair
direction, by method, and what it would cost a 2B and a 7B model by the FLOP count.

    python -m bench.patching                     # every chapter (the whole library), 1 repetition
    python -m bench.patching --spec-chapters --reps 2
    python -m bench.patching --methods 4         # also full / layer-batch / from-layer on the 4 cheapest directions

Whole processes (child.py), warm (transcripts and cuts cached by an uncounted plain run), interleaved: the plain
run, then the same run with --gotchas-patch. The patching seconds are the run's own "patching" phase (its JSON
report's run.timings); the directions, positions and context lengths are read from that report.

The FLOP projection counts the matrix products of the default method (from-layer, scoring/patching.py) for each
direction the run patched, with the same token counts: per layer L one batch of R rows (one per aligned position
and the checks' own), each running layers L+1..N over T tokens and the head over one row; plus the two members'
own passes. Attention's T-squared terms are left out (T is below 200 here: under 5% of a layer's FLOPs). Seconds
are projected at the FLOP rate this run reached on gemma-3-270m; larger matrices usually run faster per FLOP, so
the projection is an upper figure for this CPU, not a measurement.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pytest_gotchas.results.report import Report
from pytest_gotchas.results.schema import Patching
from pytest_gotchas.scoring.align import align
from pytest_gotchas.scoring.patching import rows_per_layer

from . import scenarios
from .child import BenchFailed, Child, header, log, machine, model_folder
from .measure import Context, run_plan
from .scenarios import PLAIN, Group, Scenario

PATCH = Scenario("patch", ("--gotchas-patch",))


@dataclass(frozen=True)
class Shape:
    """What the FLOP count needs of a decoder-only model."""

    name: str
    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int

    @property
    def layer_params(self) -> int:
        attention = self.hidden * self.head_dim * (2 * self.heads + 2 * self.kv_heads)  # q, o; k, v
        return attention + 3 * self.hidden * self.intermediate  # gated MLP: gate, up, down

    def flops(self, tokens: int, rows: int) -> float:
        """One direction by from-layer, and its two members' passes (of about ``tokens`` tokens each)."""
        n, layer, head = self.layers, 2 * self.layer_params, 2 * self.hidden * self.vocab
        cells = rows * (n * (n - 1) / 2 * tokens * layer + n * head)
        return cells + 2 * (n * tokens * layer + head)


# The public configs of the two sizes the issue names (config.json of google/gemma-2-2b, mistralai/Mistral-7B-v0.1).
LARGER = (Shape("gemma-2-2b", 26, 2304, 9216, 8, 4, 256, 256000),
          Shape("Mistral-7B-v0.1", 32, 4096, 14336, 32, 8, 128, 32000))


def shape_of(folder: Path, name: str) -> Shape:
    c = json.loads((folder / "config.json").read_text())
    c = c.get("text_config", c)
    return Shape(name, c["num_hidden_layers"], c["hidden_size"], c["intermediate_size"], c["num_attention_heads"],
                 c["num_key_value_heads"], c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"],
                 c["vocab_size"])


def directions(report: Report) -> list[Patching]:
    return [p for case in report.cases for p in case.patching]


def projection(entries: list[Patching], shape: Shape) -> float:
    return sum(shape.flops(len(p.target_ids), rows_per_layer(align(tuple(p.source_ids), tuple(p.target_ids))))
               for p in entries)


def median(runs: list[Child], get: Callable[[Child], float]) -> float:
    return statistics.median(get(c) for c in runs)


def cost_markdown(runs: dict[str, list[Child]], shape: Shape) -> list[str]:
    plain, patch = runs[PLAIN.name], runs[PATCH.name]
    report = patch[-1].report
    assert report is not None
    entries = directions(report)
    if not entries:
        raise BenchFailed("the --gotchas-patch run patched no direction: no pair has both members selected")
    seconds = median(patch, lambda c: c.seconds("patching"))
    cells = sum(len(p.layers) * len(p.positions) for p in entries)
    wall_plain, wall_patch = median(plain, lambda c: c.wall), median(patch, lambda c: c.wall)
    measured = projection(entries, shape)
    rate = measured / seconds
    methods = sorted({p.method for p in entries})
    lines = [
        f"{len(entries)} pair directions ({len({p.group for p in entries})} pairs and twins, primers counted apart), "
        f"{cells} cells, method {', '.join(methods)}; {len(plain)} repetition(s), medians.",
        "",
        "| | seconds | x plain |",
        "|---|---:|---:|",
        f"| plain warm run, whole process | {wall_plain:.1f} | 1.00 |",
        f"| with --gotchas-patch, whole process | {wall_patch:.1f} | {wall_patch / wall_plain:.2f} |",
        f"| its patching phase | {seconds:.1f} | {seconds / wall_plain:.2f} |",
        f"| per pair direction | {seconds / len(entries):.2f} | {seconds / len(entries) / wall_plain:.4f} |",
        "",
        f"FLOP rate of the patching phase on {shape.name}: {rate / 1e9:.1f} GFLOP/s "
        f"({measured / 1e12:.2f} TFLOP counted).",
        "",
        "| model (by FLOP count, same directions and token counts) | TFLOP | patching phase at this rate | "
        "per direction |",
        "|---|---:|---:|---:|",
    ]
    for s in (shape, *LARGER):
        flops = projection(entries, s)
        lines.append(f"| {s.name} ({s.layers} layers, {s.layer_params / 1e6:.1f}M parameters a layer) | "
                     f"{flops / 1e12:.2f} | {flops / rate / 60:.1f} min | {flops / rate / len(entries):.1f} s |")
    return lines


def methods_markdown(report: Report, folder: Path, count: int) -> list[str]:
    """Each method on the ``count`` cheapest directions, in this process: seconds, and cells against the report's."""
    from pytest_gotchas.model.load import ModelSpec, load_model
    from pytest_gotchas.settings.options import Settings
    from pytest_gotchas.scoring import patching as P

    loaded = load_model(ModelSpec(name=None, device="cpu"), Settings().model_cache)
    model = loaded.model
    chosen = sorted(directions(report), key=lambda p: len(p.positions) * len(p.target_ids))[:count]
    lines = ["| direction | T | positions | " + " | ".join(f"{m} s" for m in P.METHODS) +
             " | largest difference from the report's cells, as a fraction of the effect |",
             "|---|---:|---:|" + "---:|" * (len(P.METHODS) + 1)]
    for entry in chosen:
        source, target = P.member_pass(model, entry.source_ids), P.member_pass(model, entry.target_ids)
        ids = (entry.candidate_ids[0], entry.candidate_ids[1])
        times, worst = [], 0.0
        for method in P.METHODS:
            started = time.perf_counter()
            result = P.patch(model, source, target, ids, method)
            times.append(time.perf_counter() - started)
            effect = abs(result.effect) or 1.0
            worst = max([worst, *(abs(a - b) / effect for row, mine in zip(result.cells, entry.cells)
                                  for a, b in zip(row, mine))])
        lines.append(f"| {entry.source} -> {entry.target} | {len(entry.target_ids)} | {len(entry.positions)} | " +
                     " | ".join(f"{t:.2f}" for t in times) + f" | {worst:g} |")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.patching", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=1, help="repetitions of the two warm runs (default 1)")
    parser.add_argument("--spec-chapters", action="store_true", help="only the spec's chapters (cases/0-4)")
    parser.add_argument("--methods", type=int, default=0, metavar="N",
                        help="also time every method on the N cheapest directions (default 0: none)")
    args = parser.parse_args(argv)
    info = machine()
    root = Path(tempfile.mkdtemp(prefix="gotchas-patching-"))
    try:
        folder = model_folder()
        ctx = Context(root, scenarios.chapters(not args.spec_chapters), folder)
        runs = run_plan(ctx, [Group((PLAIN, PATCH), args.reps)])
        lines = cost_markdown(runs, shape_of(folder, "gemma-3-270m"))
        if args.methods:
            log(f"timing every method on the {args.methods} cheapest directions")
            report = runs[PATCH.name][-1].report
            assert report is not None
            lines += ["", *methods_markdown(report, folder, args.methods)]
    except BenchFailed as failed:
        sys.exit(f"bench: {failed}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(header("--gotchas-patch cost", info, "the spec chapters" if args.spec_chapters else "every chapter"))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
