"""verdict.py: no verdict comes from a probability that is NaN or infinite: every comparison with NaN is false, so the
rules would fall through to MISS (a silent wrong verdict). run_verdict refuses, and the scorer words it for the case."""

from __future__ import annotations

import math

import pytest

from pytest_gotchas.results.verdict import NonFiniteProbability, Verdict, run_verdict


@pytest.mark.parametrize("p_correct, p_wrong", [(math.nan, 0.5), (0.5, math.nan), (math.nan, math.nan),
                                                (math.inf, 0.5), (0.5, -math.inf)])
def test_a_non_finite_probability_gives_no_verdict(p_correct: float, p_wrong: float) -> None:
    with pytest.raises(NonFiniteProbability) as error:
        run_verdict(p_correct, p_wrong)
    assert str(error.value) == f"P(correct) {p_correct}, P(wrong) {p_wrong}"


def test_finite_probabilities_keep_their_verdicts() -> None:
    assert [run_verdict(*p) for p in ((0.5, 0.25), (0.25, 0.5), (0.5, 0.5), (0.01, 0.0))] == [
        Verdict.OK, Verdict.MISS, Verdict.TIE, Verdict.NOISE]
