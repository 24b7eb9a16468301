"""Know the floor (#41): in one run on one machine, the floor of a warm run, the plugin warm and cold, the naive
script, and every second of the plugin's wall time in a phase.

    python -m bench.floor                  # the spec's chapters, 2 repetitions, on the CPU
    python -m bench.floor --reps 3 --all-chapters
    python -m bench.floor --chapters 2-sets.yaml --reps 1
    python -m bench.floor --device cuda    # bench/device.sh runs this on a GPU

Whole processes (child.py), each repetition in a rotating order (A B C, B C A, ...), medians and the median of the
per-repetition ratios:

- floor: bench/floor_script.py, the least a warm run must do: interpreter start and imports, reading the weights,
  one pass per prompt that computes only the cut's row (the prompts' token ids prepared beforehand, uncounted);
- warm: `pytest --gotchas cases` in a copy whose caches a first run filled, through bench/traced.py, which puts every
  second of the process in a phase (interpreter start, imports, pytest start-up, collection, the test loop split by
  the plugin's own timings, the session's end, exit);
- naive: bench/naive.py, the spec's script;
- cold: a fresh copy of the cases (empty pytest cache: every snippet executed, every cut tokenized; the model
  converted and its load facts kept already, as after any earlier run on this machine);
- variants: a first `--gotchas-variants` run of one chapter (2-sets) in a fresh copy, then a warm one in it;
- collect-only: `pytest --gotchas cases --collect-only` warm, against a bare `pytest --collect-only` in an empty
  folder;
- serial (--serial): a first run with `--gotchas-jobs 1`, the snippets one after another and then the model, against
  the cold run, whose model loads beside the snippets (#52).

Each process also gives its CPU seconds (user and system, its children's included): on a shared machine the
steadier measure of the work done. The children run with bytecode caching on (PYTHONDONTWRITEBYTECODE is dropped
from their environment, bench/child.py), as any installed plugin is imported.

    python -m bench.floor --reps 3 --serial                  # the spec chapters (#52's figures)
    python -m bench.floor --reps 2 --serial --all-chapters   # the whole library
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import scenarios
from .child import BenchFailed, Child, header, log, machine, model_folder, plugin, run_child, script
from .measure import Context

HERE = Path(__file__).parent
TRACED, FLOOR, NAIVE = HERE / "traced.py", HERE / "floor_script.py", HERE / "naive.py"
VARIANTS_CHAPTER = "2-sets.yaml"
PLUGIN_LOOP = ("model_load", "tokenizer_load", "cuts", "forward")  # the plugin's own timings inside the test loop
AHEAD = "test loop: less what of those ran ahead, beside collection"
TOKENIZE = """
import json, sys
from transformers import AutoTokenizer
t = AutoTokenizer.from_pretrained(sys.argv[1])
first = lambda text: t(text, add_special_tokens=False)["input_ids"][0]
json.dump([{"ids": t(p["prompt"])["input_ids"], "correct": first(p["correct"]), "wrong": first(p["wrong"])}
           for p in json.load(open(sys.argv[2]))], open(sys.argv[3], "w"))
"""


@dataclass
class Traced:
    child: Child
    phases: dict[str, float] = field(default_factory=dict)  # every second of child.wall, in order


def traced(workdir: Path, name: str, *args: str, report: bool = True) -> Traced:
    """`pytest --gotchas cases ARGS` through bench/traced.py: its phases, the interpreter's exit the remainder."""
    out, trace = workdir / f"{name}.json", workdir / f"{name}.trace.json"
    out.unlink(missing_ok=True)
    json_args = ("--gotchas-json", str(out)) if report else ()
    argv = [sys.executable, "-c", TRACED.read_text(), str(trace), "--gotchas", "cases", *json_args, *args]
    child = run_child(argv, workdir, out if report else None)
    if child.returncode not in (0, 1) or (report and child.report is None) or not trace.is_file():
        raise BenchFailed(f"traced pytest {' '.join(argv[4:])} failed (exit {child.returncode}) in {workdir}:\n"
                          f"{child.stdout[-3000:]}\n{child.stderr[-3000:]}")
    phases = json.loads(trace.read_text())["phases"]
    loop = phases.pop("test loop")
    split = {f"test loop: {p}": child.seconds(p) for p in PLUGIN_LOOP}
    # A load ahead's phases ran beside collection, before the loop waited for the rest (scoring/ahead.py).
    split[AHEAD] = -child.seconds("ahead")
    ordered: dict[str, float] = {}
    for key, value in phases.items():
        ordered[key] = value
        if key == "between collection and the loop":
            ordered.update(split)
            ordered["test loop: the rest (pytest's per-test work, verdicts)"] = loop - sum(split.values())
    ordered["interpreter exit (the remainder)"] = child.wall - sum(ordered.values())
    return Traced(child, ordered)


@dataclass
class Runs:
    floor: list[Child] = field(default_factory=list)
    naive: list[Child] = field(default_factory=list)
    warm: list[Traced] = field(default_factory=list)
    cold: list[Traced] = field(default_factory=list)
    variants_cold: list[Traced] = field(default_factory=list)
    variants_warm: list[Traced] = field(default_factory=list)
    collect: list[Traced] = field(default_factory=list)
    bare: list[Child] = field(default_factory=list)
    serial: list[Traced] = field(default_factory=list)  # --serial: first runs with --gotchas-jobs 1


def prepare(ctx: Context, root: Path, device: str) -> tuple[Path, Path]:
    """A warm copy of the cases (its first run uncounted) and the prompts' token ids for the floor."""
    workdir = ctx.fresh(1)
    log("first run in a copy of the cases (not counted): fills its caches, gives the prompts")
    ctx.prompt_source = plugin(workdir, "warm-up", "--gotchas-device", device).report
    ctx.warm_dirs[1] = workdir
    ids = root / "ids.json"
    script(root, "-c", TOKENIZE, str(ctx.model), str(ctx.prompts()), str(ids))
    return workdir, ids


def run(ctx: Context, root: Path, reps: int, device: str, keep: Path | None = None, serial: bool = False) -> Runs:
    warm_dir, ids = prepare(ctx, root, device)
    empty = root / "empty"
    empty.mkdir()
    runs, dev = Runs(), ("--gotchas-device", device)
    steps = {
        # as -c, as the naive script: a script's own folder first on sys.path would make bench/kernels.py the
        # `kernels` package that transformers imports
        "floor": lambda: runs.floor.append(script(root, "-c", FLOOR.read_text(), str(ctx.model), str(ids),
                                                  device)),
        "warm": lambda: runs.warm.append(traced(warm_dir, "warm", *dev)),
        "naive": lambda: runs.naive.append(script(root, "-c", NAIVE.read_text(), str(ctx.model),
                                                  str(ctx.prompts()), device)),
        "cold": lambda: runs.cold.append(traced(ctx.fresh(1), "cold", *dev)),
    }
    if serial:  # a first run that does one thing at a time: the snippets one by one, then the model
        steps["serial"] = lambda: runs.serial.append(traced(ctx.fresh(1), "serial", "--gotchas-jobs", "1", *dev))
    order = list(steps)
    for rep in range(reps):
        for name in order[rep % len(order):] + order[: rep % len(order)]:
            log(f"{name}, repetition {rep + 1}/{reps}")
            steps[name]()
            last = getattr(runs, name)[-1]
            log(f"{name}: {(last.child if isinstance(last, Traced) else last).wall:.1f} s")
        log(f"variants of {VARIANTS_CHAPTER}, cold then warm, repetition {rep + 1}/{reps}")
        chapter = scenarios.make_workdir(root, f"variants{rep}", [scenarios.REPO / "cases" / VARIANTS_CHAPTER], 1)
        runs.variants_cold.append(traced(chapter, "cold-variants", "--gotchas-variants", *dev))
        runs.variants_warm.append(traced(chapter, "warm-variants", "--gotchas-variants", *dev))
        log(f"collect-only, warm and bare, repetition {rep + 1}/{reps}")
        runs.collect.append(traced(warm_dir, "collect", "--collect-only", "-q", report=False))
        runs.bare.append(run_child([sys.executable, "-m", "pytest", "--collect-only", "-q"], empty))
    if keep is not None:  # the last warm run's report, to read its verdicts where the machine is handed back
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copy(warm_dir / "warm.json", keep / "warm.json")
    return runs


def med(values: list[float]) -> float:
    return statistics.median(values)


def paired(a: list[float], b: list[float]) -> float:
    """The median of the per-repetition ratios a/b."""
    return med([x / y for x, y in zip(a, b)])


def walls(runs: list[Traced]) -> list[float]:
    return [t.child.wall for t in runs]


def phase_table(columns: dict[str, list[Traced]]) -> list[str]:
    names = list(columns)
    lines = ["| phase (seconds, medians) | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for phase in columns[names[0]][0].phases:
        lines.append(f"| {phase} | " + " | ".join(f"{med([t.phases[phase] for t in columns[n]]):.2f}"
                                                  for n in names) + " |")
    lines.append("| **whole process** | " + " | ".join(f"**{med(walls(columns[n])):.2f}**" for n in names) + " |")
    return lines


def script_table(runs: Runs) -> list[str]:
    lines = ["| phase (seconds, medians) | floor | naive |", "|---|---:|---:|"]
    for phase in ("imports", "tokenizer_load", "weights", "forward"):
        value = {n: [c.extra["seconds"].get(phase, 0.0) for c in getattr(runs, n)] for n in ("floor", "naive")}
        lines.append(f"| {phase} | {med(value['floor']):.2f} | {med(value['naive']):.2f} |")
    rest = {n: [c.wall - sum(c.extra["seconds"].values()) for c in getattr(runs, n)] for n in ("floor", "naive")}
    lines.append(f"| interpreter start and exit (the remainder) | {med(rest['floor']):.2f} | "
                 f"{med(rest['naive']):.2f} |")
    lines.append(f"| **whole process** | **{med([c.wall for c in runs.floor]):.2f}** | "
                 f"**{med([c.wall for c in runs.naive]):.2f}** |")
    lines.append(f"| passes (tokens) | {runs.floor[0].extra['passes']} ({runs.floor[0].extra['tokens']}) | "
                 f"{runs.naive[0].extra['passes']} ({runs.naive[0].extra['tokens']}) |")
    return lines


PYTEST_OWN = ("import pytest", "plugin import", "pytest start-up", "collection", "between collection and the loop",
              "test loop: cuts", "test loop: the rest (pytest's per-test work, verdicts)", "session end",
              "unconfigure", "after pytest.main")


def over_the_floor(runs: Runs) -> list[str]:
    """What the warm run spends beyond the floor, in parts that add up to the difference of their medians: the
    passes the floor also makes (priced at the floor's seconds a pass), the rest of the forward phase (the text
    reading's incremental steps and every reading's arithmetic), the load beyond imports and weights, pytest's and
    the plugin's own phases, and the interpreter's start and exit."""
    warm = lambda phase: med([t.phases[phase] for t in runs.warm])  # noqa: E731
    script = lambda phase: med([c.extra["seconds"].get(phase, 0.0) for c in runs.floor])  # noqa: E731
    passes, t = runs.floor[0].extra["passes"], runs.warm[-1].child.timings
    per_pass = script("forward") / passes if passes else 0.0
    extra = t.forward_passes - passes
    edges = ("interpreter start", "interpreter exit (the remainder)")
    rest = med([c.wall - sum(c.extra["seconds"].values()) for c in runs.floor])
    parts = [
        (f"forward: {extra} passes more than the floor's {passes} (at the floor's {per_pass:.3f} s a pass)",
         extra * per_pass),
        (f"forward: the rest (the text reading's {t.tree_calls} trees and "
         f"{t.incremental_steps - t.tree_contexts} per-context steps, every reading's softmax and sums, against the "
         "floor's row at the cut)",
         warm("test loop: forward") - script("forward") - extra * per_pass),
        ("model load beyond the floor's imports and weights",
         warm("test loop: model_load") + warm("test loop: tokenizer_load") - script("imports") - script("weights")),
        ("the load's seconds (and the vocabulary table's) that ran beside collection, not waited for", warm(AHEAD)),
        ("pytest and the plugin: imports, start-up, collection, per-test work, session end, teardown",
         sum(warm(phase) for phase in PYTEST_OWN)),
        ("interpreter start and exit beyond the floor's", sum(warm(phase) for phase in edges) - rest),
    ]
    total = med(walls(runs.warm)) - med([c.wall for c in runs.floor])
    return ["| warm run over the floor | seconds |", "|---|---:|",
            *(f"| {what} | {seconds:+.2f} |" for what, seconds in parts),
            f"| **whole process, warm - floor (medians; the parts are medians too)** | **{total:+.2f}** |"]


def first_over_warm(cold: list[Traced], warm: list[Traced]) -> list[str]:
    """Per phase, what a first run spends beyond a warm one (phases that differ by 0.05 s or more)."""
    lines = ["| phase | first - warm, s |", "|---|---:|"]
    for phase in warm[0].phases:
        diff = med([t.phases[phase] for t in cold]) - med([t.phases[phase] for t in warm])
        if abs(diff) >= 0.05:
            lines.append(f"| {phase} | {diff:+.2f} |")
    return lines + [f"| **whole process** | **{med(walls(cold)) - med(walls(warm)):+.2f}** |"]


def cpus(children: list[Child]) -> list[float]:
    return [c.cpu for c in children]


def calls_line(runs: Runs) -> str:
    """A warm run's model calls against its prompts (the floor's passes: one per prompt)."""
    t, prompts = runs.warm[-1].child.timings, runs.floor[0].extra["passes"]
    steps = t.incremental_steps - t.tree_contexts  # contexts computed a call each, not in a tree
    calls = t.forward_calls + t.tree_calls + steps
    return (f"Forward calls of a warm run: {calls} for {prompts} prompts ({calls / prompts:.2f} a prompt): "
            f"{t.forward_calls} calls for {t.forward_passes} full passes, {t.tree_calls} calls that computed the text "
            f"reading's {t.tree_contexts} contexts as trees (one per prompt that reads past it; through the decoder "
            "alone, their heads one product per round of up to 32 cases, where the load measured that this gives "
            f"their bits: scoring/heads.py) and {steps} "
            f"per-context steps ({t.incremental_tokens} tokens fed on a KV cache). The floor: {prompts} calls.")


def markdown(runs: Runs) -> list[str]:
    floor, naive = [c.wall for c in runs.floor], [c.wall for c in runs.naive]
    warm, cold = walls(runs.warm), walls(runs.cold)
    w_floor, w_naive, c_warm = paired(warm, floor), paired(warm, naive), paired(cold, warm)
    v_ratio = paired(walls(runs.variants_cold), walls(runs.variants_warm))
    gap = med([t.child.wall - b.wall for t, b in zip(runs.collect, runs.bare)])
    yes = lambda ok: "yes" if ok else "**no**"  # noqa: E731
    rows = [("floor", runs.floor), ("plugin warm", [t.child for t in runs.warm]), ("naive script", runs.naive),
            ("plugin first run (cold)", [t.child for t in runs.cold])]
    if runs.serial:
        rows.append(("plugin first run, `--gotchas-jobs 1` (one thing at a time)", [t.child for t in runs.serial]))
    rows += [("variants of 2-sets, cold", [t.child for t in runs.variants_cold]),
             ("variants of 2-sets, warm", [t.child for t in runs.variants_warm]),
             ("`pytest --gotchas cases --collect-only`, warm", [t.child for t in runs.collect]),
             ("bare `pytest --collect-only`, empty folder", runs.bare)]
    serial = ([f"| a first run overlapped against one thing at a time | {paired(cold, walls(runs.serial)):.2f}x | - |"]
              if runs.serial else [])
    return [
        "| run | whole process, median (min-max) s | CPU s (user + system, children included), median |",
        "|---|---:|---:|",
        *(f"| {name} | {med([c.wall for c in v]):.2f} ({min(c.wall for c in v):.2f}-{max(c.wall for c in v):.2f}) | "
          f"{med(cpus(v)):.2f} |" for name, v in rows),
        "",
        calls_line(runs) + " Ratios are medians of the per-repetition ratios.",
        "",
        "| target | measured | met? |", "|---|---|---|",
        f"| warm <= 0.75x the naive script | {w_naive:.2f}x | {yes(w_naive <= 0.75)} |",
        f"| warm <= 1.3x the floor | {w_floor:.2f}x | {yes(w_floor <= 1.3)} |",
        f"| first run <= 1.5x warm | {c_warm:.2f}x | {yes(c_warm <= 1.5)} |",
        *serial,
        f"| first `--gotchas-variants` run of 2-sets <= 1.5x warm | {v_ratio:.2f}x | {yes(v_ratio <= 1.5)} |",
        f"| collect-only within 0.5 s of bare | +{gap:.2f} s | {yes(gap <= 0.5)} |",
        "", "The plugin's wall time, every phase (bench/traced.py; the interpreter's exit is the remainder):", "",
        *phase_table({"warm": runs.warm, "cold": runs.cold, **({"cold, jobs 1": runs.serial} if runs.serial else {}),
                      "variants cold": runs.variants_cold, "variants warm": runs.variants_warm,
                      "collect-only": runs.collect}),
        "", "The scripts' phases (what each timed; the rest is interpreter start and exit):", "",
        *script_table(runs),
        "", "Where the warm run's time over the floor goes:", "", *over_the_floor(runs),
        "", "Where a first run's time over a warm one goes (the chapters above; then 2-sets with its variants):", "",
        *first_over_warm(runs.cold, runs.warm), "", *first_over_warm(runs.variants_cold, runs.variants_warm),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.floor", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=2, help="repetitions (default 2)")
    parser.add_argument("--all-chapters", action="store_true", help="every chapter in cases/, not only the spec's")
    parser.add_argument("--chapters", nargs="+", metavar="FILE", help="these chapter files of cases/ (e.g. "
                        "2-sets.yaml) instead of the spec's: a short run on a busy machine")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="copy the last warm run's JSON report into DIR")
    parser.add_argument("--serial", action="store_true", help="also a first run with --gotchas-jobs 1 (the snippets "
                        "one after another, then the model): what the overlapped first run saves")
    args = parser.parse_args(argv)
    info = machine()
    cpu = subprocess.run([sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
                         capture_output=True, text=True).stdout.strip()
    root = Path(tempfile.mkdtemp(prefix="gotchas-floor-"))
    try:
        chapters = ([scenarios.REPO / "cases" / name for name in args.chapters] if args.chapters
                    else scenarios.chapters(args.all_chapters))
        ctx = Context(root, chapters, model_folder())
        lines = markdown(run(ctx, root, args.reps, args.device, args.keep, args.serial))
    except BenchFailed as failed:
        sys.exit(f"bench: {failed}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    cases = ", ".join(args.chapters) if args.chapters else "every chapter" if args.all_chapters else \
        "the spec chapters"
    print(header("The floor, warm, cold and naive side by side", info,
                 f"{cases}, {args.reps} repetition(s), device {args.device}", f"torch capability {cpu}"))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
