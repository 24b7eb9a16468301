"""Reports no run could write, read back (issue 50, item 9): `read_report` and `gotchas merge` refuse each by its field
with one set of checks (results/bounds.py through results/reading.py); and every section a reader computes again is
checked against what the file states (issue 49, item 6: twin splits and margins were not).

The report is a run of two tiny models over helpers/reportdata.py's chapters (pairs, twins, and two models, so
comparisons and margins too)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers.reportdata import RUN, Scored, score_models

from pytest_gotchas.cli import main
from pytest_gotchas.results.formats import COMPUTED_SECTIONS, FORMAT
from pytest_gotchas.results.merging import Inconsistent, checked_report
from pytest_gotchas.results.reading import ReportDocument, UnreadableReport, read_report
from pytest_gotchas.results.report import to_data


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    scored: Scored = score_models(tmp_path_factory.mktemp("bounds"))
    return json.loads(json.dumps(to_data(scored.report(run=RUN))))


def case_at(data: dict[str, Any], key: str) -> int:
    return next(n for n, c in enumerate(data["cases"]) if f"{c['chapter']}/{c['id']}" == key and c["model"] == "tiny-a")


def main_reading(data: dict[str, Any], n: int) -> tuple[str, dict[str, Any]]:
    run = data["cases"][n]["runs"][0]
    return run["main"], run["readings"][run["main"]]


def set_level(level: float) -> Callable[[dict[str, Any]], str]:
    def edit(data: dict[str, Any]) -> str:
        data["run"]["level"] = level
        return (f"at run.level: {level!r} is not a significance level a run computes at (at least 1e-15 and less "
                "than 1)")
    return edit


def set_p(value: float) -> Callable[[dict[str, Any]], str]:
    def edit(data: dict[str, Any]) -> str:
        n = case_at(data, "demo/right")
        name, reading = main_reading(data, n)
        reading["p_correct"] = value
        return f"at cases[{n}].runs[0].readings.{name}.p_correct: {value!r} is not a probability (from 0 to 1)"
    return edit


def three_cases(data: dict[str, Any]) -> str:
    demo = next(n for n, c in enumerate(data["chapters"]) if c["name"] == "demo")
    data["chapters"][demo]["pairs"]["good-pair"].append("wrong")
    return (f"at chapters[{demo}].pairs.good-pair: pair 'good-pair' of chapter 'demo' lists 3 cases; a pair is "
            "two")


def unknown_case(data: dict[str, Any]) -> str:
    demo = next(n for n, c in enumerate(data["chapters"]) if c["name"] == "demo")
    data["chapters"][demo]["twins"]["spelled-twice"][1] = "nowhere"
    return (f"at chapters[{demo}].twins.spelled-twice: twin 'spelled-twice' names case 'nowhere', which chapter "
            "'demo' does not list")


def undescribed_model(data: dict[str, Any]) -> str:
    data["models"] = [m for m in data["models"] if m["id"] != "tiny-b"]
    n = next(n for n, c in enumerate(data["cases"]) if c["model"] == "tiny-b" and c["status"] == "scored")
    return (f"at cases[{n}].model: 'tiny-b' scored this case, but the report does not describe that model (its "
            "`models`: tiny-a)")


EDITS = {"level 0": set_level(0.0), "level 2.0": set_level(2.0), "level 1e-320": set_level(1e-320),
         "p_correct 1e308": set_p(1e308), "p_correct -5": set_p(-5.0), "p_correct 1.02": set_p(1.02), "a pair of three cases": three_cases,
         "a twin naming a case that does not exist": unknown_case, "a model not described": undescribed_model}


@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS.keys())
def test_read_report_and_merge_refuse_what_no_run_writes_by_its_field(tmp_path: Path, monkeypatch, capsys,
                                                                      data: dict[str, Any], edit) -> None:
    edited = copy.deepcopy(data)
    why = edit(edited)
    path = tmp_path / "a.json"
    path.write_text(json.dumps(edited), encoding="utf-8")
    message = f"{path} is not a gotchas report of format {FORMAT}: {why}"
    with pytest.raises(UnreadableReport) as refusal:
        read_report(path)
    assert str(refusal.value) == message
    monkeypatch.chdir(tmp_path)
    assert main(["merge", "a.json"]) == 1
    assert capsys.readouterr().err == f"gotchas merge: error: a.json is not a gotchas report of format {FORMAT}: {why}\n"


def test_a_probability_rounded_just_past_1_is_one_a_run_writes(tmp_path: Path, data: dict[str, Any]) -> None:
    """A text reading sums a row's entries as the dtype rounded them: float16 can give its next value after 1."""
    edited = copy.deepcopy(data)
    n = case_at(edited, "demo/right")
    name, reading = main_reading(edited, n)
    run = edited["cases"][n]["runs"][0]
    reading["p_correct"] = run["p_correct"] = 1.0009765625
    reading["coverage"] = run["coverage"] = 1.0009765625 + reading["p_wrong"]
    reading["margin"] = run["margin"] = 1.0009765625 - reading["p_wrong"]
    path = tmp_path / "a.json"
    path.write_text(json.dumps(edited), encoding="utf-8")
    assert read_report(path).results[n].runs[0].readings[name].p_correct == 1.0009765625


def test_the_unedited_report_reads_and_merges(tmp_path: Path, monkeypatch, capsys, data: dict[str, Any]) -> None:
    """The checks above refuse the edits, not the report: it reads, and its sections are each there to edit."""
    path = tmp_path / "a.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert len(read_report(path).results) == len(data["cases"])
    monkeypatch.chdir(tmp_path)
    assert main(["merge", "a.json"]) == 0
    # no option was asked for, and the chapters draw no family: those sections are empty
    assert all(data[s] for s in COMPUTED_SECTIONS if s not in (*OPTIONAL, "family_shares"))


CHECK = {"readings": 1, "readings_differ": [], "case_verdicts": 0, "case_verdicts_differ": []}
EFFECTS = [{"chapter": "demo", "model": "tiny-a", "directions": 2, "metric_dtypes": ["bfloat16"]}]
# Sections only a run with an option fills (the report here has neither): each is claimed where none ran.
OPTIONAL = {"one_pass_check": CHECK, "effects": EFFECTS}


# The fixture's chapters draw no family: tests/unit/results/test_familyshares.py edits a report's family shares.
@pytest.mark.parametrize("section", [s for s in COMPUTED_SECTIONS if s != "family_shares"])
def test_each_recomputed_section_edited_is_refused(data: dict[str, Any], section: str) -> None:
    """Issue 49, item 6: the sections a reader computes again were listed twice and disagreed, so an edited twin
    split or log ratio difference (then `margins`) was read as true. Each in turn, its first number edited (a one-pass check claimed where none
    ran)."""
    edited = copy.deepcopy(data)
    if not edited[section]:
        edited[section] = OPTIONAL[section]
        path = section
    else:
        path = bump_first_number(edited[section], section)
    with pytest.raises(Inconsistent) as refusal:
        checked_report(ReportDocument("a.json", edited))
    assert [i.field for i in refusal.value.found] == [path]
    subject = {"pairs": "pair demo/good-pair", "rollups": "chapter demo", "comparisons": "comparison demo",
               "twin_splits": "twin split demo", "log_ratios": "log ratio difference demo"}.get(section, section)
    assert refusal.value.found[0].subject == subject


def bump_first_number(value: Any, path: str) -> str:
    """Add 1 to the first number in `value`, depth first, or negate its first bool; its path."""
    pending = [(path, value, None, None)]
    while pending:
        where, node, parent, key = pending.pop(0)
        if isinstance(node, (int, float)) and parent is not None:
            parent[key] = not node if isinstance(node, bool) else node + 1
            return where
        if isinstance(node, dict):
            pending[:0] = [(f"{where}.{k}", v, node, k) for k, v in node.items()]
        elif isinstance(node, list):
            pending[:0] = [(f"{where}[{n}]", v, node, n) for n, v in enumerate(node)]
    raise AssertionError(f"no number in {path}")
