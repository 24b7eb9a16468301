"""What a lent GPU should measure (issues #22, #23, #25), step by step within a time budget; bench/device.sh runs it
and appends its markdown to bench/RESULTS.md. A step that cannot run on the machine, or that the budget leaves out,
says so in place of its figures: no figure is ever carried over from another machine.

    python -m bench.device --budget 420              # on the GPU (cuda)
    python -m bench.device --device cpu --budget 60  # the same steps on this CPU: a check of the script itself

1. the machine: GPU, torch, transformers, vLLM
2. each embedded model through transformers in bfloat16 on the device: a warm run of the spec's chapters (seconds per
   forward pass), and the same with --gotchas-batch-size 8, every probability compared with batch size 1 bit for bit
3. each embedded model through vLLM where it is importable: bench.backends' comparison with transformers on the same
   device over the whole library, batch-invariant on (vLLM's default there) and off
4. --gotchas-patch on the spec's chapters against a plain run (bench.patching's table)

The children get the device as a user's CI would pass it, through PYTEST_ADDOPTS.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from . import backends, patching, scenarios
from .child import BenchFailed, child_env, load_average, log, machine, model_folder
from .measure import Context, Runs, run_plan, same_numbers
from .scenarios import PLAIN, Group, Scenario

MODELS = backends.MODELS
STEPS = ("transformers", "vllm", "patching")


def folder_of(model: str) -> tuple[Path | None, str]:
    """The converted embedded model's folder on this machine, or None and why it is not there."""
    try:
        return model_folder(model), ""
    except BenchFailed as failed:
        return None, f"not on this machine ({str(failed).splitlines()[-1]})"


def vllm_version() -> str | None:
    done = subprocess.run([sys.executable, "-c", "import vllm; print(vllm.__version__)"], capture_output=True,
                          text=True, env=child_env())
    return done.stdout.strip() if done.returncode == 0 else None


def per_pass(runs: Runs, name: str) -> str:
    """The forward phase over its full passes and incremental steps, as bench/firstrun.py counts them."""
    t = runs[name][-1].timings
    passes = t.forward_passes + t.incremental_steps
    return f"{t.seconds.get('forward', 0.0) / passes * 1000:.1f} ms" if passes else "no pass"


def transformers_step(root: Path, model: str, folder: Path) -> list[str]:
    plain = Scenario(model, ("--gotchas-model", model))
    batched = Scenario(f"{model} batch 8", ("--gotchas-model", model, "--gotchas-batch-size", "8"))
    ctx = Context(root / model, scenarios.chapters(False), folder, warm_up=(plain.options,))
    runs = run_plan(ctx, [Group((plain, batched), 1)])
    same = same_numbers(runs[plain.name][-1].report, runs[batched.name][-1].report)
    verdict = "bit-identical" if same.identical else f"differ in {len(same.differ)} cases: {', '.join(same.differ)}"
    return [f"- {model}, spec chapters, warm: {runs[plain.name][-1].wall:.1f} s whole process, "
            f"{per_pass(runs, plain.name)} a pass or step; batch size 8: {per_pass(runs, batched.name)}, "
            f"{same.values} probabilities against batch size 1 {verdict}"]


def vllm_step(root: Path, model: str, folder: Path) -> list[str]:
    transformers, invariant = backends.backend_scenarios(model)
    variant = Scenario(f"{invariant.name} invariance off", (*invariant.options, "--gotchas-vllm-batch-invariant",
                                                            "off"), env=invariant.env)
    ctx = Context(root / f"vllm-{model}", scenarios.chapters(True), folder, warm_up=(transformers.options,))
    runs = run_plan(ctx, [Group((transformers, invariant, variant), 1)])
    reports = {s.name: runs[s.name][-1].report for s in (transformers, invariant, variant)}
    lines = []
    for scenario in (invariant, variant):
        a, b = reports[transformers.name], reports[scenario.name]
        assert a is not None and b is not None
        seconds = {"transformers": backends.Seconds.of(runs[transformers.name]),
                   "vLLM": backends.Seconds.of(runs[scenario.name])}
        lines += [*backends.model_markdown(f"{model}, {scenario.name}", seconds, backends.compared(a, b),
                                           backends.engine_of(b)), ""]
    return lines


def patching_step(root: Path, folder: Path) -> list[str]:
    ctx = Context(root / "patching", scenarios.chapters(False), folder)
    runs = run_plan(ctx, [Group((PLAIN, patching.PATCH), 1)])
    return patching.cost_markdown(runs, patching.shape_of(folder, "gemma-3-270m"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.device", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", help="the plugin's --gotchas-device (default cuda)")
    parser.add_argument("--budget", type=float, default=420.0,
                        help="seconds after which no further step starts (default 420)")
    parser.add_argument("--steps", nargs="+", default=list(STEPS), choices=STEPS, help="default: all")
    args = parser.parse_args(argv)
    started = time.monotonic()
    os.environ["PYTEST_ADDOPTS"] = f"{os.environ.get('PYTEST_ADDOPTS', '')} --gotchas-device {args.device}".strip()

    def say(*lines: str) -> None:  # as each step ends: a run stopped by its timeout keeps what it had
        print("\n".join(lines), flush=True)

    info, version = machine(), vllm_version()
    say(f"## On the device ({args.device})", "",
        f"date: {info.date}; {info.nproc} cores, {info.memory}, {info.cpu}; CUDA available: {info.cuda}",
        f"software: python {info.python}, torch {info.torch}, transformers {info.transformers}, "
        f"vLLM {version or 'not installed'}; load average {info.load} at the start", "")
    folders = {model: folder_of(model) for model in MODELS}
    root = Path(tempfile.mkdtemp(prefix="gotchas-device-"))

    def step(name: str, body: Callable[[], list[str]]) -> None:
        spent = time.monotonic() - started
        if spent > args.budget:
            say(f"- {name}: not run, the budget of {args.budget:.0f} s was spent ({spent:.0f} s)")
            return
        log(name)
        try:
            say(*body())
        except BenchFailed as failed:
            say(f"- {name}: failed: {str(failed).splitlines()[0]}")

    try:
        for model, (folder, why) in folders.items():
            for kind in ("transformers", "vllm"):
                if kind not in args.steps:
                    continue
                name = f"{model} through {kind}"
                if folder is None:
                    say(f"- {name}: not run, the model is {why}")
                elif kind == "vllm" and version is None:
                    say(f"- {name}: not run, vLLM is not installed (README: A second backend: vLLM)")
                else:
                    run = transformers_step if kind == "transformers" else vllm_step
                    step(name, functools.partial(run, root, model, folder))
        default, why = folders[MODELS[0]]
        if "patching" in args.steps:
            if default is None:
                say(f"- --gotchas-patch: not run, {MODELS[0]} is {why}")
            else:
                step("--gotchas-patch", lambda: ["", *patching_step(root, default)])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    say("", f"{time.monotonic() - started:.0f} s in all; load average {load_average()} at the end")


if __name__ == "__main__":
    main()
