"""terminal.py: --gotchas-strict fails every verdict that is not ok, with its probabilities."""

from __future__ import annotations

from helpers.baselines import case

from pytest_gotchas.report import terminal


def test_strict_fails_every_verdict_that_is_not_ok() -> None:
    assert terminal.strict_message(case("a")) is None
    assert terminal.strict_message(case("a", 0.25, 0.25)) == (
        "--gotchas-strict: verdict tie is not ok: P(correct) 25.00%  P(wrong) 25.00%")
