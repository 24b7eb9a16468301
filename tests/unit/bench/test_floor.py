"""bench/traced.py puts every second of a pytest process in a phase (nothing is timed against a figure here), and
bench/floor.py's ratios are the medians of per-repetition ratios."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench import floor

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
