"""bench.onepass's pure parts: which cases of a typed report it compares, how a run is named, and the summary it
prints. Loading a model and comparing its rows is what `python -m bench.onepass` does, never a test."""

from __future__ import annotations

from helpers.results import TINY_MODEL, make_case, make_run

from bench.onepass import Tally, cases_of, run_label
from pytest_gotchas.results.report import Report
from pytest_gotchas.results.schema import ChapterInfo


def test_onepass_takes_the_cases_of_one_model_and_the_chapters_named() -> None:
    floats = ChapterInfo(name="floats", label="ch floats", title="floats", path="cases/1-floats.yaml",
                         implementation_defined=False, case_ids=["c"], pairs={}, twins={})
    sets = ChapterInfo(name="sets", label="ch sets", title="sets", path="cases/2-sets.yaml",
                       implementation_defined=False, case_ids=["a", "b"], pairs={}, twins={})
    other = TINY_MODEL.__class__(**{**TINY_MODEL.__dict__, "id": "other"})
    results = [make_case("a", "sets", [make_run(0.75, 0.125, primer="p")], model="tiny"),
               make_case("b", "sets", [], status="unscored", model="tiny"),
               make_case("c", "floats", [make_run(0.75, 0.125)], model="tiny"),
               make_case("a", "sets", [make_run(0.75, 0.125)], model="other")]
    r = Report(results, [floats, sets], [TINY_MODEL, other])
    assert [(c.key, c.model) for c in cases_of(r, [], "tiny")] == [("sets/a", "tiny"), ("floats/c", "tiny")]
    assert [(c.key, c.model) for c in cases_of(r, ["2-"], "other")] == [("sets/a", "other")]
    assert [c.key for c in cases_of(r, ["1-"], "gemma-3-270m")] == ["floats/c"]  # not in the report: its first model
    assert run_label(results[0], results[0].runs[0]) == "sets/a[p]" and run_label(results[2], results[2].runs[0]) == \
        "floats/c"


def test_onepass_tally_lines() -> None:
    tally = Tally((1, 8, "tree"))
    tally.cases, tally.runs, tally.readings = 2, 3, 9
    tally.rows_total.update({"earlier": 5, "step": 4})
    tally.rows_differ[8]["step"] += 1
    tally.readings_differ[8].append("sets/a text")
    tally.passes.update({"separate": 7, "main": 3})
    tally.steps.update({1: 4, 8: 4, "tree": 4})
    tally.calls.update({1: 4, 8: 4, "tree": 1})
    lines = tally.lines("model tiny")
    assert lines[0] == "model tiny; 2 cases, 3 runs"
    assert lines[1].startswith("separate passes: 7 full passes (0.0 s); one pass: 3 full passes")
    assert lines[3] == "refeed 1: rows differing: earlier positions 0/5, steps 0/4 (4 steps in 4 calls, 0.0 s); " \
                       "readings differing 0/9; verdicts differing 0"
    assert lines[4].startswith("refeed 8: rows differing: earlier positions 0/5, steps 1/4") and \
        lines[5] == "    reading: sets/a text"
    assert lines[6] == "tree: rows differing: earlier positions 0/5, steps 0/4 (4 contexts in trees in 1 calls, " \
                       "0.0 s); readings differing 0/9; verdicts differing 0"
