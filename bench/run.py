"""How fast pytest-gotchas is, measured against the spec's own method, in one process run.

    python -m bench.run                  # everything (about 20-40 minutes on a shared 2-core machine)
    python -m bench.run --reps 1 --scales 1,4 --no-exec-count     # a quicker look
    python -m bench.run --reps 3 --cost-only                      # warm against naive, side by side, only

Prints the markdown of RESULTS.md (render.bench_markdown); what each figure is, is said in bench/__init__.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
import tempfile
from pathlib import Path

from . import executions, render, scenarios
from .child import BenchFailed, log, machine, model_folder
from .figures import BenchFigures
from .measure import Context, bench_figures, run_plan


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3, help="repetitions of naive / cold / warm (default 3)")
    parser.add_argument("--scales", default="1,4,16", help="case-set sizes, as multiples of the spec's (default 1,4,16)")
    parser.add_argument("--scale-reps", type=int, default=2, help="warm runs per scale above 1x (default 2)")
    parser.add_argument("--batch-sizes", default="4,8", help="batch sizes checked against batch 1 (default 4,8)")
    parser.add_argument("--all-chapters", action="store_true", help="every chapter in cases/, not only the spec's")
    parser.add_argument("--no-exec-count", action="store_true", help="skip the logged cold runs (serial, -n 2)")
    parser.add_argument("--no-xdist", action="store_true", help="skip the -n 2 warm runs")
    parser.add_argument("--cost-only", action="store_true", help="only cold, warm and naive (and the same-numbers "
                        "checks): as --scales 1 --batch-sizes '' --no-xdist --no-exec-count, without --collect-only")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    if args.cost_only:
        args.no_exec_count = True
    return args


def measure(args: argparse.Namespace, root: Path) -> BenchFigures:
    def ints(text: str) -> tuple[int, ...]:
        return tuple(int(s) for s in text.split(",") if s)

    options = scenarios.BenchOptions(args.reps, ints(args.batch_sizes), ints(args.scales), args.scale_reps,
                                     xdist=not args.no_xdist)
    if args.cost_only:
        options = scenarios.cost_only(options)
    info = machine()
    log(f"machine: {info.nproc} cores, {info.memory}, {info.cpu}; load {info.load}")
    ctx = Context(root, scenarios.chapters(args.all_chapters), model_folder())
    runs = run_plan(ctx, scenarios.bench_plan(options))
    checked = None if args.no_exec_count else executions.check(ctx)
    return bench_figures(ctx, runs, info, options, checked)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    root = Path(tempfile.mkdtemp(prefix="gotchas-bench-"))
    try:
        figures = measure(args, root)
    except BenchFailed as failed:
        sys.exit(f"bench: {failed}")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(render.bench_markdown(figures), end="")
    if args.json:
        args.json.write_text(json.dumps(dataclasses.asdict(figures), indent=1))


if __name__ == "__main__":
    main()
