"""Pairs from programs users bring, pure: the JSON Lines records `gotchas import` reads, and what two executed
programs make once their outputs are known: a pair cut where the outputs first part (each member's correct
candidate its own output there, its wrong one its partner's), a twin where they print the same and differ, nothing
where they are one program, or a refusal that says why, naming the record's line and id.

Executing the programs is truth/'s (cli/imports.py wires it as `gotchas new` does); cutting them is authoring.py's,
so that an imported case is cut exactly as `gotchas new` cuts one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum

from . import environment
from .authoring import AuthoringError, Snippet, cut, divergence, natural, parse_snippet
from .chapter import CASE_ID, VERSION

KEYS = ("id", "a", "b", "interpreter", "env", "note", "wrong")
REQUIRED = ("id", "a", "b")
MEMBERS = ("a", "b")  # a pair's or twin's cases are "<id>-a" and "<id>-b"
CONTEXT = 30  # characters of each output shown around a divergence


@dataclass(frozen=True)
class Refusal:
    """A record that makes no case, and why."""

    line: int
    record: str | None  # its id, when it has one
    reason: str


@dataclass(frozen=True)
class Record:
    """One line of the file, checked: two programs as `gotchas new` reads a snippet."""

    line: int
    id: str
    sources: tuple[str, str]
    snippets: tuple[Snippet, Snippet]
    interpreter: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    note: str | None = None
    wrong: str | None = None  # the misreading a twin (two programs that print the same) is cut at


def read_records(text: str, defaults: dict[str, str] | None = None) -> tuple[list[Record], list[Refusal]]:
    """Every non-blank line of a JSON Lines file as a record, or a refusal naming its line (and id, if it has one).
    `defaults`: environment variables every record's programs get unless the record sets them (--env)."""
    records, refused, seen = [], [], set()
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        found = _record(number, line, defaults or {})
        if isinstance(found, Refusal):
            refused.append(found)
        elif found.id in seen:
            refused.append(Refusal(number, found.id, f"the id {found.id!r} is taken by an earlier record"))
        else:
            seen.add(found.id)
            records.append(found)
    return records, refused


def _record(number: int, line: str, defaults: dict[str, str]) -> Record | Refusal:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as error:
        return Refusal(number, None, f"not JSON: {error.msg} at column {error.colno}")
    if not isinstance(data, dict):
        return Refusal(number, None, f"a record is a JSON object with keys {', '.join(REQUIRED)}; this line holds "
                                     f"a {type(data).__name__}")
    record_id = data.get("id") if isinstance(data.get("id"), str) else None
    problem = next(_problems(data), None)
    if problem is not None:
        return Refusal(number, record_id, problem)
    assert record_id is not None  # _problems checked it
    env = {**defaults, **data.get("env", {})}
    snippets = []
    for member in MEMBERS:
        try:
            snippets.append(parse_snippet(data[member], env))
        except AuthoringError as error:
            return Refusal(number, record_id, f"program {member!r}: {error}")
    return Record(number, record_id, (data["a"], data["b"]), (snippets[0], snippets[1]), data.get("interpreter"),
                  env, data.get("note"), data.get("wrong"))


def _problems(data: dict[str, object]) -> Iterator[str]:
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        yield f"missing key{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}"
    unknown = [k for k in data if k not in KEYS]
    if unknown:
        yield (f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} (a record has "
               f"{', '.join(KEYS)})")
    for key in ("id", "a", "b", "interpreter", "note", "wrong"):
        if key in data and not isinstance(data[key], str):
            yield f"{key!r} must be a string, not {type(data[key]).__name__}"
    record_id = data.get("id")
    if isinstance(record_id, str) and not CASE_ID.match(record_id):
        yield f"the id {record_id!r}: use letters, digits, `-`, `_` and `.`, starting with a letter or digit"
    interpreter = data.get("interpreter")
    if isinstance(interpreter, str) and not VERSION.match(interpreter):
        yield f"'interpreter' expects a version such as 3.12, got {interpreter!r}"
    env = data.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        yield "'env' must map names to strings, e.g. {\"PYTHONHASHSEED\": \"0\"}"
    else:
        yield from (refused for name in env if (refused := environment.message(name)) is not None)
    for member in MEMBERS:
        if isinstance(data.get(member), str) and not str(data[member]).strip():
            yield f"program {member!r} is empty"
    if data.get("wrong") == "":
        yield "'wrong' is empty: give the output a careless reader expects of both programs"


# -- what two executed programs make --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Member:
    """One program executed: its session as Python printed it, and where the output of its last line starts."""

    text: str
    start: int

    @property
    def output(self) -> str:
        return self.text[self.start:]


@dataclass(frozen=True)
class Cut:
    """One member of a pair or twin, cut: its prompt (its own session up to the cut) and its two candidates."""

    prompt: str
    correct: str
    wrong: str


class MadeKind(StrEnum):
    """What two executed programs make."""

    PAIR = "pair"  # outputs that part: each member cut where they do
    TWIN = "twin"  # the same output from programs that differ: both cut at the record's `wrong`
    SAME = "same"  # one program written twice: dropped


@dataclass(frozen=True)
class Made:
    """What a record makes: a pair (two cuts), a twin (two cuts at the same point), or nothing (`cuts` empty, one
    program written twice)."""

    kind: MadeKind
    cuts: tuple[Cut, ...] = ()


class NotCut(Exception):
    """Why two executed programs make no case."""


def make(record: Record, members: tuple[Member, Member]) -> Made:
    """The pair, twin or nothing two executed programs make; raises NotCut."""
    first, second = members
    a, b = first.output, second.output
    if a == b:
        if record.snippets[0] == record.snippets[1]:
            return Made(MadeKind.SAME)
        return _twin(record, members)
    at = divergence(a, b)
    if at in (len(a), len(b)):
        longer, shorter = ("a", "b") if at == len(b) else ("b", "a")
        raise NotCut(f"program {shorter!r} prints the start of what program {longer!r} prints ({_shown(a, b, at)}): "
                     "the two never print different text at one point")
    cuts = (Cut(first.text[:first.start + at], natural(a[at:]), natural(b[at:])),
            Cut(second.text[:second.start + at], natural(b[at:]), natural(a[at:])))
    return Made(MadeKind.PAIR, cuts)


def _twin(record: Record, members: tuple[Member, Member]) -> Made:
    output = members[0].output
    if record.wrong is None:
        raise NotCut(f"both programs print {_short(output)}: they make a twin, which is cut where a misreading "
                     "parts from that output; give it as the record's \"wrong\"")
    try:
        found = cut(output, record.wrong)
    except AuthoringError as error:
        raise NotCut(f"both programs print the same, a twin: {error}") from None
    wrong = record.wrong + "\n" if output.endswith("\n") and not record.wrong.endswith("\n") else record.wrong
    if found.correct == found.wrong or wrong == output:
        raise NotCut("the misreading is what both programs print")
    return Made(MadeKind.TWIN, tuple(Cut(m.text[:m.start + found.at], found.correct, found.wrong) for m in members))


def _short(text: str) -> str:
    return repr(text if len(text) <= 2 * CONTEXT else text[:2 * CONTEXT] + "...")


def _shown(a: str, b: str, at: int) -> str:
    start = max(0, at - CONTEXT)
    return f"a: {a[start:at + CONTEXT]!r}, b: {b[start:at + CONTEXT]!r}"


def unstable(texts: list[str], end: int) -> str | None:
    """Why a program's runs do not make one ground truth up to `end` (the end of its longer candidate after the
    cut), or None: what it prints past that decides nothing."""
    first = texts[0][:end]
    other = next((t[:end] for t in texts if t[:end] != first), None)
    if other is None:
        return None
    at = divergence(first, other)
    return (f"its output changes between runs: one run prints {first[at:at + CONTEXT]!r}, another "
            f"{other[at:at + CONTEXT]!r}, at character {at} of its session")
