"""bench/same_report.py: two reports of the same run compare equal apart from timings and the fields named as new."""

from __future__ import annotations

from bench.same_report import differences


def test_only_what_runs_always_differ_in_and_the_new_fields_are_ignored() -> None:
    before = {"run": {"date": "a", "timings": {"seconds": {"x": 1.0}}}, "cases": [{"id": "a", "p": 0.5}]}
    after = {"run": {"date": "b", "timings": {"seconds": {"x": 2.0}}, "interrupted": False},
             "cases": [{"id": "a", "p": 0.5}]}
    assert differences(before, after, {"interrupted"}) == []
    assert differences(before, after, set()) == [".run.interrupted: only in one"]
    changed = {**after, "cases": [{"id": "a", "p": 0.25}]}
    assert differences(before, changed, {"interrupted"}) == [".cases[0].p: 0.5 vs 0.25"]
