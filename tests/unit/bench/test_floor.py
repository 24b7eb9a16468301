"""bench/traced.py puts every second of a pytest process in a phase (nothing is timed against a figure here), and
bench/floor.py's ratios are the medians of per-repetition ratios."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench import floor
from bench.child import Child
from pytest_gotchas.results.schema import Timings

PHASES = ["interpreter start", "import pytest", "plugin import", "pytest start-up", "collection",
          "between collection and the loop", "test loop", "session end", "unconfigure", "after pytest.main"]


def test_a_traced_process_names_its_phases_in_order(tmp_path: Path) -> None:
    out = tmp_path / "trace.json"
    done = subprocess.run([sys.executable, "-c", floor.TRACED.read_text(), str(out), "--collect-only", "-q",
                           "-p", "no:randomly"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 5, done.stderr  # no tests collected in an empty folder
    phases = json.loads(out.read_text())["phases"]
    assert list(phases) == PHASES
    assert all(seconds >= 0 for seconds in phases.values())


def test_ratios_are_paired() -> None:
    assert floor.paired([2.0, 9.0, 3.0], [1.0, 10.0, 2.0]) == 1.5  # not 3.0 / 2.0 of the medians


class Counted(Child):
    """A plugin run's child whose report counted these passes and steps."""

    def __init__(self, wall: float, passes: int, steps: int, trees: int = 0, in_trees: int = 0) -> None:
        super().__init__(argv=[], wall=wall, maxrss_mb=0.0, returncode=0, stdout="", stderr="")
        self.counted = Timings(forward_passes=passes, forward_calls=passes, incremental_steps=steps,
                               incremental_tokens=steps + 1, tree_calls=trees, tree_contexts=in_trees)

    @property
    def timings(self) -> Timings:
        return self.counted


def plugin_run(wall: float, seconds: dict[str, float] | None = None) -> floor.Traced:
    phases = {"interpreter start": 0.1, "import pytest": 0.1, "plugin import": 0.1, "pytest start-up": 0.5,
              "collection": 0.2, "between collection and the loop": 0.0, "test loop: model_load": 4.0,
              "test loop: tokenizer_load": 0.0, "test loop: cuts": 0.0, "test loop: forward": 6.0,
              floor.AHEAD: -0.5,  # of the load's 4.0 s, 0.5 ran beside collection
              "test loop: the rest (pytest's per-test work, verdicts)": 0.4, "session end": 0.0,
              "unconfigure": 0.3, "after pytest.main": 0.3}
    phases.update(seconds or {})
    phases["interpreter exit (the remainder)"] = wall - sum(phases.values())
    return floor.Traced(Counted(wall, 44, 30, trees=5, in_trees=24), phases)


def test_the_warm_runs_time_over_the_floor_is_told_in_parts_that_add_up() -> None:
    runs = floor.Runs()
    runs.floor = [Child(argv=[], wall=8.0, maxrss_mb=0.0, returncode=0, stdout="", stderr="",
                              extra={"seconds": {"imports": 1.5, "weights": 1.5, "forward": 4.0}, "passes": 40})]
    runs.warm = [plugin_run(13.0)]
    assert floor.over_the_floor(runs) == [
        "| warm run over the floor | seconds |", "|---|---:|",
        "| forward: 4 passes more than the floor's 40 (at the floor's 0.100 s a pass) | +0.40 |",
        "| forward: the rest (the text reading's 5 trees and 6 per-context steps, every reading's softmax and sums, "
        "against the floor's row at the cut) | +1.60 |",
        "| model load beyond the floor's imports and weights | +1.00 |",
        "| the load's seconds (and the vocabulary table's) that ran beside collection, not waited for | -0.50 |",
        "| pytest and the plugin: imports, start-up, collection, per-test work, session end, teardown | +1.90 |",
        "| interpreter start and exit beyond the floor's | +0.60 |",
        "| **whole process, warm - floor (medians; the parts are medians too)** | **+5.00** |"]


def test_a_warm_runs_calls_count_a_tree_as_one_call_and_its_contexts_apart() -> None:
    """A report counts the tree's contexts among its incremental steps (tree_contexts): a call is a full pass, a
    tree, or a context computed alone."""
    runs = floor.Runs()
    runs.floor = [Child(argv=[], wall=8.0, maxrss_mb=0.0, returncode=0, stdout="", stderr="", extra={"passes": 40})]
    runs.warm = [plugin_run(13.0)]
    assert floor.calls_line(runs) == (
        "Forward calls of a warm run: 55 for 40 prompts (1.38 a prompt): 44 calls for 44 full passes, 5 calls that "
        "computed the text reading's 24 contexts as trees (one per prompt that reads past it; through the decoder "
        "alone, their heads one product per round of up to 32 cases, where the load measured that this gives their "
        "bits: scoring/heads.py) and 6 per-context steps (31 tokens fed on a KV cache). The floor: 40 calls.")


def test_a_first_runs_time_over_a_warm_one_names_the_phases_that_differ() -> None:
    cold, warm = plugin_run(20.0, {"collection": 5.0, "test loop: model_load": 6.0}), plugin_run(13.0)
    assert floor.first_over_warm([cold], [warm]) == [
        "| phase | first - warm, s |", "|---|---:|", "| collection | +4.80 |", "| test loop: model_load | +2.00 |",
        "| interpreter exit (the remainder) | +0.20 |", "| **whole process** | **+7.00** |"]


def test_the_summary_gives_cpu_seconds_the_serial_first_run_and_the_calls_per_prompt() -> None:
    def script(wall: float, cpu: float) -> Child:
        return Child(argv=[], wall=wall, maxrss_mb=0.0, returncode=0, stdout="", stderr="", cpu=cpu,
                     extra={"seconds": {"imports": 1.5, "weights": 1.5, "forward": 4.0}, "passes": 40, "tokens": 900})

    def traced(wall: float, cpu: float) -> floor.Traced:
        run = plugin_run(wall)
        run.child.cpu = cpu
        return run

    runs = floor.Runs(floor=[script(8.0, 7.0)], naive=[script(12.0, 11.0)], warm=[traced(13.0, 12.0)],
                      cold=[traced(18.0, 20.0)], variants_cold=[traced(9.0, 9.0)], variants_warm=[traced(6.0, 6.0)],
                      collect=[traced(1.0, 0.9)], bare=[script(0.6, 0.5)], serial=[traced(24.0, 19.0)])
    lines = floor.markdown(runs)
    assert "| plugin first run, `--gotchas-jobs 1` (one thing at a time) | 24.00 (24.00-24.00) | 19.00 |" in lines
    assert "| a first run overlapped against one thing at a time | 0.75x | - |" in lines
    assert "| first run <= 1.5x warm | 1.38x | yes |" in lines
    assert any(line.startswith("Forward calls of a warm run: 55 for 40 prompts (1.38 a prompt): 44 calls for 44 "
                               "full passes, 5 calls that computed") for line in lines)
