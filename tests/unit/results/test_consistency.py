"""A report read back is checked against its own numbers (results/consistency.py): each derived field that they do
not give is named by its path, and numbers out of float range are found before anything reads them."""

from __future__ import annotations

import dataclasses

from helpers.results import make_case, make_run

from pytest_gotchas.results.consistency import Inconsistency, case_inconsistencies, non_finite
from pytest_gotchas.results.verdict import Status


def test_a_case_as_scoring_judges_it_is_consistent() -> None:
    primed = make_case("a", "sets", [make_run(0.75, 0.125, "x"), make_run(0.125, 0.75, "y")], model="m")
    assert (primed.verdict, primed.qualifiers) == ("prime-dep", ["prime-dep"])
    assert list(case_inconsistencies(primed, "cases[0]")) == []
    assert list(case_inconsistencies(make_case("u", "sets", [], status=Status.UNSCORED), "cases[1]")) == []


def test_a_qualifier_dropped_by_hand_is_named() -> None:
    primed = make_case("a", "sets", [make_run(0.75, 0.125, "x"), make_run(0.125, 0.75, "y")], model="m")
    edited = dataclasses.replace(primed, verdict="ok", qualifiers=[])
    assert list(case_inconsistencies(edited, "cases[2]")) == [
        Inconsistency("case sets/a", "m", "cases[2].verdict", "ok", "prime-dep"),
        Inconsistency("case sets/a", "m", "cases[2].qualifiers", "[]", "['prime-dep']"),
    ]


def test_a_verdict_on_a_case_that_was_not_scored_is_named() -> None:
    edited = dataclasses.replace(make_case("u", "sets", [], status=Status.CRASH), verdict="ok")
    assert list(case_inconsistencies(edited, "cases[0]")) == [
        Inconsistency("case sets/u", None, "cases[0].verdict", "ok", "none (the case is crash)")]


def test_a_verdict_by_reading_that_the_runs_do_not_give_is_named() -> None:
    case = dataclasses.replace(make_case("a", "sets", [make_run(0.75, 0.125)]), reading_verdicts={"token": "MISS",
                                                                                                  "text": "ok"})
    assert list(case_inconsistencies(case, "cases[0]")) == [
        Inconsistency("case sets/a", None, "cases[0].reading_verdicts.token", "MISS", "ok"),
        Inconsistency("case sets/a", None, "cases[0].reading_verdicts.text", "ok",
                      "none (not every run has that reading)")]


def test_numbers_out_of_float_range_are_found_by_their_path() -> None:
    assert non_finite({"cases": [{"runs": [{"p": 0.5}, {"p": float("inf")}]}]}) == "cases[0].runs[1].p"
    assert non_finite({"a": [1, 2.5, {"b": float("nan")}]}) == "a[2].b"
    assert non_finite({"n": 10 ** 400}) == "n"
    assert non_finite({"a": [1, 2.5, True, None, "inf"]}) is None
