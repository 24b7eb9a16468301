"""The words of `gotchas merge`'s refusals (results/merging.py decides them): each names both reports and says what
would make the merged numbers a mix that no single run could have given."""

from __future__ import annotations

from ..results.merging import (ChapterDraws, ChapterVersions, DifferentResults, Difference, Inconsistent,
                               MergeRefusal, ModelDescribedTwice, NothingToMerge, OneModelTwoNames,
                               ProbabilitiesDiffer, RunCounts)
from .wording import inconsistent_text, pct


def model_name(model: str | None) -> str:
    return f"model {model!r}" if model is not None else "no model"


def difference_text(difference: Difference) -> str:
    """The first thing two results of one case differ in, in words."""
    if isinstance(difference, RunCounts):
        return f"{difference.old} vs {difference.new} runs"
    primer = f"primer {difference.primer}: " if difference.primer is not None else ""
    if isinstance(difference, ProbabilitiesDiffer):
        (correct_a, correct_b), (wrong_a, wrong_b) = difference.p_correct, difference.p_wrong
        return f"{primer}P(correct) {pct(correct_a)} vs {pct(correct_b)}, P(wrong) {pct(wrong_a)} vs {pct(wrong_b)}"
    if difference.quoted:
        return f"{primer}{difference.key} {difference.old!r} vs {difference.new!r}"
    return f"{primer}{difference.key} {difference.old} vs {difference.new}"


def merge_refusal_text(refusal: MergeRefusal) -> str:
    """One refusal of results/merging.py as `gotchas merge` says it."""
    if isinstance(refusal, NothingToMerge):
        return "nothing to merge: name at least one report"
    if isinstance(refusal, Inconsistent):
        return inconsistent_text(refusal.report, refusal.found)
    if isinstance(refusal, ModelDescribedTwice):
        detail = "; ".join(f"{k} {a!r} vs {b!r}" for k, a, b in refusal.differ)
        return (f"{refusal.first} and {refusal.second} describe {model_name(refusal.model)} differently ({detail}): "
                f"a merged report states one description per model, so its results must come from "
                f"one set of weights, dtype, hardware and library versions")
    if isinstance(refusal, OneModelTwoNames):
        known, model = refusal.known, refusal.model
        files = (f"{refusal.first} holds" if refusal.first == refusal.second
                 else f"{refusal.first} and {refusal.second} hold")
        return (f"{files} one model under two names: {known.id!r} ({known.name}) and {model.id!r} ({model.name}) "
                f"have the same weights (sha256 {model.weights_sha256[:12]}...), dtype {model.dtype}, device "
                f"{model.device} and numerics {model.numerics or 'not recorded'}, so comparing them would compare "
                "the model with itself; merge reports of different models, or of one model run another way "
                "(another dtype or device)")
    if isinstance(refusal, ChapterVersions):
        chapter, sha = refusal.chapter, refusal.chapter.sha256 or ""
        return (f"{refusal.first} and {refusal.second} ran different versions of chapter {chapter.name!r} "
                f"({chapter.path}: sha256 {refusal.known_sha256[:12]}... vs {sha[:12]}...): their results are not "
                f"of the same cases; run both on the same chapter files")
    if isinstance(refusal, ChapterDraws):
        return (f"{refusal.first} and {refusal.second} drew other instances of the families of chapter "
                f"{refusal.chapter!r} ({refusal.known_drawn} vs {refusal.drawn} drawn): their results are not of the "
                "same cases; run both with the same --gotchas-instances")
    if isinstance(refusal, DifferentResults):
        return (f"{refusal.first} and {refusal.second} hold different results for {model_name(refusal.model)}, "
                f"case {refusal.case}: {difference_text(refusal.difference)}; only identical duplicates (an "
                f"overlapping shard) can be merged")
    raise TypeError(f"no wording for {type(refusal).__name__}")
