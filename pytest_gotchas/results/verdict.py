"""Verdicts and statuses, each one type, and the write-up's rules that produce them. Pure: no torch, no pytest.

A run (one prompt: the case under one primer) gets a verdict from its two probabilities. A case gets one verdict
from all its runs; the qualifiers (prime-dep ...) say that runs which should agree did not. Every outcome a test can
report (a verdict, or the reason a case was not scored) has one pytest category, letter and colour, here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

NOISE_FLOOR = 0.02  # the larger candidate below 2%: the answer is neither token


class Verdict(StrEnum):
    OK = "ok"
    MISS = "MISS"
    TIE = "tie"
    NOISE = "noise"
    PRIME_DEP = "prime-dep"
    PRECISION_DEP = "precision-dep"
    SURFACE_DEP = "surface-dep"


class Status(StrEnum):
    """Why a case has (or has no) verdict."""

    SCORED = "scored"
    UNSCORED = "unscored"  # executed and shown, never put to the model
    CRASH = "crash"  # the interpreter died producing the ground truth
    EXCLUDED = "excluded"  # implementation-defined chapter whose ground truth differs on this interpreter
    SKIPPED = "skipped"  # the interpreter it names is missing


@dataclass(frozen=True)
class Outcome:
    """How pytest shows an outcome. Categories are single words: pytester reads "3 prime-dep" back as "prime".
    No category: pytest reports it as its own skip."""

    key: str
    category: str | None
    letter: str
    word: str
    colour: str  # green | red | yellow


OUTCOMES = {o.key: o for o in (
    Outcome(Verdict.OK, "ok", ".", "ok", "green"),
    Outcome(Verdict.MISS, "MISS", "M", "MISS", "red"),
    Outcome(Verdict.TIE, "tie", "T", "tie", "yellow"),
    Outcome(Verdict.NOISE, "noise", "n", "noise", "yellow"),
    Outcome(Verdict.PRIME_DEP, "prime_dep", "P", "prime-dep", "yellow"),
    Outcome(Verdict.PRECISION_DEP, "precision_dep", "R", "precision-dep", "yellow"),
    Outcome(Verdict.SURFACE_DEP, "surface_dep", "S", "surface-dep", "yellow"),
    Outcome(Status.UNSCORED, "unscored", "u", "unscored", "yellow"),
    Outcome(Status.CRASH, "crash", "C", "CRASH", "red"),
    Outcome(Status.EXCLUDED, None, "s", "excluded", "yellow"),
    Outcome(Status.SKIPPED, None, "s", "skipped", "yellow"),
)}


def colour(key: str | None) -> str:
    outcome = OUTCOMES.get(key or "")
    return outcome.colour if outcome else "yellow"


class NonFiniteProbability(ValueError):
    """A probability that is NaN or infinite: no verdict can come from it (every comparison with NaN is false, so it
    would fall through to MISS)."""


def run_verdict(p_correct: float, p_wrong: float) -> Verdict:
    """In the write-up's order. The margin is never thresholded, and a tie is never broken by candidate order."""
    if not (math.isfinite(p_correct) and math.isfinite(p_wrong)):
        raise NonFiniteProbability(f"P(correct) {p_correct}, P(wrong) {p_wrong}")
    if max(p_correct, p_wrong) < NOISE_FLOOR:
        return Verdict.NOISE
    if p_correct == p_wrong:
        return Verdict.TIE
    return Verdict.OK if p_correct > p_wrong else Verdict.MISS


@dataclass(frozen=True)
class Judged:
    """One run as the case verdict sees it."""

    primer: str | None
    verdict: Verdict
    precision: Verdict | None = None  # the verdict of the same reading computed in float32 (--gotchas-precision-check)
    variant: str | None = None  # the variant the run read; None for the case's own transcript


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    qualifiers: tuple[Verdict, ...]  # every qualifier that applies, in QUALIFIERS order; the first names the verdict


# The documented order in which qualifiers name a case's verdict: a verdict that belongs to rounding is no verdict of
# the model under any primer or wording, so precision-dep comes first; then the primer order (the write-up's
# prime-dep: one transcript, here or in a variant, that changes its answer with the primer); then the surface
# (surface-dep: transcripts that each answer steadily, but not alike).
QUALIFIERS = (Verdict.PRECISION_DEP, Verdict.PRIME_DEP, Verdict.SURFACE_DEP)


def case_verdict(runs: Sequence[Judged]) -> Judgement:
    """A case counts only if every run agrees with itself in float32 (when checked), every primer order gives the same
    verdict, and every variant the same as the case; otherwise each qualifier that applies is recorded and the first
    names the case's verdict."""
    if not runs:
        raise ValueError("a scored case has at least one run")
    found = set()
    if any(r.precision is not None and r.precision != r.verdict for r in runs):
        found.add(Verdict.PRECISION_DEP)
    by_transcript: dict[str | None, set[Verdict]] = {}
    for run in runs:
        by_transcript.setdefault(run.variant, set()).add(run.verdict)
    if any(len(verdicts) > 1 for verdicts in by_transcript.values()):
        found.add(Verdict.PRIME_DEP)
    elif len({v for verdicts in by_transcript.values() for v in verdicts}) > 1:
        found.add(Verdict.SURFACE_DEP)
    qualifiers = tuple(q for q in QUALIFIERS if q in found)
    return Judgement(qualifiers[0] if qualifiers else runs[0].verdict, qualifiers)
