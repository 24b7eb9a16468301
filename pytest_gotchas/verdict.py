"""The spec's verdict rules, pure: noise, tie, ok, MISS per prompt run; prime-dep across primer orders."""

from __future__ import annotations

NOISE_FLOOR = 0.02  # the larger candidate below 2%: the answer is neither token
OK, MISS, TIE, NOISE, PRIME_DEP = "ok", "MISS", "tie", "noise", "prime-dep"
VERDICTS = (OK, MISS, TIE, NOISE, PRIME_DEP)


def run_verdict(p_correct: float, p_wrong: float) -> str:
    """In the spec's order. The margin is never thresholded, and a tie is never broken by candidate order."""
    if max(p_correct, p_wrong) < NOISE_FLOOR:
        return NOISE
    if p_correct == p_wrong:
        return TIE
    return OK if p_correct > p_wrong else MISS


def case_verdict(run_verdicts: list[str]) -> str:
    """A case run under several primer orders counts only if every order gives the same verdict."""
    if not run_verdicts:
        raise ValueError("a scored case has at least one run")
    return run_verdicts[0] if len(set(run_verdicts)) == 1 else PRIME_DEP
