"""A user's first minutes: a cold run against a warm one, for the plain run and with --gotchas-variants, phase by
phase; and what a warm pass costs in bfloat16 (the default) against float32 on this CPU.

    python -m bench.firstrun                   # the spec's chapters, 1 repetition
    python -m bench.firstrun --reps 2 --all-chapters

Whole processes (child.py), in this order per repetition: cold plain, warm plain (in the cold run's copy), cold
with variants (a fresh copy: empty .pytest_cache), warm with variants (in that copy), warm plain in float32. Cold
means an empty cache folder; the model is converted already (once per machine) and the process starts the same way.
The phases are each run's own (its JSON report's run.timings); seconds per pass are the forward phase over the
full passes and incremental steps it made.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from . import scenarios
from .child import BenchFailed, Child, header, machine, model_folder
from .measure import Context, run_plan
from .scenarios import COLD, Group, Scenario

VARIANTS = ("--gotchas-variants",)
RUNS = (Scenario("cold", cache=COLD), Scenario("warm"), Scenario("cold, variants", VARIANTS, cache=COLD),
        Scenario("warm, variants", VARIANTS), Scenario("warm, float32", ("--gotchas-dtype", "float32")))
PHASES = ("collection", "model_load", "tokenizer_load", "cuts", "forward", "report")
NATIVE_BF16 = ("avx512_bf16", "amx_bf16")  # CPU flags with bfloat16 matmul instructions


def bf16_flags() -> str:
    flags = next((line.split(":", 1)[1].split() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("flags")), [])
    found = [f for f in NATIVE_BF16 if f in flags]
    return f"native bfloat16 ({', '.join(found)})" if found else "no native bfloat16 (neither of " \
        f"{', '.join(NATIVE_BF16)})"


def per_pass(child: Child) -> float:
    t = child.timings
    return child.seconds("forward") / max(1, t.forward_passes + t.incremental_steps)


def markdown(runs: dict[str, list[Child]]) -> list[str]:
    def med(name: str, get: Callable[[Child], float]) -> float:
        return statistics.median(get(c) for c in runs[name])

    names = [s.name for s in RUNS]
    lines = ["| seconds | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    lines.append("| whole process | " + " | ".join(f"{med(n, lambda c: c.wall):.1f}" for n in names) + " |")
    for phase in PHASES:
        lines.append(f"| {phase} | " + " | ".join(f"{med(n, lambda c: c.seconds(phase)):.2f}" for n in names) + " |")
    lines.append("| full passes + steps | " + " | ".join(
        f"{runs[n][-1].timings.forward_passes} + {runs[n][-1].timings.incremental_steps}" for n in names) + " |")
    lines.append("| forward seconds per pass | " + " | ".join(f"{med(n, per_pass):.3f}" for n in names) + " |")
    cold, warm = med("cold", lambda c: c.wall), med("warm", lambda c: c.wall)
    vcold, vwarm = med("cold, variants", lambda c: c.wall), med("warm, variants", lambda c: c.wall)
    bf16, f32 = med("warm", per_pass), med("warm, float32", per_pass)
    return lines + [
        "",
        f"- first run / warm run, whole process: plain **{cold / warm:.2f}x**, with variants **{vcold / vwarm:.2f}x** "
        f"(target: within 1.5x)",
        f"- a warm pass in bfloat16 / float32: **{bf16 / f32:.2f}x** (target: within 1.3x)",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.firstrun", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=1, help="repetitions (default 1)")
    parser.add_argument("--all-chapters", action="store_true", help="every chapter in cases/, not only the spec's")
    args = parser.parse_args(argv)
    info = machine()
    root = Path(tempfile.mkdtemp(prefix="gotchas-firstrun-"))
    try:
        ctx = Context(root, scenarios.chapters(args.all_chapters), model_folder())
        lines = markdown(run_plan(ctx, [Group(RUNS, args.reps)]))
    except BenchFailed as failed:
        sys.exit(f"bench: {failed}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    cases = "every chapter" if args.all_chapters else "the spec chapters"
    print(header("First runs and bfloat16", info, f"{cases}, {args.reps} repetition(s), medians", bf16_flags()))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
