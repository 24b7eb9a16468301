"""A user's first minutes: a cold run against a warm one, for the plain run and with --gotchas-variants, phase by
phase; and what a warm pass costs in bfloat16 (the default) against float32 and the float32-matmul kernel path on
this CPU, with the verdicts that path changes.

    python -m bench.firstrun                   # the spec's chapters, 1 repetition
    python -m bench.firstrun --reps 2 --all-chapters
    python -m bench.firstrun --emulate-avx2    # torch and oneDNN held to AVX2: a CPU without AVX-512, emulated

Whole processes (child.py), in this order per repetition: cold plain, warm plain (in the cold run's copy), cold
with variants (a fresh copy: empty .pytest_cache), warm with variants (in that copy), warm plain in float32, warm
plain with --gotchas-kernels float32-matmul. Cold means an empty cache folder; the model is converted already (once
per machine) and the process starts the same way. The phases are each run's own (its JSON report's run.timings);
seconds per pass are the forward phase over the full passes and incremental steps it made.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from pytest_gotchas.results.report import Report

from . import scenarios
from .child import BenchFailed, Child, header, machine, model_folder
from .measure import Context, run_plan
from .scenarios import COLD, Group, Scenario

VARIANTS = ("--gotchas-variants",)
FAST = "warm, float32-matmul"
RUNS = (Scenario("cold", cache=COLD), Scenario("warm"), Scenario("cold, variants", VARIANTS, cache=COLD),
        Scenario("warm, variants", VARIANTS), Scenario("warm, float32", ("--gotchas-dtype", "float32")),
        Scenario(FAST, ("--gotchas-kernels", "float32-matmul")))
# What torch (ATen) and oneDNN may use on a CPU without AVX-512: set on an AVX-512 machine, it measures an AVX2-only
# one's kernels on this one's memory and clocks (an emulation, and reported as one).
AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}
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


def changes(plain: Report, other: Report) -> tuple[list[str], int, int, float]:
    """What `other` changes against `plain`, case by case: the verdicts that differ ("key: MISS -> ok"), how many of
    the runs both scored have other probabilities, of how many, and the largest |dP| of either candidate."""
    before = {r.key: r for r in plain.results if r.scored}
    verdicts, differing, runs, largest = [], 0, 0, 0.0
    for result in other.results:
        old = before.get(result.key)
        if old is None or not result.scored:
            continue
        if old.verdict != result.verdict:
            verdicts.append(f"{result.key}: {old.verdict} -> {result.verdict}")
        for a, b in zip(old.runs, result.runs):
            runs += 1
            moved = max(abs(a.p_correct - b.p_correct), abs(a.p_wrong - b.p_wrong))
            differing += moved > 0
            largest = max(largest, moved)
    return verdicts, differing, runs, largest


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
    bf16, f32, fast = med("warm", per_pass), med("warm, float32", per_pass), med(FAST, per_pass)
    plain, other = runs["warm"][-1].report, runs[FAST][-1].report
    assert plain is not None and other is not None  # plugin runs always have one (child.plugin)
    verdicts, differing, compared, largest = changes(plain, other)
    return lines + [
        "",
        f"- first run / warm run, whole process: plain **{cold / warm:.2f}x**, with variants **{vcold / vwarm:.2f}x** "
        f"(target: within 1.5x)",
        f"- a warm pass in bfloat16 / float32: **{bf16 / f32:.2f}x** (target: within 1.3x); on the float32-matmul "
        f"path / float32: **{fast / f32:.2f}x**",
        f"- the float32-matmul path against plain bfloat16: probabilities differ in {differing} of {compared} runs "
        f"(largest |dP| {largest:.4f}); {len(verdicts)} case verdicts change: {', '.join(verdicts) or 'none'}",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.firstrun", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=1, help="repetitions (default 1)")
    parser.add_argument("--all-chapters", action="store_true", help="every chapter in cases/, not only the spec's")
    parser.add_argument("--emulate-avx2", action="store_true", help="hold torch and oneDNN to AVX2 (%s)" % ", ".join(
        f"{k}={v}" for k, v in AVX2.items()))
    args = parser.parse_args(argv)
    plan = tuple(dataclasses.replace(s, env={**s.env, **AVX2}) for s in RUNS) if args.emulate_avx2 else RUNS
    info = machine()
    root = Path(tempfile.mkdtemp(prefix="gotchas-firstrun-"))
    try:
        ctx = Context(root, scenarios.chapters(args.all_chapters), model_folder())
        lines = markdown(run_plan(ctx, [Group(plan, args.reps)]))
    except BenchFailed as failed:
        sys.exit(f"bench: {failed}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    cases = "every chapter" if args.all_chapters else "the spec chapters"
    cpu = bf16_flags() + ("; AVX2 only, EMULATED: " + " ".join(f"{k}={v}" for k, v in AVX2.items())
                          if args.emulate_avx2 else "")
    print(header("First runs and bfloat16", info, f"{cases}, {args.reps} repetition(s), medians", cpu))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
