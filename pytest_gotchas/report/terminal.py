"""The terminal view: one line per case under -v, per-chapter tables in the summary, and the strict failure text.
Every line leaves here escaped (report/escape.py): titles, ids, reasons and outputs come from other people's files."""

from __future__ import annotations

from collections.abc import Iterator

from ..results import onepass
from ..results.hardware import slow_bfloat16
from ..results.layers import lead
from ..results.pairwise import differences
from ..results.patched import chapter_effects
from ..results.report import Report
from ..results.rollup import ChapterRollup
from ..results.schema import CaseResult, Run, Invocation
from ..results.verdict import OUTCOMES, Status, Verdict, colour
from .claims import claim_lines, log_ratio_lines
from .escape import escape
from .wording import (Line, backend_text, chapter_line, comparison_line, differences_text, lead_text, model_line,
                      one_pass_check_line, pct, slow_bfloat16_line)
from .wording_claims import SIGN_FLIP
from .wording_edges import direction_lines
from .wording_effects import effects_lines
from .wording_paths import stepped_line
from ..results.vocabulary import ReadingKind, ReadingName
from .wording_run import partial_run

_PLAIN: dict[str, bool] = {}
NEGLIGIBLE = 5e-4  # the text reading's unfollowed mass is named from 0.05% on


def markup(key: str | None) -> dict[str, bool]:
    return {colour(key): True}


def tokens(correct: list[str], wrong: list[str]) -> str:
    return f"{'+'.join(map(repr, correct))} vs {'+'.join(map(repr, wrong))}"


def _numbers(run: Run) -> str:
    return (f"P(correct) {pct(run.p_correct)}  P(wrong) {pct(run.p_wrong)}  "
            f"coverage {pct(run.coverage)}  margin {pct(run.margin)}")


def _other_reading(run: Run, name: str) -> str:
    other = run.readings[name]
    return f"{name} reading {pct(other.p_correct)} / {pct(other.p_wrong)} ({other.verdict})"


def cut_note(run: Run) -> str:
    """How the cut was read, beyond the numbers shown: a token reading that had to heal or chain (with the plain
    reading beside it), the other of the text and token readings when its verdict differs, and the mass the text
    reading did not follow when it is not negligible."""
    notes = []
    token = run.readings.get(ReadingName.TOKEN)
    if token is not None and token.kind != ReadingKind.PLAIN:
        label = "healed cut" if token.kind == ReadingKind.HEALED else "multi-token cut"
        plain = run.readings.get(ReadingName.PLAIN)
        shown = f"; plain reading {pct(plain.p_correct)} / {pct(plain.p_wrong)} ({plain.verdict})" if plain else ""
        notes.append(f"{label}: {tokens(token.correct_tokens, token.wrong_tokens)}{shown}")
    for name in (ReadingName.TEXT, ReadingName.TOKEN):
        if name != run.main and name in run.readings and run.readings[name].verdict != run.verdict:
            notes.append(_other_reading(run, name))
    if run.reading.neglected >= NEGLIGIBLE:
        notes.append(f"not followed: at most {pct(run.reading.neglected)}")
    return "; ".join(notes)


def variant_counts(result: CaseResult) -> str:
    """How many runs gave each verdict, over the case's transcript and its variants."""
    counts: dict[str, int] = {}
    for run in result.runs:
        counts[run.verdict] = counts.get(run.verdict, 0) + 1
    return ", ".join(f"{verdict} {n}" for verdict, n in sorted(counts.items(), key=lambda item: -item[1]))


def layer_note(run: Run) -> str:
    """--gotchas-layers: from which layer the final leader stays ahead, and whether the lead changed hands."""
    if not run.layers:
        return ""
    return lead_text(lead([(x.p_correct, x.p_wrong) for x in run.layers], run.layers[0].layer,
                          [x.under_floor for x in run.layers]))


def verbose_word(result: CaseResult) -> str:
    """The word after the test id under -v: the verdict and every number behind it."""
    return escape(_verbose_word(result))


def _verbose_word(result: CaseResult) -> str:
    if any(run.variant for run in result.runs):
        return f"{result.verdict}  [{variant_counts(result)} over {len(result.runs)} runs with variants]"
    if len(result.runs) == 1:
        run = result.runs[0]
        notes = "; ".join(n for n in (cut_note(run), layer_note(run)) if n)
        return f"{result.verdict}  {_numbers(run)}" + (f"  [{notes}]" if notes else "")
    runs = " | ".join(f"{r.primer}: {r.verdict} {pct(r.p_correct)}/{pct(r.p_wrong)}"
                      + (f" ({layer_note(r)})" if r.layers else "") for r in result.runs)
    return f"{result.verdict}  [{runs}]"


def status_of(result: CaseResult) -> tuple[str, str, str, str] | None:
    """How pytest reports a case's test (pytest_report_teststatus): its category, letter, word under -v and colour,
    as plain strings (under xdist they travel on the test report to the controller); None: pytest's own."""
    outcome = OUTCOMES.get(result.outcome)
    if outcome is None or outcome.category is None:
        return None
    return outcome.category, outcome.letter, verbose_word(result) if result.scored else outcome.word, outcome.colour


def summary_lines(report: Report, baseline: list[Line]) -> Iterator[Line]:
    """The summary, each line escaped: the chapter tables, the rollups and comparisons, then `baseline`'s lines."""
    for text, style in _summary_lines(report, baseline):
        yield escape(text), style


def _summary_lines(report: Report, baseline: list[Line]) -> Iterator[Line]:
    partial = partial_run(report.run)
    if partial is not None:  # first: every number below is of the items that ran
        yield partial, {"red": True, "bold": True}
    yield from _model_lines(report)
    slow = slow_bfloat16(report.model_infos)
    if slow is not None:
        yield slow_bfloat16_line(slow), {"yellow": True}
    several = len(report.model_ids) > 1
    if several:
        for name in dict.fromkeys(c.info.name for c in report.chapters):
            yield from _chapter_across(report, [c for c in report.chapters if c.info.name == name])
    else:
        for chapter in report.chapters:
            yield from _chapter(chapter)
    yield "", _PLAIN
    for chapter in report.chapters:
        yield (f"[{chapter.model}] " if several else "") + chapter_line(chapter, report.intervals(chapter),
                                                                      report.clustered(chapter)), {"bold": True}
    yield from _surface_lines(report)
    yield from claim_lines(report)
    yield from _comparison_lines(report)
    yield from log_ratio_lines(report)
    yield from _difference_lines(report)
    yield from _backend_lines(report)
    yield from _reading_line(report.results)
    yield from _softmax_line(report.results)
    yield from _one_pass_lines(report)
    if baseline:
        yield "", _PLAIN
        yield from baseline
    yield from isolation_lines(report.run)


def _model_lines(report: Report) -> Iterator[Line]:
    """First, the model the run scored (a user's own folder is otherwise named nowhere but in a baseline's path);
    several models name theirs on every line below."""
    if len(report.model_infos) != 1:
        return
    softmax = next((run.reading.softmax_dtype for r in report.results if r.scored for run in r.runs), None)
    yield model_line(report.model_infos[0], softmax), {"bold": True}


def isolation_lines(run: Invocation) -> Iterator[Line]:
    """Snippets that ran without confinement of files and network say so at the end of the summary, never silently
    (docs/isolation.md: "What a snippet can do")."""
    described = run.isolation or ""
    if described.startswith("weak"):
        yield f"snippets ran under {described}", {"yellow": True, "bold": True}


def _decided_by(results: list[CaseResult], name: str) -> tuple[list[CaseResult], list[CaseResult], str]:
    """(the cases read both ways, those whose verdict the other way changes, the changes as text)."""
    compared = [r for r in results if r.scored and name in r.reading_verdicts and r.runs[0].main in r.reading_verdicts]
    changed = [r for r in compared if r.reading_verdicts[name] != r.reading_verdicts[r.runs[0].main]]
    detail = ", ".join(f"{r.key} {r.reading_verdicts[r.runs[0].main]} -> {r.reading_verdicts[name]}" for r in changed)
    return compared, changed, f": {detail}" if detail else ""


def _reading_line(results: list[CaseResult]) -> Iterator[Line]:
    """Which verdicts the way of reading the cut decides: the text and token readings come from the same passes."""
    for name in (ReadingName.TEXT, ReadingName.TOKEN):
        compared, changed, detail = _decided_by(results, name)
        if compared and name != compared[0].runs[0].main:
            yield (f"read as {compared[0].runs[0].main}; by the {name} reading {len(changed)} of {len(compared)} "
                   f"case verdicts would differ{detail}"), _PLAIN


def _softmax_line(results: list[CaseResult]) -> Iterator[Line]:
    """Which verdicts the softmax dtype decides (the same logits were read through both), and which the precision of
    the whole computation decides (--gotchas-precision-check)."""
    compared, changed, detail = _decided_by(results, ReadingName.OTHER_SOFTMAX)
    if compared:
        used, other = (compared[0].runs[0].reading.softmax_dtype,
                       compared[0].runs[0].readings[ReadingName.OTHER_SOFTMAX].softmax_dtype)
        yield (f"softmax in {used}; in {other} {len(changed)} of {len(compared)} case verdicts would differ"
               f"{detail}"), _PLAIN
    checked = [r for r in results if r.scored and any(ReadingName.PRECISION in run.readings for run in r.runs)]
    if checked:
        dependent = [r for r in checked if Verdict.PRECISION_DEP in r.qualifiers]
        names = ", ".join(r.key for r in dependent)
        yield (f"precision check: computed in float32, {len(dependent)} of {len(checked)} case verdicts change "
               f"(precision-dep)" + (f": {names}" if names else "")), _PLAIN


def _one_pass_lines(report: Report) -> Iterator[Line]:
    """Readings from KV-cached steps are named; --gotchas-one-pass-check: the readings (and case verdicts) that
    separate full passes would give otherwise."""
    method = onepass.stepped(report.results, list(report.models.values()))
    if method is not None:
        yield stepped_line(method), _PLAIN
    checked = report.one_pass_check
    if checked is not None:
        yield one_pass_check_line(checked, len(report.model_ids) > 1), _PLAIN


def _chapter(chapter: ChapterRollup) -> Iterator[Line]:
    yield "", _PLAIN
    yield chapter.info.label, {"bold": True}
    width = max(len(c.id) for c in chapter.cases)
    primed = any(len(c.runs) > 1 for c in chapter.cases)
    pwidth = max((len(r.primer or "") for c in chapter.cases for r in c.runs), default=0)
    head = f"  {'case':<{width}}  " + (f"{'primer':<{pwidth}}  " if primed else "")
    # the cut column (how the cut was read, cut_note) is headed only where some run of the chapter has a note
    noted = any(cut_note(run) for case in chapter.cases if case.scored for run in case.runs if run.variant is None)
    yield head + f"{'verdict':<9}  {'P(correct)':>10}  {'P(wrong)':>8}  {'coverage':>8}  {'margin':>7}" + (
        "  cut" if noted else ""), _PLAIN
    for case in chapter.cases:
        if not case.scored:
            yield from _unscored(case, width)
            continue
        own = [run for run in case.runs if run.variant is None]
        rows = own if primed else own[:1]
        for n, run in enumerate(rows):
            name = case.id if n == 0 else ""
            primer = f"{run.primer or '':<{pwidth}}  " if primed else ""
            shown = run.verdict if primed else case.verdict
            yield (f"  {name:<{width}}  {primer}{shown:<9}  {pct(run.p_correct):>10}  {pct(run.p_wrong):>8}  "
                   f"{pct(run.coverage):>8}  {pct(run.margin):>7}  {cut_note(run)}").rstrip(), _PLAIN
        variants = [run for run in case.runs if run.variant is not None]
        if variants:
            listed = ", ".join(f"{run.label} {run.verdict}" for run in variants)
            yield f"  {'':<{width}}  variants: {listed}", _PLAIN
        if primed or variants:
            yield f"  {'':<{width}}  {'':<{pwidth}}  -> {case.verdict}", markup(case.verdict)
    for pair in chapter.pairs:
        state = "not scored" if pair.passed is None else "pass" if pair.passed else "FAIL"
        members = ", ".join(f"{m} {v or '-'}" for m, v in zip(pair.members, pair.verdicts))
        yield f"  pair {pair.id}: {state} ({members})", markup(Verdict.OK if pair.passed else Verdict.MISS)
        yield from ((f"    {line}", _PLAIN) for p in pair.patching for line in direction_lines(p))
    for twin in chapter.twins:
        state = "not scored" if twin.agree is None else "agree" if twin.agree else "DISAGREE"
        members = ", ".join(f"{m} {v or '-'}" for m, v in zip(twin.members, twin.verdicts))
        yield f"  written twice, {twin.id}: {state} ({members})", _PLAIN
        yield from ((f"    {line}", _PLAIN) for p in twin.patching for line in direction_lines(p))
    yield from ((f"  {line}", _PLAIN) for e in chapter_effects([chapter]) for line in effects_lines(e))
    yield f"  {chapter_line(chapter)}", {"bold": True}


def _chapter_across(report: Report, rollups: list[ChapterRollup]) -> Iterator[Line]:
    """One chapter under several models: a column per model with each case's verdict, then each model's pairs."""
    models = [r.model or "" for r in rollups]
    by_model = {r.model: {c.id: c for c in r.cases} for r in rollups}
    ids = list(dict.fromkeys(c.id for r in rollups for c in r.cases))
    width = max(len(i) for i in ids)
    widths = [max(len(m), 9) for m in models]
    yield "", _PLAIN
    yield rollups[0].info.label, {"bold": True}
    yield (f"  {'case':<{width}}  " + "  ".join(f"{m:<{w}}" for m, w in zip(models, widths))).rstrip(), _PLAIN
    for case_id in ids:
        cells = []
        for model, w in zip(models, widths):
            case = by_model.get(model, {}).get(case_id)
            cells.append(f"{(case.outcome if case else '-'):<{w}}")
        yield f"  {case_id:<{width}}  " + "  ".join(cells).rstrip(), _PLAIN
    for pair_id in rollups[0].info.pairs:
        states = []
        for rollup in rollups:
            pair = next((p for p in rollup.pairs if p.id == pair_id), None)
            state = "-" if pair is None or pair.passed is None else "pass" if pair.passed else "FAIL"
            states.append(f"{rollup.model} {state}")
        yield f"  pair {pair_id}: {', '.join(states)}", _PLAIN
        for rollup in rollups:
            pair = next((p for p in rollup.pairs if p.id == pair_id), None)
            yield from ((f"    {line}", _PLAIN) for p in (pair.patching if pair else [])
                        for line in direction_lines(p, rollup.model))
    for e in chapter_effects(rollups):
        yield from ((f"  [{e.model}] {line}", _PLAIN) for line in effects_lines(e))
    for rollup in rollups:
        yield f"  [{rollup.model}] {chapter_line(rollup)}", {"bold": True}


def _surface_lines(report: Report) -> Iterator[Line]:
    """Per chapter, the cases whose variants answered unlike the case (--gotchas-variants)."""
    for chapter in report.chapters:
        varied = [c for c in chapter.cases if any(run.variant for run in c.runs)]
        if not varied:
            continue
        surface = [c for c in varied if Verdict.SURFACE_DEP in c.qualifiers]
        model = f"[{chapter.model}] " if len(report.model_ids) > 1 else ""
        yield (f"{model}{chapter.info.label}: {len(surface)} of {len(varied)} cases with variants are surface-dep"
               + (": " + ", ".join(f"{c.id} ({variant_counts(c)})" for c in surface) if surface else "")), _PLAIN


def _comparison_lines(report: Report) -> Iterator[Line]:
    """Each two models, per chapter, on pairs and on case verdicts: counts, and a difference only where the exact
    McNemar test shows one."""
    comparisons = report.comparisons
    if not comparisons:
        return
    yield "", _PLAIN
    yield ("models compared per chapter (exact McNemar on the units one gets right and the other does not; a model "
           "is named ahead only where the Holm-adjusted p is below the level):"), _PLAIN
    if any(c.clustered for c in comparisons):
        yield f"  {SIGN_FLIP}", _PLAIN
    for c in comparisons:
        yield f"  {c.chapter}: {comparison_line(c)}", {"green": True} if c.shown else _PLAIN


def _difference_lines(report: Report) -> Iterator[Line]:
    """Each two models: the case verdicts and pair results that differ, named (and, for one model's weights read
    two ways, the largest |dP|)."""
    if len(report.model_ids) < 2:
        return
    by_weights: dict[str, list[str]] = {}
    for info in report.model_infos:
        by_weights.setdefault(info.weights_sha256, []).append(info.id)
    same = {(a, b) for ids in by_weights.values() for a in ids for b in ids if a != b}
    for found in differences(report.chapters, same, report.model_order):
        yield differences_text(found), _PLAIN


def _backend_lines(report: Report) -> Iterator[Line]:
    """A model read through vLLM says how, with its numerics fingerprint."""
    several = len(report.model_ids) > 1
    for info in report.model_infos:
        if info.backend is not None:
            yield ((f"[{info.id}] " if several else "") + backend_text(info.backend)
                   + f"; numerics {info.numerics}"), _PLAIN


def _unscored(case: CaseResult, width: int) -> Iterator[Line]:
    # Lines end at "\n" only: splitlines() would also break at "\r" and "\x1c", hiding them from the escaping.
    first = (case.message or case.status).split("\n")[0]
    yield f"  {case.id:<{width}}  {case.status:<9}  {first}", markup(case.status)
    if case.status == Status.UNSCORED:
        for output in case.outputs:
            last = [line for line in output.text.split("\n") if line.strip()][-1:]
            yield f"  {'':<{width}}  PYTHONHASHSEED={output.seed}: {''.join(last)}", _PLAIN
    elif case.message:
        for extra in case.message.split("\n")[1:]:
            yield f"  {'':<{width}}  {extra}", _PLAIN


def hook_failure_text(hook: str, plugin: str, error: str, where: str, subject: str, times: int) -> str:
    """A plugin's implementation of one of this plugin's hooks raised (plugin/newhooks.py): the run went on."""
    again = f", and {times - 1} more time{'s' if times > 2 else ''} after" if times > 1 else ""
    return (f"gotchas: {hook} of plugin {plugin} raised {error} at {where} (given {subject}{again}); every result "
            "was still recorded and the reports written, and the run fails: fix the plugin or remove it")
