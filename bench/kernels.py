"""The ways to compute a bfloat16 pass on this CPU, side by side in one process: seconds per pass of each against
float32's, and how far each is from plain bfloat16's bits (issue #25).

    python -m bench.kernels                    # the spec's chapters' prompts, 2 repetitions
    python -m bench.kernels --all-chapters --emulate-avx2

The prompts are a plain plugin run's (measure.Context.prompts). A child process loads the embedded model as the
plugin does and runs one pass per prompt (logits_to_keep=1, with a cache, as scoring does) on every path, the paths
interleaved within each repetition; per path it prints the median seconds a pass, the ratio to float32 in the same
process, and against plain bfloat16: the prompts whose last logits differ in any bit and the largest |dP| over the
vocabulary. With --emulate-avx2 the same child runs again with torch and oneDNN held to AVX2 (firstrun.AVX2).
"""

from __future__ import annotations

import argparse
import copy
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import scenarios
from .child import BenchFailed, header, machine, model_folder, script
from .firstrun import AVX2, bf16_flags
from .measure import Context

PLAIN = "bfloat16 (plain: the default)"


def paths(model: Any) -> dict[str, tuple[Any, Callable[[], None]]]:
    """Each candidate: the model it runs and what it sets before its passes (undone by the next one's)."""
    import torch

    from pytest_gotchas.model import float32_matmul

    def threads(n: int, mkldnn: bool = True) -> Callable[[], None]:
        def set_() -> None:
            torch.set_num_threads(n)
            torch.backends.mkldnn.enabled = mkldnn
        return set_

    full = torch.get_num_threads()
    fast = copy.deepcopy(model)
    float32_matmul.apply(fast, "float32-matmul")
    return {PLAIN: (model, threads(full)),
            "bfloat16, oneDNN off (ATen's kernels)": (model, threads(full, mkldnn=False)),
            "bfloat16, 1 thread": (model, threads(1)),
            "float32-matmul": (fast, threads(full)),
            "float32": (copy.deepcopy(model).float(), threads(full))}


def child(prompts_file: Path, reps: int) -> None:
    import torch

    from pytest_gotchas.model.load import ModelSpec, load_model
    from pytest_gotchas.settings.options import Settings

    loaded = load_model(ModelSpec(None), Settings().model_cache)
    ids = [loaded.tokenizer(p["prompt"])["input_ids"] for p in json.loads(prompts_file.read_text())]
    candidates = paths(loaded.model)
    seconds: dict[str, list[float]] = {name: [] for name in candidates}
    logits: dict[str, list[Any]] = {}
    with torch.inference_mode():
        for _ in range(reps + 1):  # the first repetition warms every path up and is not counted
            for name, (model, prepare) in candidates.items():
                prepare()
                started, out = time.perf_counter(), []
                for x in ids:
                    out.append(model(input_ids=torch.tensor([x]), logits_to_keep=1, use_cache=True).logits[0, -1])
                seconds[name].append((time.perf_counter() - started) / len(ids))
                logits[name] = [o.float() for o in out]
    plain = logits[PLAIN]
    rows = {}
    for name in candidates:
        differ = sum(not torch.equal(a, b) for a, b in zip(plain, logits[name]))
        dp = max(float((a.softmax(-1) - b.softmax(-1)).abs().max()) for a, b in zip(plain, logits[name]))
        rows[name] = {"seconds": statistics.median(seconds[name][1:]), "differ": differ, "dp": dp}
    print(json.dumps({"prompts": len(ids), "tokens": statistics.mean(map(len, ids)),
                      "capability": torch.backends.cpu.get_cpu_capability(), "rows": rows}))


def table(result: dict[str, Any]) -> list[str]:
    f32 = result["rows"]["float32"]["seconds"]
    lines = [f"{result['prompts']} prompts, {result['tokens']:.1f} tokens on average; torch capability "
             f"{result['capability']}", "",
             "| path | seconds a pass | / float32 | prompts whose logits differ from plain bfloat16 | largest dP |",
             "|---|---:|---:|---:|---:|"]
    for name, row in result["rows"].items():
        lines.append(f"| {name} | {row['seconds']:.3f} | {row['seconds'] / f32:.2f}x | {row['differ']} of "
                     f"{result['prompts']} | {row['dp']:.4f} |")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.kernels", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=2, help="counted repetitions (default 2)")
    parser.add_argument("--all-chapters", action="store_true", help="every chapter in cases/, not only the spec's")
    parser.add_argument("--emulate-avx2", action="store_true", help="also measure with torch held to AVX2")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.child, args.reps)
    info = machine()
    root = Path(tempfile.mkdtemp(prefix="gotchas-kernels-"))
    try:
        prompts = Context(root, scenarios.chapters(args.all_chapters), model_folder()).prompts()
        runs = [("this CPU", {})] + ([("AVX2 only, EMULATED", AVX2)] if args.emulate_avx2 else [])
        results = [(label, script(root, "-m", "bench.kernels", "--child", str(prompts), "--reps", str(args.reps),
                                  env=env).extra) for label, env in runs]
    except BenchFailed as failed:
        sys.exit(f"bench: {failed}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    cases = "every chapter" if args.all_chapters else "the spec chapters"
    print(header("Kernel paths to bfloat16", info, f"{cases}, {args.reps} repetition(s), medians", bf16_flags()))
    for label, result in results:
        print(f"\n### {label}\n")
        print("\n".join(table(result)))


if __name__ == "__main__":
    main()
