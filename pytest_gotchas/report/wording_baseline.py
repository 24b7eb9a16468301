"""The words of a run against its baseline: what it was recorded with and why it cannot be used, a member's
regression, the comparison and the update, the kernels' numerics and the primers, and a case's failure under the gate.
baseline/ computes these facts (results/baselines.py types them); the terminal, the page, `gotchas merge` and the
items' failure texts take their sentences from here.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..baseline.gate import CaseFailure
from ..results.baselines import (ANY_MODEL_FLAG, READ_FIELDS, UPDATE_FLAG, BaselineOutcome, Comparison, Entry,
                                 FactChange, Header, Numerics, PairChange, PrimersChange, Refusal, Regression,
                                 UpdateStats)
from ..results.hardware import PLAIN_KERNELS
from .wording import GREEN, RED, UNSTYLED, YELLOW, Line, probabilities
from .wording_paths import text_path_text


def describe(header: Header) -> str:
    checks = f", with {header.checks.replace(',', ' and ')}" if header.checks else ""
    read = "".join(part for part, given in (
        (f", {header.reading} reading", header.reading), (f", BOS {header.bos}", header.bos),
        (f", {header.kernels} kernels", header.kernels not in ("", PLAIN_KERNELS))) if given)
    return (f"model {header.name!r} (weights sha256 {header.weights_sha256[:12]}..., {header.dtype}, "
            f"softmax {header.softmax_dtype}, {header.device}{read}{checks})")


def refusal_text(refusal: Refusal) -> str:
    if refusal.now is not None:
        now = describe(refusal.now)
    else:
        checks = refusal.checks
        reading = f"{refusal.reading} reading, " if refusal.reading else ""
        now = f"dtype {refusal.dtype}, softmax {refusal.softmax_dtype}, {reading}" + (
            f"with {checks.replace(',', ' and ')}" if checks else "without opt-in checks")
    fields = ", ".join(_refused_field(refusal, name) for name in refusal.fields)
    read = any(name in READ_FIELDS for name in refusal.fields)
    return (
        f"baseline {refusal.path} was recorded with {describe(refusal.recorded)}; this run uses {now}. "
        f"They differ in {fields}, so their verdicts are not comparable"
        + (": the numbers were read another way, so a verdict that moved would tell nothing of the model, and is no "
           "bug. " if read else ". ")
        + f"Record a baseline for this model with --gotchas-baseline OTHER.yaml {UPDATE_FLAG}, "
        f"or compare anyway with {ANY_MODEL_FLAG}."
    )


def _refused_field(refusal: Refusal, name: str) -> str:
    """A field a refusal names; a way of reading with what each side used, since that is the cause to see."""
    if name not in READ_FIELDS:
        return name
    now = getattr(refusal.now, name) if refusal.now is not None else refusal.reading
    return f"{name} (recorded {getattr(refusal.recorded, name)}, now {now})"


def hardware_note(recorded_hardware: str, hardware: str) -> str:
    """Said wherever a verdict is compared across hardware: measured, other CPU kernels moved bfloat16
    probabilities by up to 3 points and turned exact ties into ok or MISS (docs/determinism.md)."""
    return (f"recorded on {recorded_hardware}, this run on {hardware}: other kernels round differently, so "
            "probabilities move and close verdicts can flip (docs/determinism.md)")


def regression_text(r: Regression) -> str:
    """The failure text of a member that broke a pair which passed in the baseline."""
    lines = [f"regression against the baseline {r.path}:"]
    for pair in r.broken:
        other = "; ".join(f"other member {m}: {verdict} in the baseline" for m, verdict in pair.others.items())
        lines.append(f"  pair {pair.pair} passed in the baseline and fails now ({other})")
    was = (f"{r.old.verdict:<9} {probabilities(r.old.p_correct, r.old.p_wrong)}" if r.old
           else "ok        (no probabilities recorded)")
    lines.append(f"  {r.case}:")
    lines.append(f"    baseline  {was}")
    lines.append(f"    now       {r.new.verdict:<9} {probabilities(r.new.p_correct, r.new.p_wrong)}")
    if r.recorded_hardware is not None:
        lines.append(f"  ({hardware_note(r.recorded_hardware, r.hardware)})")
    lines.append("If the change is intended, record it:")
    lines.append(f"  {r.command}")
    return "\n".join(lines)


def strict_text(not_ok: Entry) -> str:
    """--gotchas-strict: a scored verdict that is not ok fails its case."""
    return f"--gotchas-strict: verdict {not_ok.verdict} is not ok: {probabilities(not_ok.p_correct, not_ok.p_wrong)}"


# Why the session stops at a case whose baseline was recorded with another model (pytest's shouldstop).
REFUSED_STOP = "gotchas: the baseline cannot be used with this model"


def case_failure_text(failure: CaseFailure) -> str | None:
    """The failure text of a scored case's item, each reason in turn (baseline/gate.case_failure); None: it passes."""
    check = failure.check
    texts = [refusal_text(check.refusal) if check.refusal is not None else "",
             regression_text(check.regression) if check.regression is not None else "",
             strict_text(failure.not_ok) if failure.not_ok is not None else ""]
    return "\n\n".join(text for text in texts if text) or None


def describe_change(change: PairChange) -> str:
    parts = []
    for member in change.members:
        if member.new is None:
            parts.append(f"{member.case} not scored")
        elif member.old is None or member.old == member.new:
            parts.append(f"{member.case} {member.new}")
        else:
            parts.append(f"{member.case} {member.old} -> {member.new}")
    return ", ".join(parts)


def outcome_lines(outcome: BaselineOutcome, prefix: bool = False) -> list[Line]:
    """The summary of one model's use of its baseline; `prefix` names the model on every line (several models)."""
    lines = list(_outcome_lines(outcome))
    if not prefix:
        return lines
    return [(f"[{outcome.model}] {text.strip()}" if text.strip() else text, markup) for text, markup in lines]


def _outcome_lines(o: BaselineOutcome) -> Iterator[Line]:
    if o.nothing_scored:
        if o.update:
            yield "baseline: nothing was scored, so nothing was recorded", YELLOW
        return
    if o.refusal is not None:
        yield f"baseline: not used: {refusal_text(o.refusal)}", RED
        return
    if o.missing and not o.update:
        yield f"baseline: none at {o.path}; record one with: {o.command}", YELLOW
        return
    if not o.missing:
        verb = "recorded over" if o.update else "compared with"
        yield f"baseline {o.path}: {verb} {describe(o.recorded) if o.recorded else 'no header'}", {"bold": True}
        if o.across and o.now is not None:
            yield (f"  compared ACROSS MODELS ({ANY_MODEL_FLAG}): they differ in {', '.join(o.across)}; this run uses "
                   f"{describe(o.now)}"), YELLOW
        if o.recorded is not None and o.now is not None:
            yield from _header_notes(o.recorded, o.now)
            if o.numerics is not None:
                yield from numerics_lines(o.numerics, o.recorded, o.now)
        if o.comparison is not None:
            yield from comparison_lines(o.comparison, o.command, o.update)
    if o.written is not None:
        yield update_line(o.written, o.path or ""), GREEN
    if o.write_error is not None:
        yield f"baseline: could not write {o.path}: {o.write_error}", RED


def _header_notes(recorded: Header, now: Header) -> Iterator[Line]:
    if (recorded.device, recorded.hardware) != (now.device, now.hardware):
        yield f"  {hardware_note(recorded.hardware, now.hardware)}", YELLOW
    versions = [(name, getattr(recorded, name), getattr(now, name)) for name in ("torch", "transformers")]
    changed = [f"{name} {old} -> {new}" for name, old, new in versions if old != new]
    if changed:
        yield f"  recorded with other library versions: {', '.join(changed)}", YELLOW


def comparison_lines(c: Comparison, command: str, update: bool) -> Iterator[Line]:
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
    for key, state in c.gone_pairs.items():
        yield f"  pair {key} is in the baseline ({state}) but no longer in its chapter", YELLOW
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
        yield f"  chapters in the baseline that did not run ({kept}): {', '.join(c.not_run)}", UNSTYLED
    # Pairs and cases counted apart, each named first: "0 new" under a line naming a new case read as a contradiction.
    pairs = (f"pairs: {len(c.regressions)} regressed, {len(c.improvements)} improved, {c.unchanged} unchanged, "
             f"{len(c.new_pairs)} new, {len(c.gone_pairs)} gone, {len(c.unchecked)} not checked; cases: "
             f"{len(c.new_cases)} new, {len(c.gone_cases)} gone, {len(c.changed_cases)} verdicts changed")
    yield f"  {pairs}", (RED if c.regressions and not update else UNSTYLED) | {"bold": True}
    pending = c.improvements or c.changed_cases or c.new_pairs or c.new_cases or c.gone_pairs or c.gone_cases
    if pending and not update and not c.regressions:
        yield f"  record these changes with: {command}", UNSTYLED
    elif c.regressions and not update:
        yield f"  if the regressions are intended, record them with: {command}", UNSTYLED


def obtained_line(shipped: str, obtained: str | None, error: str | None = None) -> Line:
    """Where a run that regressed wrote the baseline as it would record it (baseline/gate.py), or why it could not."""
    if obtained is None:
        return f"  could not write this run's baseline beside {shipped}: {error}", RED
    return (f"  this run's baseline, as {UPDATE_FLAG} would record it: {obtained} (diff it with {shipped}, or keep it "
            "from CI)"), YELLOW


def update_line(stats: UpdateStats, path: str) -> str:
    start = "started afresh, " if stats.fresh else ""
    dropped = (f"; {len(stats.dropped)} entries it could not read were dropped ({'; '.join(stats.dropped)})"
               if stats.dropped else "")
    fields = sorted({name for differ in stats.mixed.values() for name in differ})
    mixed = (f"; the file is mixed: {len(stats.mixed)} kept chapters were recorded with another {', '.join(fields)} "
             f"than its header says, and its `kept:` section names them ({', '.join(stats.mixed)})"
             if stats.mixed else "")
    return (f"baseline {path} written: {start}{stats.pairs} pairs and {stats.verdicts} verdicts recorded "
            f"({stats.changed} changed), {stats.removed} removed, {stats.kept} kept from cases that did not run"
            f"{dropped}{mixed}")


def numerics_lines(check: Numerics, recorded: Header, now: Header) -> Iterator[Line]:
    """Whether the kernels gave the baseline's bits. With another fingerprint the differences are the kernels', and
    the verdicts changed inside the dtype's rounding are named. With the same one, a recorded fact that changed (a
    library version, the hardware) is named as the likely cause, with the verdicts that moved; a setting the baseline
    does not record is said to be unknown; only when nothing the baseline records changed is a difference a bug."""
    if check.unrecorded:
        yield (f"  the baseline does not record its {', '.join(check.unrecorded)} (an older file): a difference they "
               "make cannot be told from the model's; record it again to record them"), UNSTYLED
    for change in check.primers:
        yield primers_text(change), YELLOW
    if check.same_kernels:
        if check.differing:
            yield _same_kernels_line(check, now)
        return
    path = next((f for f in check.facts if f.field == "text_path"), None)
    if path is not None:
        yield text_path_text(path, check, recorded, now), YELLOW
        besides = [f for f in check.facts if f.field not in ("text_path", "numerics", "kernels")]
        if besides and check.differing:
            yield f"  it was also recorded with {_facts(besides)}: as likely a cause", YELLOW
    else:
        yield (f"  same model, other kernels (numerics {recorded.numerics or 'not recorded'} on {recorded.hardware}, "
               f"now {now.numerics} on {now.hardware}): probabilities differ from the baseline's in "
               f"{len(check.differing)} cases; {len(check.changed)} verdicts changed"), YELLOW
    versions = [f for f in check.facts if f.field in VERSION_FIELDS] if path is None else []
    if versions and check.differing:
        yield (f"  it was also recorded with {_facts(versions)}: the versions are as likely a cause as the kernels; "
               f"verdicts that moved: {', '.join(check.changed) or 'none'}"), YELLOW
    if check.within_rounding:
        yield (f"  verdicts changed by a margin {now.softmax_dtype} cannot resolve (decided by rounding, not by the "
               f"model): {', '.join(check.within_rounding)}"), YELLOW


def primers_text(change: PrimersChange) -> str:
    """A chapter read with other primers than its baseline entries: the cause of its differences, and what the
    comparison can and cannot conclude from them."""
    moved = f"verdicts that moved: {', '.join(change.changed) or 'none'}"
    return (f"  chapter {change.chapter}'s primers differ from the baseline's: recorded {change.recorded}; now "
            f"{change.now}. Its prompts are other texts, so its probabilities cannot be compared with the baseline's: "
            f"{len(change.differing)} of its cases differ ({moved}), which says nothing of the model or the kernels "
            "and is no bug; its pairs are still compared. Record the baseline again to compare it like with like")


# The library versions a header records (the backend's engine names its package's version).
VERSION_FIELDS = ("torch", "transformers", "engine")


def _facts(facts: list[FactChange]) -> str:
    return ", ".join(f"{f.field} {f.recorded or 'not recorded'} (now {f.now})" for f in facts)


def _same_kernels_line(check: Numerics, now: Header) -> Line:
    differ = f"{len(check.differing)} cases' probabilities differ from it ({', '.join(check.differing)})"
    moved = f"verdicts that moved: {', '.join(check.changed) or 'none'}"
    if check.facts:
        facts = _facts(check.facts)
        return (f"  numerics match the baseline's ({now.numerics}), but it was recorded with {facts}: that is the "
                f"likely cause, on a path the fingerprint does not probe; {differ}; {moved}"), YELLOW
    if check.unrecorded:
        return (f"  numerics match the baseline's ({now.numerics}), yet {differ}; its "
                f"{', '.join(check.unrecorded)} are not recorded, so they may be the cause; {moved}"), YELLOW
    return (f"  numerics match the baseline's ({now.numerics}), yet {len(check.differing)} cases' probabilities "
            f"differ from it: that is a bug, please report it: {', '.join(check.differing)}"), RED
