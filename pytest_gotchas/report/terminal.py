"""The terminal view of the results: one line per case under -v, and per-chapter tables in the summary."""

from __future__ import annotations

from typing import Iterator

from ..results import CRASH, SCORED, UNSCORED, CaseResult, RunResult
from ..rollup import ChapterRollup, rollup

Line = tuple[str, dict[str, bool]]
_PLAIN: dict[str, bool] = {}


def pct(p: float | None) -> str:
    return "-" if p is None else f"{p * 100:.2f}%"


def _numbers(run: RunResult) -> str:
    return (f"P(correct) {pct(run.p_correct)}  P(wrong) {pct(run.p_wrong)}  "
            f"coverage {pct(run.coverage)}  margin {pct(run.margin)}")


def cut_note(run: RunResult) -> str:
    """How the cut was tokenized, when it was not the plain reading; both readings are always shown."""
    if run.reading == "plain":
        return ""
    tokens = f"{'+'.join(map(repr, run.correct_tokens))} vs {'+'.join(map(repr, run.wrong_tokens))}"
    label = "healed cut" if run.reading == "healed" else "multi-token cut"
    plain = (f"; plain reading {pct(run.plain_p_correct)} / {pct(run.plain_p_wrong)} ({run.plain_verdict})"
             if run.plain_p_correct is not None else "")
    return f"{label}: {tokens}{plain}"


def verbose_word(result: CaseResult) -> str:
    """The word after the test id under -v: the verdict and every number behind it."""
    if len(result.runs) == 1:
        run = result.runs[0]
        note = cut_note(run)
        return f"{result.verdict}  {_numbers(run)}" + (f"  [{note}]" if note else "")
    runs = " | ".join(f"{r.primer}: {r.verdict} {pct(r.p_correct)}/{pct(r.p_wrong)}" for r in result.runs)
    return f"{result.verdict}  [{runs}]"


def summary_lines(results: list[CaseResult]) -> Iterator[Line]:
    chapters = rollup(results)
    for chapter in chapters:
        yield from _chapter(chapter)
    yield "", _PLAIN
    for chapter in chapters:
        yield chapter.line(), {"bold": True}
    yield from _softmax_line(results)


def _softmax_line(results: list[CaseResult]) -> Iterator[Line]:
    """Which verdicts the softmax dtype decides: the same logits were read through both."""
    scored = [r for r in results if r.status == SCORED and r.runs]
    compared = [r for r in scored if r.other_verdict is not None]
    if not compared:
        return
    used, other = scored[0].runs[0].softmax_dtype, compared[0].runs[0].other_softmax_dtype
    changed = [r for r in compared if r.other_verdict != r.verdict]
    detail = ", ".join(f"{r.chapter.name}/{r.id} {r.verdict} -> {r.other_verdict}" for r in changed)
    yield (f"softmax in {used}; in {other} {len(changed)} of {len(compared)} case verdicts would differ"
           + (f": {detail}" if detail else "")), _PLAIN


def _chapter(chapter: ChapterRollup) -> Iterator[Line]:
    yield "", _PLAIN
    yield chapter.info.label, {"bold": True}
    width = max(len(c.id) for c in chapter.cases)
    primed = any(len(c.runs) > 1 for c in chapter.cases)
    pwidth = max((len(r.primer or "") for c in chapter.cases for r in c.runs), default=0)
    head = f"  {'case':<{width}}  " + (f"{'primer':<{pwidth}}  " if primed else "")
    yield head + f"{'verdict':<9}  {'P(correct)':>10}  {'P(wrong)':>8}  {'coverage':>8}  {'margin':>7}  cut", _PLAIN
    for case in chapter.cases:
        if case.status != SCORED:
            yield from _unscored(case, width)
            continue
        rows = case.runs if primed else case.runs[:1]
        for n, run in enumerate(rows):
            name = case.id if n == 0 else ""
            primer = f"{run.primer or '':<{pwidth}}  " if primed else ""
            shown = run.verdict if primed else case.verdict
            yield (f"  {name:<{width}}  {primer}{shown:<9}  {pct(run.p_correct):>10}  {pct(run.p_wrong):>8}  "
                   f"{pct(run.coverage):>8}  {pct(run.margin):>7}  {cut_note(run)}").rstrip(), _PLAIN
        if primed:
            yield f"  {'':<{width}}  {'':<{pwidth}}  -> {case.verdict}", _markup(case.verdict)
    for pair in chapter.pairs:
        state = "not scored" if pair.passed is None else "pass" if pair.passed else "FAIL"
        members = ", ".join(f"{m} {v or '-'}" for m, v in zip(pair.members, pair.verdicts))
        yield f"  pair {pair.id}: {state} ({members})", _markup("ok" if pair.passed else "MISS")
    for twin in chapter.twins:
        state = "not scored" if twin.agree is None else "agree" if twin.agree else "DISAGREE"
        members = ", ".join(f"{m} {v or '-'}" for m, v in zip(twin.members, twin.verdicts))
        yield f"  written twice, {twin.id}: {state} ({members})", _PLAIN
    yield f"  {chapter.line()}", {"bold": True}


def _unscored(case: CaseResult, width: int) -> Iterator[Line]:
    first = (case.message or case.status).splitlines()[0]
    yield f"  {case.id:<{width}}  {case.status:<9}  {first}", _markup(case.status)
    if case.status == UNSCORED:
        for seed, text in case.outputs:
            last = [line for line in text.splitlines() if line.strip()][-1:]
            yield f"  {'':<{width}}  PYTHONHASHSEED={seed}: {''.join(last)}", _PLAIN
    elif case.message:
        for extra in case.message.splitlines()[1:]:
            yield f"  {'':<{width}}  {extra}", _PLAIN


def _markup(verdict: str | None) -> dict[str, bool]:
    if verdict == "ok":
        return {"green": True}
    if verdict in ("MISS", CRASH):
        return {"red": True}
    return {"yellow": True}
