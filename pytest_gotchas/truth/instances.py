"""A family's drawn instances cut where their outputs part, once collection has executed them (pure over the runs).

A drawn member's transcript ends at its template's cursor: where the comparison starts. Its output from there is
compared with its wrong answer's text: the partner's output from the partner's cursor (a pair family), or the
stated misreading (a twin or case family, or a member that states its own). The cut is at the first character where
the two part, and each candidate runs from there to the end of its word or number, or is that one character
(cases/authoring.natural, the rule `gotchas new` cuts by). The text both print before it joins the prompt.

"First token" without a tokenizer: collection knows no model, so the cut is a character. The digits of a number
are single tokens for the embedded models (gemma-3-270m and SmolLM2 split digits), so a cut inside a number is a
token boundary; a cut inside a word is not, and the scorer reads such a cut as a chain of tokens and says so, as
for any case (scoring/cut.py). A drawn cut must part like instance zero's: each candidate starts with the same kind
of character (a digit, a letter, a space, other) as the hand-written member's, or the instance is refused, since its
outputs then part somewhere else than the family's trap.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..cases import transcript
from ..cases.authoring import AuthoringError, cut, divergence, natural
from ..cases.chapter import Case, Chapter
from ..cases.transcript import CURSOR, TranscriptError
from .check import check, show
from .execute import Execution

CONTEXT = 30  # characters shown on each side of where two outputs part


@dataclass(frozen=True)
class Executed:
    """A member's first prompt (primer and prelude included) and its runs."""

    prompt: str
    runs: tuple[Execution, ...]


@dataclass(frozen=True)
class Cut:
    shared: str  # what the member prints from its cursor up to the cut
    correct: str
    wrong: str


def kind_of(text: str) -> str:
    """The kind of character a candidate starts with."""
    first = text[:1]
    return "a digit" if first.isdigit() else "a letter" if first.isalpha() or first == "_" else (
        "a space" if first.isspace() else "another character")


def cut_unit(members: tuple[Case, ...], executed: dict[str, Executed]) -> dict[str, Cut] | str:
    """Each member of one drawn instance cut, or why the instance cannot be: one message for all its members
    (neither member alone is the pair), each of its lines naming the case it is about."""
    after: dict[str, str] = {}
    problems = []
    for case in members:
        problem = _after(case, executed[case.id])
        if isinstance(problem, tuple):
            after[case.id] = problem[0]
        else:
            problems.append(f"case {case.id!r}: {problem}")
    if problems:
        return "\n".join(problems)
    takes_partner = any(case.drawn is not None and case.drawn.partner for case in members)
    if takes_partner and _apart(*(after[case.id] for case in members)) is None:
        first, second = (after[case.id] for case in members)
        at = divergence(first, second)
        same = "print the same text" if first == second else "part only where one of them ends"
        return (f"{members[0].id!r} and {members[1].id!r} {same} after the cursor, so nothing is there to cut: "
                f"{_context(first, at)!r} against {_context(second, at)!r}")
    cuts: dict[str, Cut] = {}
    for case in members:
        draw = case.drawn
        assert draw is not None
        found = _cut(after[case.id], draw.misreading, after.get(draw.partner or ""))
        if isinstance(found, str):
            problems.append(f"case {case.id!r}: {found}")
            continue
        zero = tuple(kind_of(text) for text in draw.zero)
        drawn = (kind_of(found.correct), kind_of(found.wrong))
        if drawn != zero:
            problems.append(f"case {case.id!r}: its outputs part at "
                            f"{found.correct!r} against {found.wrong!r} ({drawn[0]} against {drawn[1]}), where "
                            f"instance zero's part at {draw.zero[0]!r} against {draw.zero[1]!r} ({zero[0]} against "
                            f"{zero[1]}): not the family's trap")
        cuts[case.id] = found
    return "\n".join(problems) if problems else cuts


def _after(case: Case, executed: Executed) -> tuple[str] | str:
    """What the member printed after its cursor, or why there is nothing to cut."""
    draw = case.drawn
    assert draw is not None
    if draw.problem:
        return draw.problem
    runs = executed.runs
    if any(run.error or run.timed_out or run.signal_name for run in runs):
        return check(executed.prompt, None, None, runs).message or "the snippet failed"
    text = runs[0].text
    if not text.startswith(executed.prompt):
        return "the template is not what Python printed\n" + show(executed.prompt, text,
                                                                  divergence(executed.prompt, text))
    return (text[len(executed.prompt):],)


def _apart(own: str, other: str) -> int | None:
    """Where two outputs part, or None where they do not (alike, or one the start of the other)."""
    at = divergence(own, other)
    return None if at == len(own) or at == len(other) else at


def _cut(own: str, misreading: str | None, other: str | None) -> Cut | str:
    if misreading is not None:
        try:
            point = cut(own, misreading, whole=False)
        except AuthoringError as error:
            return str(error)
        return Cut(own[:point.at], point.correct, point.wrong)
    assert other is not None
    at = _apart(own, other)
    assert at is not None  # cut_unit refused a pair whose outputs do not part
    return Cut(own[:at], natural(own[at:]), natural(other[at:]))


def _context(text: str, at: int) -> str:
    return text[max(0, at - CONTEXT):at + CONTEXT]


def cut_case(case: Case, found: Cut) -> Case | str:
    """The member with its prompt carried on to the cut, and its candidates (or why that is no transcript)."""
    try:
        parsed = transcript.parse(case.transcript.prompt + found.shared + CURSOR)
    except TranscriptError as error:
        return f"cut after {found.shared[-CONTEXT:]!r}, the transcript cannot be read: {error}"
    if parsed.repl_input != case.transcript.repl_input:
        return f"the outputs part after {found.shared[-CONTEXT:]!r}, which holds an input prompt: cut in the output"
    return replace(case, transcript=parsed, correct=found.correct, wrong=found.wrong)


def units(chapter: Chapter, selected: list[Case]) -> dict[str, tuple[Case, ...]]:
    """The drawn instances that `selected` cases belong to, each with all its members (a member left out by `-k` is
    executed too: its output is its partner's wrong answer)."""
    by_id = {case.id: case for case in chapter.cases}
    wanted = {case.drawn.unit for case in selected if case.drawn is not None}
    return {instance.unit: tuple(by_id[case_id] for case_id in instance.cases)
            for instance in chapter.instances if instance.unit in wanted}

