"""The vLLM backend against transformers (#23): per embedded model, a warm run through each backend, interleaved, in
this venv (run it in the vLLM venv of README's "A second backend: vLLM": both backends then share its torch and
transformers). Printed: the case verdicts and pair results that differ, the largest |dP| over every run of every
case, and each backend's seconds, startup (model and tokenizer load, the engine's start included) apart from
scoring (cuts and forward passes).

    python -m bench.backends                                   # both embedded models, every chapter
    python -m bench.backends --spec-chapters --models gemma-3-270m --reps 2

One run per backend and model rather than one two-model run: the phases of a run are per process, not per model.
The comparison is the one a two-model run prints (results.pairwise.differences), over the two runs' results.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pytest_gotchas.results.pairwise import Differences, differences
from pytest_gotchas.results.report import Report

from . import scenarios
from .child import BenchFailed, Child, header, log, machine, model_folder
from .measure import Context, run_plan
from .scenarios import Group, Scenario

MODELS = ("gemma-3-270m", "smollm2-135m")
# vLLM's engine in this process: its own spawned process would not be the run's to time (docs/models.md).
IN_PROCESS = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
STARTUP = ("model_load", "tokenizer_load")
SCORING = ("cuts", "forward")


def backend_scenarios(model: str) -> tuple[Scenario, Scenario]:
    return (Scenario(f"{model} transformers", ("--gotchas-model", model)),
            Scenario(f"{model} vllm", ("--gotchas-model", f"vllm:{model}"), env=IN_PROCESS))


@dataclass(frozen=True)
class Seconds:
    wall: float
    startup: float
    scoring: float

    @staticmethod
    def of(runs: list[Child]) -> Seconds:
        def median(phases: tuple[str, ...]) -> float:
            return statistics.median(sum(run.seconds(p) for p in phases) for run in runs)
        return Seconds(statistics.median(run.wall for run in runs), median(STARTUP), median(SCORING))


def compared(a: Report, b: Report) -> Differences:
    """What a two-model run of both would print: the two runs' results as one report's."""
    both = Report(a.results + b.results, a.chapter_infos + b.chapter_infos, a.model_infos + b.model_infos)
    ids = (a.model_infos[0].id, b.model_infos[0].id)
    (found,) = differences(both.chapters, {ids})
    return found


def model_markdown(model: str, seconds: dict[str, Seconds], found: Differences, engine: str) -> list[str]:
    lines = [f"### {model}", "", f"vLLM: {engine}", "",
             "| backend | whole process (s) | startup: model and tokenizer load (s) | scoring: cuts and forward (s) |",
             "|---|---:|---:|---:|"]
    lines += [f"| {name} | {s.wall:.1f} | {s.startup:.1f} | {s.scoring:.1f} |" for name, s in seconds.items()]
    dp = "no run in common" if found.largest_dp is None else f"{found.largest_dp * 100:.2f} points at {found.largest_at}"
    lines += ["", f"- case verdicts that differ: {len(found.cases)} of {found.cases_compared}",
              *(f"  - {key}: {a} through transformers, {b} through vLLM" for key, a, b in found.cases),
              f"- pair results that differ: {len(found.pairs)} of {found.pairs_compared}",
              *(f"  - {key}: {'pass' if a else 'FAIL'} through transformers, {'pass' if b else 'FAIL'} through vLLM"
                for key, a, b in found.pairs),
              f"- largest |dP| (P(correct) or P(wrong) of any run): {dp}"]
    return lines


def engine_of(report: Report) -> str:
    backend = report.model_infos[0].backend
    if backend is None:
        return "not recorded"
    return (f"{backend.package} {backend.version} on {backend.platform}, executor {backend.executor or 'default'}, "
            f"batch-invariant {'on' if backend.batch_invariant else 'off'}"
            f"{f' ({backend.batch_invariant_note})' if backend.batch_invariant_note else ''}, logits in "
            f"{backend.logits_dtype or 'unknown'}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.backends", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=1, help="repetitions of each backend's warm run (default 1)")
    parser.add_argument("--spec-chapters", action="store_true", help="only the spec's chapters (cases/0-4)")
    parser.add_argument("--models", nargs="+", default=list(MODELS), help=f"default: {' '.join(MODELS)}")
    args = parser.parse_args(argv)
    info = machine()
    root = Path(tempfile.mkdtemp(prefix="gotchas-backends-"))
    lines: list[str] = []
    try:
        warm_up = tuple(("--gotchas-model", model) for model in args.models)
        ctx = Context(root, scenarios.chapters(not args.spec_chapters), model_folder(), warm_up=warm_up)
        for model in args.models:
            pair = backend_scenarios(model)
            runs = run_plan(ctx, [Group(pair, args.reps)])
            reports = [runs[s.name][-1].report for s in pair]
            assert reports[0] is not None and reports[1] is not None
            seconds = {"transformers": Seconds.of(runs[pair[0].name]), "vLLM": Seconds.of(runs[pair[1].name])}
            lines += [*model_markdown(model, seconds, compared(reports[0], reports[1]), engine_of(reports[1])), ""]
    except BenchFailed as failed:
        sys.exit(f"bench: {failed}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    log("done")
    cases = "the spec chapters" if args.spec_chapters else "every chapter"
    print(header("The vLLM backend against transformers", info, f"{cases}; {args.reps} warm run(s) per backend, "
                 "medians"))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
