"""What --gotchas-patch-components costs, beside the residual grid: per pair direction of a JSON report written with
--gotchas-patch, in this one process and on the report's own token ids, the residual grid (scoring/patching.py,
from-layer), the exact component grid (scoring/components.py) and the screen with its top-k verified
(scoring/screen.py), side by side; then the FLOP projection of the three to a 2B, a 9B and a 70B model.

    pytest --gotchas cases/ -k sets --gotchas-patch --gotchas-json /tmp/sets.json
    python -m bench.components /tmp/sets.json [--model smollm2-135m] [--k 20] [--limit N]

Or, without recomputing anything, from the wall seconds a report written with --gotchas-patch-components or
--gotchas-patch-screen recorded per direction (schema.Patching.seconds, Components.grid_seconds, screen_seconds,
verify_seconds: each in the process that ran it, the members' own forward passes in none): the same side by side,
their totals, the ratio (screen + verify) / residual the issue aims to keep under a third over a whole library, and
the same FLOP projection (k: each direction's own count of screened cells). A whole library's costs from one plugin
run, where recomputing them here takes hours:

    pytest --gotchas cases/ --gotchas-patch-screen --gotchas-json /tmp/lib.json
    python -m bench.components --from-report /tmp/lib.json

The FLOP count (matrix products only; attention's T-squared terms left out, as in bench/patching.py): the residual
grid runs layers L+1..N for each of R rows at layer L; a component cell at layer L runs layers L..N (the layer itself
again), for P*(2+H) cells, P all-heads checks and the checks' rows per layer; the screen is one forward and one
backward pass of the target (about three passes), GradDrop's backward pass per layer but one (about two passes each;
they are most of the screen's cost on a deep model), plus k verified cells at about half the layers each.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from pytest_gotchas.results.reading import read_report
from pytest_gotchas.results.schema import Patching

from .patching import LARGER, Shape
from pytest_gotchas.results.vocabulary import ComponentsMethod

# Public configs (config.json of google/gemma-2-9b and meta-llama/Meta-Llama-3-70B).
BIGGER = (LARGER[0],
          Shape("gemma-2-9b", 42, 3584, 14336, 16, 8, 256, 256000),
          Shape("Llama-3-70B", 80, 8192, 28672, 64, 8, 128, 128256))


def residual_flops(shape: Shape, tokens: int, rows: int) -> float:
    n, layer = shape.layers, 2 * shape.layer_params
    return rows * n * (n - 1) / 2 * tokens * layer


def component_flops(shape: Shape, tokens: int, positions: int) -> float:
    n, layer = shape.layers, 2 * shape.layer_params
    rows = positions * (3 + shape.heads) + 6  # the cells, the all-heads checks, the prefix and self-patch checks
    return rows * n * (n + 1) / 2 * tokens * layer


def screen_flops(shape: Shape, tokens: int, k: int, graddrop: bool = True) -> float:
    n, layer = shape.layers, 2 * shape.layer_params
    dropped = (n - 1) * 2 * n * tokens * layer if graddrop else 0.0  # GradDrop: a whole backward pass per layer
    return 3 * n * tokens * layer + dropped + k * (n / 2 + 1) * tokens * layer


@dataclass(frozen=True)
class Recorded:
    """What one direction's patching cost in the run that wrote the report, in wall seconds."""

    direction: str  # "source -> target [primer]"
    tokens: int  # the target's context length
    positions: int  # aligned positions
    method: str  # Components.method: "exact" (grid and screen) or "screen" (the screen alone)
    k: int  # the screen's verified cells
    residual: float
    grid: float  # 0.0 where the grid did not run (the screen alone)
    screen: float
    verify: float


class NotRecorded(ValueError):
    """A report that cannot give the costs: no components, or written before the seconds were recorded."""


def recorded(entries: list[Patching]) -> list[Recorded]:
    """Each direction's recorded costs; NotRecorded where the report cannot give them."""
    found = []
    for p in entries:
        c = p.components
        if c is None:
            raise NotRecorded(f"{p.source} -> {p.target} has no components: run the report with "
                              "--gotchas-patch-components or --gotchas-patch-screen")
        if not p.seconds or not (c.screen_seconds or c.verify_seconds):
            raise NotRecorded(f"{p.source} -> {p.target} records no seconds: the report was written before the costs "
                              "were recorded (run it again)")
        primer = f" [{p.primer}]" if p.primer else ""
        found.append(Recorded(f"{p.source} -> {p.target}{primer}", len(p.target_ids), len(p.positions), c.method,
                              len(c.screened), p.seconds, c.grid_seconds, c.screen_seconds, c.verify_seconds))
    return found


def ratio(part: float, whole: float) -> float | None:
    return part / whole if whole else None


def _times(r: Recorded) -> str:
    grid = f"{r.grid:.2f}" if r.method == ComponentsMethod.EXACT else "not run"
    share = ratio(r.screen + r.verify, r.residual)
    return (f"{r.residual:.2f} | {grid} | {r.screen:.2f} | {r.verify:.2f} | "
            + ("" if share is None else f"{share:.2f}"))


def recorded_table(costs: list[Recorded]) -> list[str]:
    """The recorded costs side by side, per direction, then their totals and the ratios to the residual grid."""
    lines = ["| direction | T | positions | k | residual s | component grid s | screen s | verify s | "
             "(screen + verify) / residual |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r.direction} | {r.tokens} | {r.positions} | {r.k} | {_times(r)} |" for r in costs]
    method = ComponentsMethod.EXACT if any(r.method == ComponentsMethod.EXACT for r in costs) else ComponentsMethod.SCREEN  # the grid's total shown where any ran
    total = Recorded(f"all {len(costs)} directions", 0, 0, method, 0,
                     *(sum(getattr(r, f) for r in costs) for f in ("residual", "grid", "screen", "verify")))
    lines.append(f"| {total.direction} | | | | {_times(total)} |")
    lines.append("")
    share = ratio(total.screen + total.verify, total.residual)
    lines.append("(screen + verify) / residual over the report: " + ("no residual time recorded" if share is None
                 else f"{share:.3f} (aim: under 1/3)"))
    grids = [r for r in costs if r.method == ComponentsMethod.EXACT]
    if grids:
        grid = ratio(sum(r.grid for r in grids), sum(r.residual for r in grids))
        lines.append(f"component grid / residual over the {len(grids)} directions that ran it: "
                     + ("no residual time recorded" if grid is None else f"{grid:.3f}"))
    return lines


def projection(entries: list[Patching], k: Callable[[Patching], int]) -> list[str]:
    """The FLOP count of the three methods on the report's directions (their token counts and alignments), on each
    of BIGGER's shapes; ``k``: a direction's screened cells."""
    from pytest_gotchas.scoring.align import align
    from pytest_gotchas.scoring.patching import rows_per_layer

    lines = ["| model (FLOP count, same directions and token counts) | residual TFLOP | components TFLOP | "
             "screen + verify TFLOP |", "|---|---:|---:|---:|"]
    for shape in BIGGER:
        sums = [0.0, 0.0, 0.0]
        for entry in entries:
            tokens, alignment = len(entry.target_ids), align(tuple(entry.source_ids), tuple(entry.target_ids))
            sums[0] += residual_flops(shape, tokens, rows_per_layer(alignment))
            sums[1] += component_flops(shape, tokens, len(alignment.pairs))
            sums[2] += screen_flops(shape, tokens, k(entry))
        lines.append(f"| {shape.name} | " + " | ".join(f"{s / 1e12:.1f}" for s in sums) + " |")
    return lines


def from_report(path: Path) -> None:
    entries: list[Patching] = [p for case in read_report(path).cases for p in case.patching]
    if not entries:
        sys.exit("bench: the report has no patched direction (run it with --gotchas-patch-screen or "
                 "--gotchas-patch-components)")
    try:
        costs = recorded(entries)
    except NotRecorded as error:
        sys.exit(f"bench: {error}")
    print("\n".join(recorded_table(costs)))
    print()
    print("\n".join(projection(entries, lambda e: len(e.components.screened) if e.components else 0)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.components", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("report", type=Path, nargs="?", help="a JSON report written with --gotchas-patch: recompute")
    parser.add_argument("--from-report", type=Path, default=None, metavar="REPORT",
                        help="a JSON report written with --gotchas-patch-components or --gotchas-patch-screen: "
                        "summarize the costs it recorded, recomputing nothing")
    parser.add_argument("--model", default=None, help="the model the report ran (default: the embedded default)")
    parser.add_argument("--k", type=int, default=20, help="the screen's top-k (default 20)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N directions (default: all)")
    args = parser.parse_args(argv)
    if (args.report is None) == (args.from_report is None):
        parser.error("give a report to recompute, or --from-report REPORT to summarize (one of the two)")
    if args.from_report is not None:
        from_report(args.from_report)
        return

    from pytest_gotchas.model.load import ModelSpec, load_model
    from pytest_gotchas.settings.options import Settings
    from pytest_gotchas.scoring import patching as P
    from pytest_gotchas.scoring.components import component_pass, patch_components
    from pytest_gotchas.results.screening import screen_score
    from pytest_gotchas.results.vocabulary import Cell, ComponentKind
    from pytest_gotchas.scoring.screen import screen

    report = read_report(args.report)
    entries: list[Patching] = [p for case in report.cases for p in case.patching]
    if not entries:
        sys.exit("bench: the report has no patched direction (run it with --gotchas-patch)")
    entries = entries[:args.limit] if args.limit else entries
    loaded = load_model(ModelSpec(name=args.model, device="cpu"), Settings().model_cache)
    model = loaded.model
    print("| direction | T | positions | residual s | components s | screen + verify s | best component (exact) "
          "| screen: overlap with the exact top-k, curve's area |")
    print("|---|---:|---:|---:|---:|---:|---|---|")
    totals = [0.0, 0.0, 0.0]
    for entry in entries:
        ids = (entry.candidate_ids[0], entry.candidate_ids[1])
        source, target = component_pass(model, tuple(entry.source_ids)), component_pass(model, tuple(entry.target_ids))
        times = []
        started = time.perf_counter()
        P.patch_exact(model, source.member, target.member, ids)
        times.append(time.perf_counter() - started)
        started = time.perf_counter()
        grid = patch_components(model, source, target, ids)
        times.append(time.perf_counter() - started)
        started = time.perf_counter()
        screened = screen(model, source, target, ids, args.k)
        times.append(time.perf_counter() - started)
        exact = {}
        for i, layer in enumerate(grid.layers):
            for j in range(len(grid.positions)):
                exact[Cell(ComponentKind.ATTN, layer, 0, j)] = grid.attn[i][j]
                exact[Cell(ComponentKind.MLP, layer, 0, j)] = grid.mlp[i][j]
                exact.update((Cell(ComponentKind.HEAD, layer, h, j), grid.head[i][h][j]) for h in range(grid.heads))
        effect = grid.source_value - grid.unpatched
        best = max(exact, key=lambda c: (exact[c] - grid.unpatched) / effect) if effect else None
        named = (f"{best.kind} {best.layer}{'.' + str(best.head) if best.kind == ComponentKind.HEAD else ''} at "
                 f"position {grid.positions[best.position][1]}: {(exact[best] - grid.unpatched) / effect * 100:.0f}%"
                 if best else "no effect")
        every = len(screened.estimates)
        score = screen_score(screened.top(every), screened.top(every, graddrop=False),
                             {c: v - grid.unpatched for c, v in exact.items()}, args.k)
        shown = f"{score.overlap}/{score.k}, {score.area:.3f}"
        totals = [a + b for a, b in zip(totals, times)]
        print(f"| {entry.source} -> {entry.target} | {len(entry.target_ids)} | {len(entry.positions)} | "
              + " | ".join(f"{t:.2f}" for t in times) + f" | {named} | {shown} |")
    print(f"| all {len(entries)} directions | | | " + " | ".join(f"{t:.1f}" for t in totals) + " | | |")
    print()
    print("\n".join(projection(entries, lambda _: args.k)))


if __name__ == "__main__":
    main()
