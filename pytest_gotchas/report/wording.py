"""The words for a run's comparison with its baseline: failure texts of the items, and the summary's lines."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

from ..baseline.compare import Comparison, Numerics, PairChange, UpdateStats, broken_pairs, entry_of
from ..baseline.store import ANY_MODEL_FLAG, UPDATE_FLAG, Baseline, Header, Probability
from ..results.schema import CaseResult

Line = tuple[str, dict[str, bool]]
RED, GREEN, YELLOW, PLAIN = {"red": True}, {"green": True}, {"yellow": True}, {}


def pct(p: float | None) -> str:
    return "-" if p is None else f"{p * 100:.2f}%"


def probabilities(p_correct: Probability, p_wrong: Probability) -> str:
    if isinstance(p_correct, dict) and isinstance(p_wrong, dict):
        return "  ".join(f"{name}: P(correct) {pct(p_correct[name])} P(wrong) {pct(p_wrong.get(name, math.nan))}"
                         for name in p_correct)
    assert not isinstance(p_correct, dict) and not isinstance(p_wrong, dict)
    return f"P(correct) {pct(p_correct)}  P(wrong) {pct(p_wrong)}"


def refusal(path: Path | str, recorded: Header, now: str, fields: list[str]) -> str:
    return (
        f"baseline {path} was recorded with {recorded.describe()}; this run uses {now}. "
        f"They differ in {', '.join(fields)}, so their verdicts are not comparable. "
        f"Record a baseline for this model with --gotchas-baseline OTHER.yaml {UPDATE_FLAG}, "
        f"or compare anyway with {ANY_MODEL_FLAG}."
    )


def hardware_note(recorded: Header, now: Header) -> str | None:
    """Said wherever a verdict is compared across hardware: measured, other CPU kernels moved bfloat16
    probabilities by up to 3 points and turned exact ties into ok or MISS (docs/determinism.md)."""
    if (recorded.device, recorded.hardware) == (now.device, now.hardware):
        return None
    return (f"recorded on {recorded.hardware}, this run on {now.hardware}: other kernels round differently, so "
            "probabilities move and close verdicts can flip (docs/determinism.md)")


def regression_message(baseline: Baseline, path: Path | str, result: CaseResult, command: str,
                       note: str | None = None) -> str | None:
    """The failure text for a member that broke a pair which passed in the baseline; None when it broke none."""
    broken = broken_pairs(baseline, result)
    if not broken:
        return None
    chapter = result.chapter.name
    old = baseline.verdicts.get(result.key)
    lines = [f"regression against the baseline {path}:"]
    for pair_id in broken:
        others = [m for m in result.chapter.pairs[pair_id] if m != result.id]
        other = "; ".join(f"other member {m}: {_verdict_of(baseline, f'{chapter}/{m}')} in the baseline"
                          for m in others)
        lines.append(f"  pair {chapter}/{pair_id} passed in the baseline and fails now ({other})")
    was = f"{old.verdict:<9} {probabilities(old.p_correct, old.p_wrong)}" if old else "ok        (no probabilities recorded)"
    now = entry_of(result)
    lines.append(f"  {result.id}:")
    lines.append(f"    baseline  {was}")
    lines.append(f"    now       {now.verdict:<9} {probabilities(now.p_correct, now.p_wrong)}")
    if note:
        lines.append(f"  ({note})")
    lines.append("If the change is intended, record it:")
    lines.append(f"  {command}")
    return "\n".join(lines)


def _verdict_of(baseline: Baseline, key: str) -> str:
    entry = baseline.verdicts.get(key)
    return entry.verdict if entry else "ok"  # a passing pair's members were ok


def describe_change(change: PairChange) -> str:
    parts = []
    for case_id, old, new in change.members:
        if new is None:
            parts.append(f"{case_id} not scored")
        elif old is None or old == new:
            parts.append(f"{case_id} {new}")
        else:
            parts.append(f"{case_id} {old} -> {new}")
    return ", ".join(parts)


def notes(recorded: Header | None, now: Header) -> Iterator[Line]:
    if recorded is None:
        return
    note = hardware_note(recorded, now)
    if note:
        yield f"  {note}", YELLOW
    versions = [(name, getattr(recorded, name), getattr(now, name)) for name in ("torch", "transformers")]
    changed = [f"{name} {old} -> {new}" for name, old, new in versions if old != new]
    if changed:
        yield f"  recorded with other library versions: {', '.join(changed)}", YELLOW


def comparison_lines(c: Comparison, baseline: Baseline, command: str, update: bool) -> Iterator[Line]:
    """The summary of a comparison; in update mode the same facts are what was just recorded."""
    for change in c.regressions:
        word = "regression (recorded)" if update else "REGRESSION"
        yield f"  {word} {change.key}: pass -> FAIL ({describe_change(change)})", (YELLOW if update else RED)
    for change in c.improvements:
        word = "improvement (recorded)" if update else "improvement"
        yield f"  {word} {change.key}: fail -> pass ({describe_change(change)})", GREEN
    for change in c.unchecked:
        yield f"  not checked {change.key}: passed in the baseline; {describe_change(change)}", YELLOW
    for change in c.new_pairs:
        state = change.new or "not scored"
        yield f"  new pair {change.key}: {state} ({describe_change(change)}), not in the baseline", YELLOW
    for key in c.gone_pairs:
        yield f"  pair {key} is in the baseline ({baseline.pairs[key]}) but no longer in its chapter", YELLOW
    for case in c.changed_cases:
        yield (f"  verdict changed {case.key}: {case.old.verdict} -> {case.new.verdict} "
               f"(was {probabilities(case.old.p_correct, case.old.p_wrong)}; "
               f"now {probabilities(case.new.p_correct, case.new.p_wrong)})"), YELLOW
    if c.new_cases:
        yield f"  new cases, not in the baseline: {', '.join(c.new_cases)}", YELLOW
    if c.gone_cases:
        yield f"  cases in the baseline that are no longer in their chapter: {', '.join(c.gone_cases)}", YELLOW
    if c.not_run:
        kept = "kept" if update else "not compared"
        yield f"  chapters in the baseline that did not run ({kept}): {', '.join(c.not_run)}", PLAIN
    pairs = (f"{len(c.regressions)} regressed, {len(c.improvements)} improved, {c.unchanged} unchanged, "
             f"{len(c.new_pairs)} new, {len(c.gone_pairs)} gone, {len(c.unchecked)} not checked pairs; "
             f"{len(c.changed_cases)} verdicts changed")
    yield f"  {pairs}", (RED if c.regressions and not update else PLAIN) | {"bold": True}
    pending = c.improvements or c.changed_cases or c.new_pairs or c.new_cases or c.gone_pairs or c.gone_cases
    if pending and not update and not c.regressions:
        yield f"  record these changes with: {command}", PLAIN
    elif c.regressions and not update:
        yield f"  if the regressions are intended, record them with: {command}", PLAIN


def update_line(stats: UpdateStats, path: Path | str, fresh: bool) -> str:
    start = "started afresh, " if fresh else ""
    return (f"baseline {path} written: {start}{stats.pairs} pairs and {stats.verdicts} verdicts recorded "
            f"({stats.changed} changed), {stats.removed} removed, {stats.kept} kept from cases that did not run")


def numerics_lines(check: Numerics, recorded: Header, now: Header) -> Iterator[Line]:
    """Whether the kernels gave the baseline's bits: with the same fingerprint any difference is a bug; with another
    it is the kernels', and the verdicts it changed inside the dtype's rounding are named."""
    if check.same_kernels:
        if check.differing:
            yield (f"  numerics match the baseline's ({now.numerics}), yet {len(check.differing)} cases' probabilities "
                   f"differ from it: that is a bug, please report it: {', '.join(check.differing)}"), RED
        return
    yield (f"  same model, other kernels (numerics {recorded.numerics or 'not recorded'} on {recorded.hardware}, "
           f"now {now.numerics} on {now.hardware}): probabilities differ from the baseline's in "
           f"{len(check.differing)} cases; {len(check.changed)} verdicts changed"), YELLOW
    if check.within_rounding:
        yield (f"  verdicts changed by a margin {now.softmax_dtype} cannot resolve (decided by rounding, not by the "
               f"model): {', '.join(check.within_rounding)}"), YELLOW
