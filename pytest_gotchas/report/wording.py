"""The words, once: every sentence a view shows about a fact computed below (baselines, rollups, comparisons, layers).

The terminal, the page, `gotchas merge` and the items' failure texts all take their sentences from here, so one
fact reads the same wherever it is shown. A line is (text, markup): markup is pytest's terminal markup, which the
page maps to its own classes.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from ..model.kernels import FLOAT32_MATMUL
from ..results.consistency import Inconsistency
from ..results.baselines import (ANY_MODEL_FLAG, READ_FIELDS, UPDATE_FLAG, BaselineOutcome, Comparison, FactChange,
                                 Header, Numerics, PairChange, PrimersChange, Probability, Refusal, Regression,
                                 UpdateStats)
from ..results.hardware import PLAIN_KERNELS, SlowBfloat16
from ..results.layers import Lead, Stretch
from ..results.onepass import OnePassCheck, ReadingDifference
from ..results.pairwise import Differences, ModelComparison
from ..results.rollup import ChapterRollup
from ..results.schema import BackendInfo, ModelInfo
from ..results.stats import Interval
from .wording_claims import interval_text, p_text
from .wording_paths import text_path_text
from ..results.vocabulary import Leader

Line = tuple[str, dict[str, bool]]
RED: dict[str, bool] = {"red": True}
GREEN: dict[str, bool] = {"green": True}
YELLOW: dict[str, bool] = {"yellow": True}
UNSTYLED: dict[str, bool] = {}


def pct(p: float | None) -> str:
    return "-" if p is None else f"{p * 100:.2f}%"


def probabilities(p_correct: Probability, p_wrong: Probability) -> str:
    if isinstance(p_correct, dict) and isinstance(p_wrong, dict):
        return "  ".join(f"{name}: P(correct) {pct(p_correct[name])} P(wrong) {pct(p_wrong.get(name, math.nan))}"
                         for name in p_correct)
    assert not isinstance(p_correct, dict) and not isinstance(p_wrong, dict)
    return f"P(correct) {pct(p_correct)}  P(wrong) {pct(p_wrong)}"


# -- chapters, comparisons, layers --------------------------------------------------------------------------------


def chapter_line(rollup: ChapterRollup, intervals: tuple[Interval, Interval] | None = None) -> str:
    """"ch.2 sets: ...: 1/3 pairs (1 not scored); twins agree 0/2"; given the chapter's `intervals` (pairs passed,
    cases ok), each count with its interval: "2/6 pairs [9.7%, 70.0%]; 7/14 cases ok [...]"."""
    info = rollup.info
    if intervals is not None:
        pairs, cases = intervals
        text = f"{info.label}: " + (f"{interval_text(pairs, 'pairs')}; " if rollup.pairs else "no pairs; ")
        text += interval_text(cases, "cases ok")
    else:
        text = f"{info.label}: {rollup.passed}/{rollup.counted} pairs" if rollup.pairs else f"{info.label}: no pairs"
    incomplete = len(rollup.pairs) - rollup.counted
    if incomplete:
        text += f" ({incomplete} not scored)"
    if rollup.twins:
        text += f"; twins agree {rollup.agreeing}/{rollup.twins_counted}"
    return text


def comparison_outcome(c: ModelComparison) -> str:
    """What the exact McNemar test, corrected for the run's family, allows one to say."""
    return f"{c.ahead} ahead" if c.ahead else "no difference shown"


def comparison_line(c: ModelComparison) -> str:
    counts = (f"{c.unit}: {c.a} only {c.a_only}, {c.b} only {c.b_only}, both {c.both}, neither {c.neither}; "
              f"{p_text(c.p_value, c.p_adjusted)}")
    return f"{counts}: {comparison_outcome(c)}"


def differences_text(d: Differences) -> str:
    """Which case verdicts and pair results two models of a run answer differently, each named."""
    cases = ", ".join(f"{key} {va} -> {vb}" for key, va, vb in d.cases)
    pairs = ", ".join(f"{key} {'pass' if pa else 'FAIL'} -> {'pass' if pb else 'FAIL'}" for key, pa, pb in d.pairs)
    text = (f"{d.a} -> {d.b}: {len(d.cases)} of {d.cases_compared} case verdicts differ" + (f" ({cases})" if cases else "")
            + f"; {len(d.pairs)} of {d.pairs_compared} pairs" + (f" ({pairs})" if pairs else ""))
    if d.largest_dp is not None:
        text += f"; same weights, largest |dP| {d.largest_dp:.4f} ({d.largest_at})"
    return text


def backend_layout(backend: BackendInfo) -> str:
    return (f"tensor parallel {backend.tensor_parallel} x pipeline parallel {backend.pipeline_parallel}, executor "
            f"{backend.executor or 'default'}")


def batch_invariant_text(backend: BackendInfo) -> str:
    if backend.batch_invariant:
        return "on"
    return "off" + (f" ({backend.batch_invariant_note})" if backend.batch_invariant_note else "")


def backend_summary(backend: BackendInfo) -> str:
    """One line: the engine, its layout and its kernels' mode."""
    return (f"{backend.package} {backend.version} on {backend.platform}; {backend_layout(backend)}; "
            f"batch-invariant {batch_invariant_text(backend)}")


def backend_text(backend: BackendInfo) -> str:
    """How a model read through another backend than transformers was read, in one line."""
    logits = (f"logits computed in {backend.logits_dtype} by the engine, returned as float32 (exact), softmax in "
              "the model's dtype and in float32 by the plugin, as for transformers")
    if backend.logits_dtype == "float32":
        logits = ("logits returned in float32 that the model's dtype cannot hold: the model-dtype softmax rounds "
                  "them first")
    return (f"read through {backend_summary(backend)}; prefix caching {'on' if backend.prefix_caching else 'off'}; "
            f"{logits}")


def stretch_text(stretch: Stretch) -> str:
    who = "tied" if stretch.leader == Leader.TIE else f"{stretch.leader} ahead"
    where = f"layer {stretch.first}" if stretch.first == stretch.last else f"layers {stretch.first}-{stretch.last}"
    return f"{who} at {where}"


def lead_text(lead: Lead) -> str:
    """E.g. "decided at layer 12 of 18 (correct)", "correct ahead at layers 1-13, then wrong from layer 14 of 18"."""
    n = lead.last_layer
    if lead.decided_at is None:
        earlier = [stretch_text(s) for s in lead.stretches[:-1]]
        tied = f"tied after the last layer ({n})"
        return tied + (f"; before: {', '.join(earlier)}" if earlier else "")
    before = [s for s in lead.stretches if s.last < lead.decided_at]
    if not lead.changed_hands:
        main = f"decided at layer {lead.decided_at} of {n} ({lead.final})"
        return main + (f"; before: {', '.join(stretch_text(s) for s in before)}" if before else "")
    return f"{', '.join(stretch_text(s) for s in before)}, then {lead.final} from layer {lead.decided_at} of {n}"


# -- one pass per prompt ------------------------------------------------------------------------------------------


def _model(model: str | None, several: bool) -> str:
    return f"{model}:" if several and model else ""


def reading_difference_text(d: ReadingDifference, several_models: bool = False) -> str:
    """"demo/b[primer] token ok -> tie": the case, its run, the reading, and the verdict when it changes."""
    run = f"[{d.run}]" if d.run else ""
    a, b = d.one_pass.verdict, d.separate.verdict
    return f"{_model(d.model, several_models)}{d.case}{run} {d.reading}" + (f" {a} -> {b}" if a != b else "")


def one_pass_check_line(c: OnePassCheck, several_models: bool = False) -> str:
    """--gotchas-one-pass-check: the terminal summary's closing line."""
    by_name: dict[str, int] = {}
    for d in c.readings_differ:
        by_name[d.reading] = by_name.get(d.reading, 0) + 1
    names = ", ".join(f"{name} {n}" for name, n in by_name.items())
    listed = "; ".join(reading_difference_text(d, several_models) for d in c.readings_differ)
    verdicts = ", ".join(f"{_model(v.model, several_models)}{v.case} {v.one_pass} -> {v.separate}"
                         for v in c.case_verdicts_differ)
    return (f"one pass checked against separate full passes: {len(c.readings_differ)} of {c.readings} readings "
            f"differ" + (f" ({names}: {listed})" if c.readings_differ else "") + f"; {len(c.case_verdicts_differ)} "
            f"of {c.case_verdicts} case verdicts would differ" + (f": {verdicts}" if verdicts else ""))


# -- reports read back -------------------------------------------------------------------------------------------

SHOWN_INCONSISTENCIES = 5


def inconsistency_text(i: Inconsistency) -> str:
    model = f" of model {i.model!r}" if i.model is not None else ""
    numbers = f"{i.numbers} give" if i.numbers else "its numbers give"
    return f"{i.subject}{model}, {i.field}: the file says {i.stored}, {numbers} {i.computed}"


def inconsistent_text(source: str, found: list[Inconsistency]) -> str:
    """A report whose derived fields are not what its numbers give (results/consistency.py): refused, each named."""
    shown = "; ".join(inconsistency_text(i) for i in found[:SHOWN_INCONSISTENCIES])
    more = f"; and {len(found) - SHOWN_INCONSISTENCIES} more" if len(found) > SHOWN_INCONSISTENCIES else ""
    fields = "1 derived field is" if len(found) == 1 else f"{len(found)} derived fields are"
    return (f"{source} is inconsistent: {fields} not what its numbers give ({shown}{more}). A report's "
            "verdicts, pair results and rollups follow from its probabilities, so this one was edited or damaged and "
            "is not merged: write it again with the run that made it")


# -- baselines ----------------------------------------------------------------------------------------------------


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


def duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{math.ceil(seconds / 60)} min"


def progress_text(what: str, done: int, total: int, seconds: float, detail: str = "") -> str:
    """A terminal's progress line (plugin/progress.py): unit `done + 1` of `total` is under way, `seconds` after the
    first began; the time left is estimated from the units done so far."""
    text = what + (f" {min(done + 1, total)}/{total}" if total else "") + (f": {detail}" if detail else "")
    left = seconds / done * (total - done) if 0 < done < total else 0.0
    return text + (f", about {duration(left)} left" if left >= 0.5 else "")  # under a second: no estimate to give


def cache_folder_lost(folder: str, reason: str) -> str:
    """The plugin's cache folder cannot be made: the run goes on without it."""
    return (f"gotchas: the cache folder {folder} cannot be written ({reason}); this run executes every snippet and "
            "tokenizes every cut again")


def transcript_cache_lost(folder: str, reason: str) -> str:
    """The transcript cache was given up mid-run (truth/execute.py's CacheLost): what ran is used, nothing is kept."""
    return (f"gotchas: the transcript cache {folder} cannot be written ({reason}); this run executes every snippet "
            "afresh and keeps none of them")


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


def model_line(info: ModelInfo, softmax_dtype: str | None) -> str:
    """The summary's first line: which model the run scored, in which dtype, on which device (a user's own model is
    otherwise named only by a baseline's path)."""
    softmax = f", softmax {softmax_dtype}" if softmax_dtype else ""
    allowed = "; its tokenizer's round trip not enforced (allow-unfaithful-tokenizer)" if (
        info.allow_unfaithful_tokenizer) else ""
    return (f"model {info.name!r}: {info.dtype}{softmax}, {info.device} (weights sha256 {info.weights_sha256[:12]}..."
            f"){allowed}")


def slow_bfloat16_line(slow: SlowBfloat16) -> str:
    """The summary's line under the model's on a CPU without native bfloat16: what it costs and what to do instead, or, on the
    float32-matmul path, what that path gave up. The figures are bench/RESULTS.md's ("First runs and bfloat16")."""
    where = f"{', '.join(slow.models)}: bfloat16 on a CPU without native bfloat16 kernels ({slow.hardware})"
    if slow.kernels == FLOAT32_MATMUL:
        return (f"{where}, its matmuls computed in float32 (--gotchas-kernels {FLOAT32_MATMUL}): float32's speed, "
                "but not the bits of the plain bfloat16 kernels, so close verdicts can differ from a plain run's "
                "(1 of 199 over the library on an Intel Xeon; docs/determinism.md).")
    return (f"{where} is emulated, at a cost: a pass of the library's prompts took 1.5x float32's time on an Intel "
            "Xeon with AVX-512 but not AVX-512-BF16, and a pass of the spec's prompts 2.4x on an AVX2-only AMD "
            f"EPYC. Faster: --gotchas-kernels {FLOAT32_MATMUL} (float32 matmuls of the bfloat16 values: float32's "
            "speed, other last bits, so close verdicts can change), --gotchas-dtype float32 (other numbers, its own "
            "baseline file), or a GPU or a CPU with AVX-512-BF16 or AMX (docs/determinism.md).")
