"""A baseline records the primers each chapter's prompts started with (issue 36, item 7): a run read with other
primers names them as the cause of its differences and says what the comparison can and cannot conclude; a file
written before they were recorded still reads, and says they are not recorded."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from helpers.baselines import HEADER, HEADER_YAML, MISS_, MODEL, all_ok, case, info

from pytest_gotchas.baseline import compare as cmp
from pytest_gotchas.baseline import gate, store
from pytest_gotchas.report import wording_baseline
from pytest_gotchas.results.baselines import BaselineOutcome
from pytest_gotchas.results.schema import CaseResult
from pytest_gotchas.truth.collect import primers_fact

PATH = "baselines/tiny-bfloat16-cpu.yaml"
LIST_FIRST = (("list-first", ">>> xs = [3, 1, 2]\n>>> xs\n[3, 1, 2]\n"),)
SET_FIRST = (("set-first", ">>> s = {'a', 'b'}\n"), ("long", ">>> " + "x" * 40 + "\n"))
BEFORE, AFTER = primers_fact(LIST_FIRST), primers_fact(SET_FIRST)
LOADED = replace(MODEL, bos="auto: <bos>")
NOW = replace(HEADER, reading="token", bos="auto: <bos>", kernels="plain")


def chapters(primers: str) -> dict[str, object]:
    return {"sets": replace(info(), primers=primers)}


def finish(tmp_path: Path, results: list[CaseResult], primers: str) -> BaselineOutcome:
    g = gate.make_gate(tmp_path, None, ["tiny"], "bfloat16", None, None, command="CMD", reading="token")
    return g.finish("tiny", results, LOADED, chapters(primers))  # type: ignore[arg-type]


def lines(done: BaselineOutcome) -> list[str]:
    return [text for text, _ in wording_baseline.outcome_lines(done)]


def test_the_primers_fact_is_a_digest_and_a_short_form() -> None:
    assert primers_fact(()) == "none"
    assert BEFORE.startswith("sha256 ") and len(BEFORE.split(":")[0]) == len("sha256 ") + 16
    assert BEFORE.split(": ", 1)[1] == "list-first: '>>> xs = [3, 1, 2]' +2 lines"
    assert AFTER.split(": ", 1)[1] == "set-first: \">>> s = {'a', 'b'}\"; long: '>>> xxxxxxxxxxxxxxxxxxxxxxxxx...'"
    assert primers_fact((("list-first", ">>> xs = [3, 1, 2]\n"),)) != BEFORE  # the digest covers the whole text


def test_a_baseline_records_each_chapters_primers_and_reads_them_back(tmp_path: Path) -> None:
    baseline, _ = cmp.update(None, all_ok(), chapters(BEFORE), NOW)  # type: ignore[arg-type]
    assert baseline.primers == {"sets": BEFORE}
    store.write(tmp_path / PATH, baseline)
    text = (tmp_path / PATH).read_text()
    assert text.index("model:") < text.index("\nprimers:\n  sets: 'sha256 ") < text.index("\npairs:")  # the header
    assert store.read(tmp_path / PATH).primers == {"sets": BEFORE}
    # a chapter that did not run keeps the primers it was recorded with; one that ran takes this run's
    floats = replace(info("floats", ("x", "y"), {"xy": ["x", "y"]}), primers=AFTER)
    again, _ = cmp.update(baseline, [case("x", chapter="floats"), case("y", chapter="floats")], {"floats": floats},
                          NOW)
    assert again.primers == {"floats": AFTER, "sets": BEFORE}


def test_other_primers_are_named_as_the_cause_and_what_cannot_be_concluded(tmp_path: Path) -> None:
    baseline, _ = cmp.update(None, all_ok(), chapters(BEFORE), NOW)  # type: ignore[arg-type]
    store.write(tmp_path / PATH, baseline)
    done = finish(tmp_path, [case("a", 0.5, 0.25), case("b", *MISS_), *all_ok()[2:]], AFTER)
    assert (f"  chapter sets's primers differ from the baseline's: recorded {BEFORE}; now {AFTER}. Its prompts are "
            "other texts, so its probabilities cannot be compared with the baseline's: 2 of its cases differ "
            "(verdicts that moved: sets/b), which says nothing of the model or the kernels and is no bug; its pairs "
            "are still compared. Record the baseline again to compare it like with like") in lines(done)
    assert not any("please report it" in line for line in lines(done))  # their differences are the primers'
    assert done.numerics is not None and done.numerics.differing == []


def test_the_same_primers_leave_a_difference_a_bug(tmp_path: Path) -> None:
    baseline, _ = cmp.update(None, all_ok(), chapters(BEFORE), NOW)  # type: ignore[arg-type]
    store.write(tmp_path / PATH, baseline)
    done = finish(tmp_path, [case("a", 0.5, 0.25), *all_ok()[1:]], BEFORE)
    assert ("  numerics match the baseline's (0000000000000000), yet 1 cases' probabilities differ from it: that is a "
            "bug, please report it: sets/a") in lines(done)


def test_a_baseline_without_primers_reads_and_says_they_are_not_recorded(tmp_path: Path) -> None:
    old, _ = cmp.update(None, all_ok(), chapters(""), NOW)  # type: ignore[arg-type]  (a run that knew no primers)
    store.write(tmp_path / PATH, old)
    assert "primers" not in (tmp_path / PATH).read_text()  # as a file written before they were recorded
    assert store.read(tmp_path / PATH).primers == {}
    done = finish(tmp_path, [case("a", 0.5, 0.25)], AFTER)
    assert ("  the baseline does not record its primers (an older file): a difference they make cannot be told from "
            "the model's; record it again to record them") in lines(done)
    assert ("  numerics match the baseline's (0000000000000000), yet 1 cases' probabilities differ from it (sets/a); "
            "its primers are not recorded, so they may be the cause; verdicts that moved: none") in lines(done)


@pytest.mark.parametrize("section, problem", [
    ("primers: [a]\n", "primers: expected a mapping, got a list"),
    ("primers: {sets: 3}\n", "primers: sets: expected the primers' sha256 and short form, got 3"),
    ("primers: {'a/b': x}\n", "primers: 'a/b': keys are chapter names"),
])
def test_a_bad_primers_section_is_refused_naming_it(section: str, problem: str) -> None:
    with pytest.raises(store.BaselineError) as error:
        store.loads(f"format: 3\ncount: {{pairs: 0, verdicts: 0}}\n{HEADER_YAML}{section}", "b.yaml")
    assert str(error.value) == (f"baseline b.yaml is not a pytest-gotchas baseline: {problem}. Fix or delete the "
                                "file, then record it again with --gotchas-update-baseline.")
