"""A first run that overlaps (plugin/ahead.py, scoring/ahead.py): the first case's model loads while the snippets of
every chapter execute side by side, and the run says and records what a run that does one thing after another
(`--gotchas-jobs 1`) says and records: through pytester, on tiny models, each run a first run with caches of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.chapters import HEADER, PAIR_CHAPTER, UNSEEDED_SET, chapter_text
from helpers.results import comparable_report
from helpers.tinymodel import build_tiny_model

# "left" gets both right; "right" gets `two` wrong (tests/plugin/test_models.py's models).
LEFT = {"a": {"7": 2.0, "8": 1.0}, "b": {"7": 2.0, "8": 1.0}}
RIGHT = {"a": {"7": 2.0, "8": 1.0}, "b": {"7": 1.0, "8": 2.0}}
# A second chapter: a case that scores, and one whose candidates are not what Python prints (refused).
OTHER = PAIR_CHAPTER.replace("chapter: demo", "chapter: other").replace(
    '    correct: "7"\n    wrong: "8"\npairs', '    correct: "8"\n    wrong: "7"\npairs')


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("models")
    return build_tiny_model(root / "left", LEFT), build_tiny_model(root / "right", RIGHT)


def first_run(pytester: pytest.Pytester, name: str, *args: str) -> tuple[pytest.RunResult, dict | None]:
    """A first run (its own pytest cache and model cache) of both chapters; its result and JSON report."""
    (pytester.path / "demo.yaml").write_text(PAIR_CHAPTER)
    (pytester.path / "other.yaml").write_text(OTHER)
    report = pytester.path / f"{name}.json"
    result = pytester.runpytest_subprocess(
        "--gotchas", "--gotchas-cache-dir", str(pytester.path / f"{name}-models"), "-o",
        f"cache_dir={pytester.path / f'{name}-pc'}", "--rootdir", str(pytester.path), "-p", "no:randomly",
        "--gotchas-json", str(report), *args)
    return result, (json.loads(report.read_text()) if report.is_file() else None)


def said(result: pytest.RunResult) -> list[str]:
    """What the run says from its first test on, but the two lines a command line and a clock change: the baseline
    hint (it repeats the command) and the final count's seconds."""
    lines = result.outlines
    start = next(n for n, line in enumerate(lines) if line.startswith(("0-shown.yaml", "demo.yaml", "other.yaml")))
    return [line.split(" in ")[0].strip("= ") if line.startswith("=") else line
            for line in lines[start:] if "record one with: pytest" not in line]


def test_a_first_run_that_overlaps_says_and_records_what_a_serial_one_does(pytester: pytest.Pytester,
                                                                          models: tuple[Path, Path]) -> None:
    both = ("--gotchas-model", str(models[0]), "--gotchas-model", str(models[1]))
    overlapped, overlapped_data = first_run(pytester, "overlapped", *both)
    serial, serial_data = first_run(pytester, "serial", *both, "--gotchas-jobs", "1")
    assert overlapped.ret == serial.ret == pytest.ExitCode.TESTS_FAILED  # the refused case
    assert overlapped_data is not None and serial_data is not None
    assert overlapped_data["run"]["timings"]["seconds"]["ahead"] > 0  # the first model loaded beside collection
    assert serial_data["run"]["timings"]["seconds"]["ahead"] == 0
    assert comparable_report(pytester.path / "overlapped.json") == comparable_report(pytester.path / "serial.json")
    assert said(overlapped) == said(serial)
    overlapped.stdout.fnmatch_lines(["*other.yaml:12: case 'two': `correct` '8' is not what Python prints*"])


def test_a_load_ahead_that_fails_stops_the_run_as_a_serial_load_does(pytester: pytest.Pytester) -> None:
    # A case shown unscored runs first and needs no model: the report is written, with the run's timings.
    (pytester.path / "0-shown.yaml").write_text(chapter_text(UNSEEDED_SET, HEADER.replace("demo", "shown")))
    missing = ("--gotchas-model", str(pytester.path / "no-such-model"))
    overlapped, overlapped_data = first_run(pytester, "overlapped", *missing)
    serial, _ = first_run(pytester, "serial", *missing, "--gotchas-jobs", "1")
    assert overlapped.ret == serial.ret == pytest.ExitCode.INTERRUPTED
    assert overlapped_data is not None and overlapped_data["run"]["timings"]["seconds"]["ahead"] > 0
    assert said(overlapped) == said(serial)
    assert "Traceback" not in overlapped.stdout.str()
    overlapped.stdout.fnmatch_lines([f"*cannot load model '{pytester.path / 'no-such-model'}'*",
                                     "*Interrupted: gotchas: the model could not be loaded*"])
