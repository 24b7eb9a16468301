#!/usr/bin/env python
"""How fast pytest-gotchas is, measured against the spec's own method, in one process run.

    python bench/run.py                  # everything (about 20-40 minutes on a shared 2-core machine)
    python bench/run.py --reps 1 --scales 1,4 --no-exec-count     # a quicker look
    python bench/run.py --reps 3 --cost-only                       # warm against naive, side by side, only

Every figure comes from whole processes started here, timed from start to exit, with their peak resident memory
(ru_maxrss from wait4), on the spec's chapters (cases/0-4) copied into a temporary directory:

- naive: a script that loads the converted default model folder once with AutoModelForCausalLM / AutoTokenizer and
  runs one plain full forward pass per prompt (no logits_to_keep, no cache of cuts), as the spec's scripts did.
  The prompts are every prompt of a plugin run, read from its JSON report.
- cold: `pytest --gotchas cases` in a fresh directory (empty .pytest_cache: every snippet executed, every cut
  tokenized); the model is already converted (once per machine, as for any user after the first run).
- warm: the same command again (transcripts and cuts cached).

Runs are interleaved (cold, warm and naive in a rotating order) and repeated; medians are reported, and the ratio
warm / naive both as a median of the per-repetition ratios and as the ratio of the medians. The phase split comes
from the plugin's own timings (the `timings` dict of the JSON report's `run` section). Absolute seconds on a shared
machine are noisy: the ratios, measured side by side, are the result.

Also measured: peak memory against the weights plus the interpreter's baseline; warm collection; growth with the
number of cases (the chapters repeated under new chapter names and case ids); the cold ground truth's executions
(every interpreter wrapped by a script that logs each execution) serially and under `-n 2`; and whether every
probability with --gotchas-batch-size 4 and 8 is bit-identical to batch size 1.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SPEC_CHAPTERS = ("0-pep289.yaml", "1-floats.yaml", "2-sets.yaml", "3-bound-methods.yaml", "4-versions.yaml")
TARGET_RATIO, TARGET_MEMORY, TARGET_COLLECTION = 1.0, 1.3, 1.0
PHASES = ("collection", "model_load", "tokenizer_load", "cuts", "forward", "report")

NAIVE = r'''
import json, sys, time
t0 = time.perf_counter()
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
t1 = time.perf_counter()
folder, prompts_file = sys.argv[1], sys.argv[2]
tokenizer = AutoTokenizer.from_pretrained(folder)
t2 = time.perf_counter()
model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16).eval()
t3 = time.perf_counter()
prompts = json.load(open(prompts_file))
out, tokens = [], 0
for p in prompts:
    ids = tokenizer(p["prompt"], return_tensors="pt")["input_ids"]
    tokens += ids.shape[1]
    with torch.no_grad():
        probs = torch.softmax(model(input_ids=ids).logits[0, -1], dim=-1)
    c = tokenizer(p["correct"], add_special_tokens=False)["input_ids"][0]
    w = tokenizer(p["wrong"], add_special_tokens=False)["input_ids"][0]
    out.append([probs[c].item(), probs[w].item()])
t4 = time.perf_counter()
print(json.dumps({"seconds": {"imports": t1 - t0, "tokenizer_load": t2 - t1, "weights": t3 - t2, "forward": t4 - t3},
                  "passes": len(prompts), "tokens": tokens, "probs": out}))
'''

# Logs each execution of a snippet (not the Finder's version probe), then mirrors the interpreter's exit: a signal
# kills the wrapper with the same signal, so the plugin still sees a crash as a crash. The shell's own
# "Segmentation fault" line goes to /dev/null, never into the transcript.
WRAPPER = r'''#!/bin/bash
exec 3>&2 2>/dev/null
case "$*" in *platform.python_implementation*) exec "@REAL@" "$@" 2>&3;; esac
input=-
tmp=
case " $* " in *" -i "*) tmp=$(mktemp); cat > "$tmp"; input=$(sha256sum < "$tmp" | cut -c1-16);; esac
envkey=$(env | grep -v -E '^(HOME|PATH|PWD|OLDPWD|SHLVL|_|PYTHONSTARTUP|PYTHONPATH)=' | sort | sha256sum | cut -c1-16)
args=$(printf '%s' "$*" | sha256sum | cut -c1-16)
start=$(date +%s.%N)
if [ -n "$tmp" ]; then "@REAL@" "$@" < "$tmp" 2>&3; else "@REAL@" "$@" 2>&3; fi
rc=$?
end=$(date +%s.%N)
[ -n "$tmp" ] && rm -f "$tmp"
echo "$start $end @NAME@ ${PYTHONHASHSEED:--} $input $envkey $args" >> "@LOG@"
if [ $rc -gt 128 ]; then kill -$((rc - 128)) $$; fi
exit $rc
'''


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@dataclass
class Child:
    argv: list[str]
    wall: float  # seconds from start to exit
    maxrss_mb: float  # peak resident memory of the process (and of the largest descendant it waited for)
    returncode: int
    stdout: str
    stderr: str
    report: dict[str, Any] | None = None  # the JSON report of a plugin run
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def timings(self) -> dict[str, Any]:
        return (self.report or {}).get("run", {}).get("timings", {})


def run_child(argv: list[str], cwd: Path, report: Path | None = None, env: dict[str, str] | None = None) -> Child:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        child = Child(argv, wall, usage.ru_maxrss / 1024, proc.returncode, out.read().decode(errors="replace"),
                      err.read().decode(errors="replace"))
    if report is not None and report.is_file():
        child.report = json.loads(report.read_text())
    return child


def plugin(workdir: Path, name: str, *args: str, env: dict[str, str] | None = None) -> Child:
    """`pytest --gotchas cases` as a user runs it, with a JSON report."""
    report = workdir / f"{name}.json"
    report.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "pytest", "--gotchas", "cases", "--gotchas-json", str(report), *args]
    child = run_child(argv, workdir, report, env=None if env is None else {**os.environ, **env})
    if child.report is None or child.returncode not in (0, 1):
        sys.exit(f"bench: {' '.join(argv)} failed (exit {child.returncode}) in {workdir}:\n"
                 f"{child.stdout[-3000:]}\n{child.stderr[-3000:]}")
    return child


# -- case sets ------------------------------------------------------------------------------------------------


def renamed_chapter(text: str, copy: int) -> str:
    """The chapter as copy number ``copy`` (0: unchanged): new chapter name, new case ids, pairs and twins
    pointing at them. Transcripts are untouched, so the prompts (and their cache keys) are the same."""
    if copy == 0:
        return text
    suffix = f"-r{copy}"
    out, section = [], None
    for line in text.split("\n"):
        top = re.match(r"^([A-Za-z_]+):", line)
        if top:
            section = top[1]
        if section == "chapter" and top:
            line = re.sub(r"^chapter:\s*(\S+)", lambda m: f"chapter: {m[1]}{suffix}", line)
        elif section == "cases":
            line = re.sub(r"^(\s*-\s*id:\s*)(\S+)", lambda m: f"{m[1]}{m[2]}{suffix}", line)
        elif section in ("pairs", "twins"):
            line = re.sub(r"^(\s+\S+:\s*)\[([^\]]*)\]",
                          lambda m: m[1] + "[" + ", ".join(x.strip() + suffix for x in m[2].split(",")) + "]", line)
        out.append(line)
    return "\n".join(out)


def make_workdir(root: Path, name: str, chapters: list[Path], scale: int) -> Path:
    workdir = root / name
    (workdir / "cases").mkdir(parents=True)
    for path in chapters:
        text = path.read_text(encoding="utf-8")
        for copy in range(scale):
            target = workdir / "cases" / (path.name if copy == 0 else f"{path.stem}-r{copy}{path.suffix}")
            target.write_text(renamed_chapter(text, copy), encoding="utf-8")
    return workdir


# -- comparisons ----------------------------------------------------------------------------------------------


def numbers(report: dict[str, Any]) -> dict[str, Any]:
    """Every probability (and top-k text) a report holds, by case."""
    found = {}
    for case in report["cases"]:
        found[f"{case['chapter']}/{case['id']}"] = [
            ({name: (x["p_correct"], x["p_wrong"], x["verdict"]) for name, x in r["readings"].items()},
             [tuple(t) for t in r["top"]]) for r in case.get("runs", [])]
    return found


def same_numbers(a: dict[str, Any], b: dict[str, Any]) -> tuple[bool, int, list[str]]:
    na, nb = numbers(a), numbers(b)
    differ = sorted(k for k in set(na) | set(nb) if na.get(k) != nb.get(k))
    # probabilities compared: P(correct) and P(wrong) of every reading of every run
    values = sum(2 * len(run[0]) for runs in na.values() for run in runs)
    return not differ, values, differ


def prompts_of(report: dict[str, Any]) -> list[dict[str, str]]:
    return [{"prompt": r["prompt"], "correct": r["correct"], "wrong": r["wrong"],
             "reading": r["readings"]["token"]["kind"],
             "p_correct": r["p_correct"], "p_wrong": r["p_wrong"]}
            for case in report["cases"] for r in case.get("runs", [])]


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def spread(values: list[float]) -> str:
    return f"{med(values):7.2f}  ({min(values):.2f}-{max(values):.2f})" if values else "n/a"


# -- the executions of a cold run -----------------------------------------------------------------------------


def write_wrappers(root: Path, log_file: Path) -> list[str]:
    """One logging wrapper per interpreter the cases name; returns --gotchas-python options."""
    sys.path.insert(0, str(REPO))
    from pytest_gotchas.truth.interpreters import Finder, Interpreter

    finder, options = Finder(), []
    root.mkdir(parents=True, exist_ok=True)
    for version in ("3.11", "3.12", "3.13"):
        found = finder.find(version)
        if not isinstance(found, Interpreter):
            continue
        wrapper = root / f"python{version}"
        wrapper.write_text(WRAPPER.replace("@REAL@", found.path).replace("@LOG@", str(log_file))
                           .replace("@NAME@", f"python{version}"))
        wrapper.chmod(0o755)
        options += ["--gotchas-python", f"{version}={wrapper}"]
    return options


def read_executions(log_file: Path) -> list[tuple[float, float, tuple[str, ...]]]:
    runs = []
    for line in log_file.read_text().splitlines() if log_file.exists() else []:
        start, end, *key = line.split()
        runs.append((float(start), float(end), tuple(key)))
    return runs


def max_overlap(runs: list[tuple[float, float, tuple[str, ...]]]) -> int:
    events = sorted([(s, 1) for s, _, _ in runs] + [(e, -1) for _, e, _ in runs])
    now = best = 0
    for _, delta in events:
        now += delta
        best = max(best, now)
    return best


def execution_check(root: Path, chapters: list[Path], runs_per_snippet: int) -> dict[str, Any]:
    results = {}
    for label, extra in (("serial", ["-p", "no:xdist"]), ("-n 2", ["-n", "2"])):
        log_file = root / f"exec-{label.replace(' ', '')}.log"
        options = write_wrappers(root / f"wrappers-{label.replace(' ', '')}", log_file)
        workdir = make_workdir(root, f"exec-{label.replace(' ', '')}", chapters, 1)
        log(f"cold run with logged executions ({label})")
        child = plugin(workdir, "exec", *options, *extra)
        executions = read_executions(log_file)
        counts = collections.Counter(key for _, _, key in executions)
        timings = child.timings
        collection = (timings.get("seconds", {}).get("collection") if "workers" not in timings
                      else max(w["seconds"]["collection"] for w in timings["workers"].values()))
        results[label] = {
            "executions": len(executions), "distinct": len(counts), "counts": counts,
            "max_per_key": max(counts.values(), default=0), "max_parallel": max_overlap(executions),
            "busy_seconds": sum(e - s for s, e, _ in executions), "collection": collection,
            "wall": child.wall, "report": child.report,
        }
    serial, parallel = results["serial"], results["-n 2"]
    results["same_executions"] = serial["counts"] == parallel["counts"]
    results["runs_per_snippet"] = runs_per_snippet
    return results


# -- machine --------------------------------------------------------------------------------------------------


def machine() -> dict[str, str]:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    mem = next((line.split(":", 1)[1].strip() for line in Path("/proc/meminfo").read_text().splitlines()
                if line.startswith("MemTotal")), "?")
    versions = subprocess.run([sys.executable, "-c", "import torch, transformers, pytest; print(torch.__version__, "
                               "transformers.__version__, pytest.__version__, torch.get_num_threads(), "
                               "torch.cuda.is_available())"], capture_output=True, text=True).stdout.split()
    return {"date": subprocess.run(["date"], capture_output=True, text=True).stdout.strip(),
            "nproc": str(os.cpu_count()), "memory": mem, "cpu": cpu, "python": platform.python_version(),
            "torch": versions[0], "transformers": versions[1], "pytest": versions[2], "torch_threads": versions[3],
            "cuda": versions[4], "load": " ".join(f"{x:.2f}" for x in os.getloadavg())}


def model_folder() -> Path:
    """The converted default model (converted now if this machine has not yet: about a minute, once)."""
    code = ("import sys; from pytest_gotchas.model.embedded import DEFAULT, MODELS; from pytest_gotchas.plugin.options import "
            "Settings; print(MODELS[DEFAULT].folder(Settings().model_cache, lambda line: print(line, file=sys.stderr)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"bench: the default model is not available:\n{done.stderr}")
    return Path(done.stdout.strip().splitlines()[-1])


# -- main -----------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3, help="repetitions of naive / cold / warm (default 3)")
    parser.add_argument("--scales", default="1,4,16", help="case-set sizes, as multiples of the spec's (default 1,4,16)")
    parser.add_argument("--scale-reps", type=int, default=2, help="warm runs per scale above 1x (default 2)")
    parser.add_argument("--batch-sizes", default="4,8", help="batch sizes checked against batch 1 (default 4,8)")
    parser.add_argument("--all-chapters", action="store_true", help="every chapter in cases/, not only the spec's")
    parser.add_argument("--no-exec-count", action="store_true", help="skip the logged cold runs (serial, -n 2)")
    parser.add_argument("--no-xdist", action="store_true", help="skip the -n 2 warm runs")
    parser.add_argument("--cost-only", action="store_true", help="only cold, warm and naive (and the same-numbers "
                        "checks): as --scales 1 --batch-sizes '' --no-xdist --no-exec-count, without --collect-only")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    if args.cost_only:
        args.scales, args.batch_sizes, args.no_xdist, args.no_exec_count = "1", "", True, True

    chapters = sorted((REPO / "cases").glob("*.yaml")) if args.all_chapters else [REPO / "cases" / n for n in SPEC_CHAPTERS]
    scales = [int(s) for s in args.scales.split(",") if s]
    info = machine()
    log(f"machine: {info['nproc']} cores, {info['memory']}, {info['cpu']}; load {info['load']}")
    folder = model_folder()
    root = Path(tempfile.mkdtemp(prefix="gotchas-bench-"))
    raw: dict[str, Any] = {"machine": info, "model_folder": str(folder)}
    try:
        lines = bench(args, chapters, scales, folder, root, raw)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    info["load_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    header = [
        "# pytest-gotchas benchmark",
        "",
        f"date: {info['date']}",
        f"machine: {info['nproc']} cores, {info['memory']} memory, {info['cpu']}; no GPU used (cuda available: "
        f"{info['cuda']})",
        f"software: python {info['python']}, torch {info['torch']} ({info['torch_threads']} threads), transformers "
        f"{info['transformers']}, pytest {info['pytest']}",
        f"load average: {info['load']} at the start, {info['load_end']} at the end (the machine is shared)",
        f"model: {folder} (bfloat16, cpu)",
        f"cases: {', '.join(p.name for p in chapters)}",
        "",
    ]
    print("\n".join(header + lines))
    if args.json:
        args.json.write_text(json.dumps(raw, indent=1, default=str))


def bench(args: argparse.Namespace, chapters: list[Path], scales: list[int], folder: Path, root: Path,
          raw: dict[str, Any]) -> list[str]:
    out: list[str] = []
    cold: list[Child] = []
    warm: list[Child] = []
    naive: list[Child] = []
    prompts_file = root / "prompts.json"
    orders = [("cold", "warm", "naive"), ("naive", "cold", "warm"), ("cold", "naive", "warm")]
    for rep in range(args.reps):
        workdir = make_workdir(root, f"rep{rep}", chapters, 1)
        for step in orders[rep % len(orders)]:
            log(f"repetition {rep + 1}/{args.reps}: {step}")
            if step == "cold":
                cold.append(plugin(workdir, "cold"))
            elif step == "warm":
                warm.append(plugin(workdir, "warm"))
            else:
                if not prompts_file.exists():  # the prompts of a plugin run: a throwaway one on the first rep
                    first = cold[0] if cold else plugin(make_workdir(root, "prompts", chapters, 1), "prompts")
                    prompts_file.write_text(json.dumps(prompts_of(first.report)))
                child = run_child([sys.executable, "-c", NAIVE, str(folder), str(prompts_file)], root)
                if child.returncode != 0:
                    sys.exit(f"bench: the naive reference failed:\n{child.stderr[-3000:]}")
                child.extra = json.loads(child.stdout.strip().splitlines()[-1])
                naive.append(child)

    # The same numbers: cold vs warm (cached cuts), and the naive script vs the plugin where the cut is plain.
    identical = [same_numbers(c.report, w.report) for c, w in zip(cold, warm)]
    prompts = json.loads(prompts_file.read_text())
    plain = [(p, q) for p, q in zip(prompts, naive[0].extra["probs"]) if p["reading"] == "plain"]
    plain_same = sum((p["p_correct"], p["p_wrong"]) == tuple(q) for p, q in plain)

    # Memory: the weights in their dtype, and the interpreter with what any run must import.
    weights_mb = sum(p.stat().st_size for p in folder.glob("*.safetensors")) / 2**20
    bare = [run_child([sys.executable, "-c", "pass"], root).maxrss_mb for _ in range(2)]
    imports = [run_child([sys.executable, "-c", "import pytest, torch, transformers"], root).maxrss_mb
               for _ in range(2)]
    baseline_mb = med(imports)
    budget_mb = weights_mb + baseline_mb

    # Warm collection, as a whole --collect-only process (no torch) and as the plugin's collection phase.
    collect_dir = root / f"rep{args.reps - 1}"
    collect_only = [] if args.cost_only else [
        run_child([sys.executable, "-m", "pytest", "--gotchas", "cases", "--collect-only", "-q"], collect_dir)
        for _ in range(3)]

    # Batching: every probability of batch N against batch 1, warm, same directory.
    batches: dict[int, list[tuple[Child, tuple[bool, int, list[str]]]]] = {}
    for rep in range(args.reps):
        for size in [int(s) for s in args.batch_sizes.split(",") if s]:
            log(f"batch size {size}, repetition {rep + 1}/{args.reps}")
            child = plugin(collect_dir, f"batch{size}", "--gotchas-batch-size", str(size))
            batches.setdefault(size, []).append((child, same_numbers(warm[-1].report, child.report)))

    # xdist on the CPU: -n 2 warm, with each worker's share of the cores (the default) and with every core per
    # worker (OMP_NUM_THREADS=<cores>, as before workers shared them).
    xdist: dict[str, list[Child]] = {"shared": [], "all": []}
    for rep in range(0 if args.no_xdist else args.reps):
        for label in ("shared", "all"):
            log(f"-n 2 warm, {label} cores, repetition {rep + 1}/{args.reps}")
            env = {"OMP_NUM_THREADS": str(os.cpu_count())} if label == "all" else None
            xdist[label].append(plugin(collect_dir, f"xdist-{label}", "-n", "2", env=env))
    xdist_same = [same_numbers(warm[-1].report, c.report)[0] for c in xdist["shared"] + xdist["all"]]

    # Growth with the number of cases: warm runs after one cold run per size.
    scaling = {}
    for scale in scales:
        if scale == 1:
            scaling[1] = (cold, warm)
            continue
        workdir = make_workdir(root, f"scale{scale}", chapters, scale)
        log(f"scale {scale}x: cold")
        first = plugin(workdir, "cold")
        runs = []
        for rep in range(args.scale_reps):
            log(f"scale {scale}x: warm {rep + 1}/{args.scale_reps}")
            runs.append(plugin(workdir, "warm"))
        scaling[scale] = ([first], runs)

    executions = None if args.no_exec_count else execution_check(root / "exec", chapters, 3)

    # -- the report ---------------------------------------------------------------------------------------------
    def phase(children: list[Child], name: str) -> list[float]:
        return [c.timings["seconds"][name] for c in children]

    def other(children: list[Child]) -> list[float]:
        return [c.wall - sum(c.timings["seconds"].values()) for c in children]

    w_wall, n_wall, c_wall = [c.wall for c in warm], [c.wall for c in naive], [c.wall for c in cold]
    ratios = [w / n for w, n in zip(w_wall, n_wall)]
    cold_ratios = [c / n for c, n in zip(c_wall, n_wall)]
    t = warm[0].timings
    cases = len(warm[0].report["cases"])
    scored = sum(1 for c in warm[0].report["cases"] if c["status"] == "scored")
    n_extra = naive[0].extra
    n_runs = len(prompts)
    naive_forward = [c.extra["seconds"]["forward"] for c in naive]
    warm_forward = phase(warm, "forward")
    out += [
        f"{cases} cases ({scored} scored), {n_runs} prompts; the plugin runs {t['forward_passes']} full forward "
        f"passes ({t['prompt_tokens']} tokens) and {t.get('incremental_steps', 0)} incremental steps on their KV "
        f"caches ({t.get('incremental_tokens', 0)} tokens fed), the naive script {n_extra['passes']} full passes "
        f"({n_extra['tokens']} tokens). {args.reps} repetitions; medians (min-max).",
        f"per run: the plugin {t['forward_passes'] / n_runs:.3f} full passes and "
        f"{t.get('incremental_steps', 0) / n_runs:.3f} steps, the naive script {n_extra['passes'] / n_runs:.3f} "
        f"passes; forward seconds per run: plugin warm {med(warm_forward) / n_runs:.3f}, naive "
        f"{med(naive_forward) / n_runs:.3f} (ratio of medians {med(warm_forward) / med(naive_forward):.2f}); whole "
        f"run per prompt: plugin warm {med(w_wall) / n_runs:.3f} s, naive {med(n_wall) / n_runs:.3f} s",
        "",
        "## Whole runs, process start to exit (seconds)",
        "",
        "                          median   (min-max)        peak RSS MB",
        f"naive reference         {spread(n_wall)}   {med([c.maxrss_mb for c in naive]):8.0f}",
        f"plugin cold             {spread(c_wall)}   {med([c.maxrss_mb for c in cold]):8.0f}",
        f"plugin warm             {spread(w_wall)}   {med([c.maxrss_mb for c in warm]):8.0f}",
        "",
        f"warm / naive: median of per-repetition ratios {med(ratios):.2f} (each: "
        f"{', '.join(f'{r:.2f}' for r in ratios)}); ratio of medians {med(w_wall) / med(n_wall):.2f}   "
        f"target <= {TARGET_RATIO}",
        f"cold / naive: median {med(cold_ratios):.2f}; ratio of medians {med(c_wall) / med(n_wall):.2f}",
        "",
        "## Phases (seconds, medians)",
        "",
        "                    naive    cold    warm",
        f"imports+weights    {med([c.extra['seconds']['imports'] + c.extra['seconds']['weights'] for c in naive]):6.2f}"
        f"  {med(phase(cold, 'model_load')):6.2f}  {med(phase(warm, 'model_load')):6.2f}   (plugin: model_load)",
        f"tokenizer load     {med([c.extra['seconds']['tokenizer_load'] for c in naive]):6.2f}"
        f"  {med(phase(cold, 'tokenizer_load')):6.2f}  {med(phase(warm, 'tokenizer_load')):6.2f}",
        f"forward passes     {med([c.extra['seconds']['forward'] for c in naive]):6.2f}"
        f"  {med(phase(cold, 'forward')):6.2f}  {med(phase(warm, 'forward')):6.2f}",
        f"collection            -    {med(phase(cold, 'collection')):6.2f}  {med(phase(warm, 'collection')):6.2f}"
        "   (executing snippets when cold)",
        f"cuts                  -    {med(phase(cold, 'cuts')):6.2f}  {med(phase(warm, 'cuts')):6.2f}"
        "   (tokenization checks; warm: read from the cache)",
        f"report                -    {med(phase(cold, 'report')):6.2f}  {med(phase(warm, 'report')):6.2f}",
        f"rest of the process {med([c.wall - sum(c.extra['seconds'].values()) for c in naive]):6.2f}"
        f"  {med(other(cold)):6.2f}  {med(other(warm)):6.2f}   (interpreter and pytest start-up, summary, exit)",
        "",
        f"tokens per second in the forward phase: naive "
        f"{med([c.extra['tokens'] / c.extra['seconds']['forward'] for c in naive]):.0f}, plugin warm "
        f"{med([c.timings['prompt_tokens'] / c.timings['seconds']['forward'] for c in warm]):.0f}; "
        f"end to end: naive {med([c.extra['tokens'] / c.wall for c in naive]):.0f}, plugin warm "
        f"{med([c.timings['prompt_tokens'] / c.wall for c in warm]):.0f}",
        f"warm runs: tokenizer loaded {sum(c.timings['tokenizer_loaded'] for c in warm)}/{len(warm)}, cut cache "
        f"hits {warm[0].timings['cut_cache']['hits']}, transcript cache hits {warm[0].timings['transcript_cache']['hits']}",
        "",
        "## Same numbers",
        "",
        f"cold vs warm (cached cuts): every probability and top-k entry identical in "
        f"{sum(ok for ok, _, _ in identical)}/{len(identical)} repetitions"
        + ("" if all(ok for ok, _, _ in identical) else f"; differ: {[d for _, _, d in identical]}"),
        f"naive vs plugin where the cut is plain: {plain_same}/{len(plain)} runs with identical P(correct), P(wrong)",
        "",
        "## Peak memory (ru_maxrss of the child, MB)",
        "",
        f"weights in bfloat16 {weights_mb:.0f}; interpreter baseline: bare python {med(bare):.0f}, after importing "
        f"pytest, torch and transformers {baseline_mb:.0f}; budget = weights + baseline = {budget_mb:.0f}",
        f"warm {med([c.maxrss_mb for c in warm]):.0f} = {med([c.maxrss_mb for c in warm]) / budget_mb:.2f}x, "
        f"cold {med([c.maxrss_mb for c in cold]):.0f} = {med([c.maxrss_mb for c in cold]) / budget_mb:.2f}x, "
        f"naive {med([c.maxrss_mb for c in naive]):.0f} = {med([c.maxrss_mb for c in naive]) / budget_mb:.2f}x   "
        f"target <= {TARGET_MEMORY}x",
        "",
        "## Warm collection",
        "",
        f"plugin's collection phase, warm: {spread(phase(warm, 'collection'))} s for {cases} cases   target < "
        f"{TARGET_COLLECTION:.0f} s",
        f"whole `pytest --gotchas cases --collect-only` process: {spread([c.wall for c in collect_only])} s, peak "
        f"{med([c.maxrss_mb for c in collect_only]):.0f} MB (torch is not imported)",
        "",
        "## Batching (warm; every probability, plain reading and top-k entry against batch size 1)",
        "",
    ]
    out.append(f"batch 1: {t['forward_passes']} passes in {t['forward_calls']} model calls; median wall "
               f"{med(w_wall):.2f} s, forward {med(phase(warm, 'forward')):.2f} s")
    for size, runs in batches.items():
        children = [child for child, _ in runs]
        differ = sorted({d for _, (_, _, ds) in runs for d in ds})
        timings = children[0].timings
        out.append(f"batch {size}: {'bit-identical' if not differ else 'DIFFERENT: ' + ', '.join(differ)} in "
                   f"{sum(ok for _, (ok, _, _) in runs)}/{len(runs)} runs ({runs[0][1][1]} probabilities and every top-k "
                   f"entry each); "
                   f"{timings['forward_passes']} passes in {timings['forward_calls']} model calls; median wall "
                   f"{med([c.wall for c in children]):.2f} s, forward {med(phase(children, 'forward')):.2f} s")
    out.append("(only contexts of equal token length within one case share a call, never padded: here the two "
               "primer orders of a ch.1 case)")
    if xdist["shared"]:
        shared_threads = sorted({w["torch_threads"] for c in xdist["shared"] for w in c.timings["workers"].values()})
        out += ["", "## pytest-xdist on the CPU (warm, -n 2)", "",
                f"workers share the cores ({shared_threads} torch threads each, the default): "
                f"{spread([c.wall for c in xdist['shared']])} s; every core per worker (OMP_NUM_THREADS="
                f"{os.cpu_count()}): {spread([c.wall for c in xdist['all']])} s; serial warm {med(w_wall):.2f} s",
                f"probabilities bit-identical to the serial run in {sum(xdist_same)}/{len(xdist_same)} runs"]
    out += ["", "## Growth with the number of cases (the chapters repeated under new names and ids)", "",
            "scale  cases  passes   cold wall  warm wall  warm forward  warm collection  warm s/pass  peak MB"]
    for scale, (cs, ws) in scaling.items():
        timings = ws[0].timings
        out.append(f"{scale:4d}x  {len(ws[0].report['cases']):5d}  {timings['forward_passes']:6d}  "
                   f"{med([c.wall for c in cs]):10.2f}  {med([c.wall for c in ws]):9.2f}  "
                   f"{med(phase(ws, 'forward')):12.2f}  {med(phase(ws, 'collection')):15.2f}  "
                   f"{med(phase(ws, 'forward')) / timings['forward_passes']:11.3f}  "
                   f"{med([c.maxrss_mb for c in ws]):7.0f}")
    out.append("(repeated cases have the same prompts, so their snippets share cache keys: a cold run at 4x or 16x "
               "executes each distinct snippet once, as it should)")
    if executions is not None:
        s, p = executions["serial"], executions["-n 2"]
        out += ["", "## Cold ground truth (every interpreter wrapped by a script that logs each execution)", ""]
        for label, r in (("serial", s), ("-n 2", p)):
            out.append(f"{label:6s}: {r['executions']} executions of {r['distinct']} distinct (snippet, seed, env) "
                       f"keys, at most {r['max_per_key']} per key; up to {r['max_parallel']} at once; "
                       f"{r['busy_seconds']:.1f} s of executions in a collection phase of {r['collection']:.1f} s; "
                       f"whole run {r['wall']:.1f} s")
        out.append(f"-n 2 executed exactly what the serial run executed: {executions['same_executions']} (a pinned "
                   f"PYTHONHASHSEED is run {executions['runs_per_snippet']} times by design, --gotchas-runs; "
                   "every other key once)")
        raw["executions"] = {k: {kk: vv for kk, vv in v.items() if kk not in ("counts", "report")}
                             if isinstance(v, dict) else v for k, v in executions.items()}
    raw.update({
        "naive": [{"wall": c.wall, "maxrss_mb": c.maxrss_mb, **{k: v for k, v in c.extra.items() if k != "probs"}}
                  for c in naive],
        "cold": [{"wall": c.wall, "maxrss_mb": c.maxrss_mb, "timings": c.timings} for c in cold],
        "warm": [{"wall": c.wall, "maxrss_mb": c.maxrss_mb, "timings": c.timings} for c in warm],
        "memory": {"weights_mb": weights_mb, "bare_mb": bare, "imports_mb": imports},
        "collect_only": [c.wall for c in collect_only],
        "xdist": {k: [{"wall": c.wall, "timings": c.timings} for c in v] for k, v in xdist.items()},
        "batches": {k: [{"identical": r[1][0], "wall": r[0].wall, "timings": r[0].timings} for r in v]
                    for k, v in batches.items()},
        "scaling": {k: {"cold": [c.wall for c in v[0]], "warm": [c.wall for c in v[1]],
                        "timings": v[1][0].timings} for k, v in scaling.items()},
    })
    return out


if __name__ == "__main__":
    main()
