"""wording.py and wording_baseline.py: a member that breaks a pair that passed in the baseline fails with both verdicts, their
probabilities and the command that records the change; an ok member or a pair that failed before does not; the
summary's lines say what to run. Results are built by hand (helpers/baselines.py), the facts come from the gate."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.baselines import MISS_, MODEL, case, info, infos, recorded

from pytest_gotchas.baseline import compare as cmp
from pytest_gotchas.baseline import gate, store
from pytest_gotchas.report import wording as text
from pytest_gotchas.report import wording_baseline
from pytest_gotchas.results.schema import CaseResult


def regression(tmp_path: Path, base: store.Baseline, result: CaseResult, command: str) -> str | None:
    """The failure text of `result`'s item against `base`, as the plugin words the gate's facts."""
    store.write(tmp_path / "b.yaml", base)
    g = gate.make_gate(tmp_path, Path("b.yaml"), ["tiny"], "bfloat16", None, None, command=command)
    return wording_baseline.case_failure_text(gate.case_failure(g, result, MODEL, info(), strict=False))


def test_strict_fails_every_verdict_that_is_not_ok_and_says_it_after_a_regression(tmp_path: Path) -> None:
    ok, tie = case("a"), case("a", 0.25, 0.25)
    assert gate.case_failure(None, ok, MODEL, info(), strict=True) == gate.CaseFailure()
    assert gate.case_failure(None, tie, MODEL, info(), strict=False) == gate.CaseFailure()
    tied = gate.case_failure(None, tie, MODEL, info(), strict=True)
    assert not tied.stops and wording_baseline.case_failure_text(tied) == (
        "--gotchas-strict: verdict tie is not ok: P(correct) 25.00%  P(wrong) 25.00%")
    store.write(tmp_path / "b.yaml", recorded())
    g = gate.make_gate(tmp_path, Path("b.yaml"), ["tiny"], "bfloat16", None, None, command="again")
    both = wording_baseline.case_failure_text(gate.case_failure(g, case("b", 0.25, 0.5), MODEL, info(), strict=True))
    assert both is not None and both.startswith("regression against the baseline b.yaml:\n")
    assert both.endswith("  again\n\n--gotchas-strict: verdict MISS is not ok: P(correct) 25.00%  P(wrong) 50.00%")


def test_a_member_that_breaks_a_passing_pair_fails_with_both_verdicts_and_probabilities(tmp_path: Path) -> None:
    message = regression(tmp_path, recorded(), case("b", 0.25, 0.5), "pytest --gotchas x --gotchas-update-baseline")
    assert message is not None
    assert message.splitlines() == [
        "regression against the baseline b.yaml:",
        "  pair sets/ab passed in the baseline and fails now (other member a: ok in the baseline)",
        "  b:",
        "    baseline  ok        P(correct) 75.00%  P(wrong) 12.50%",
        "    now       MISS      P(correct) 25.00%  P(wrong) 50.00%",
        "If the change is intended, record it:",
        "  pytest --gotchas x --gotchas-update-baseline",
    ]


@pytest.mark.parametrize("result", [case("b"), case("c", *MISS_), case("d", *MISS_)])
def test_no_failure_for_an_ok_member_or_a_pair_that_failed_before(tmp_path: Path, result: CaseResult) -> None:
    base = recorded([case("a"), case("b"), case("c"), case("d", *MISS_)])
    assert regression(tmp_path, base, result, "cmd") is None


def test_summary_lines_say_what_to_run() -> None:
    base = recorded()
    results = [case("a"), case("b"), case("c"), case("d")]
    lines = [line for line, _ in wording_baseline.comparison_lines(cmp.compare(base, results, infos()), "CMD", update=False)]
    assert "  improvement sets/cd: fail -> pass (c ok, d MISS -> ok)" in lines
    assert lines[-1] == "  record these changes with: CMD"
    assert "0 regressed, 1 improved, 1 unchanged" in lines[-2]


def test_the_count_line_names_pairs_and_cases_apart() -> None:
    """A new case named on the line above, and no new pair: the count says both, each under its own name."""
    lines = [line for line, _ in wording_baseline.comparison_lines(cmp.Comparison(unchanged=3, new_cases=["sets/x"]), "CMD",
                                                       update=False)]
    assert lines[:2] == ["  new cases, not in the baseline: sets/x",
                         "  pairs: 0 regressed, 0 improved, 3 unchanged, 0 new, 0 gone, 0 not checked; cases: 1 new, "
                         "0 gone, 0 verdicts changed"]


# -- a cache that cannot be written (hostile input round two) --------------------------------------------------------


def test_a_cache_that_cannot_be_written_is_one_sentence_naming_its_folder() -> None:
    assert text.cache_folder_lost("/r/.pytest_cache/d/gotchas", "Read-only file system") == (
        "gotchas: the cache folder /r/.pytest_cache/d/gotchas cannot be written (Read-only file system); this run "
        "executes every snippet and tokenizes every cut again")
    assert text.transcript_cache_lost("/r/t", "No space left on device") == (
        "gotchas: the transcript cache /r/t cannot be written (No space left on device); this run executes every "
        "snippet afresh and keeps none of them")
