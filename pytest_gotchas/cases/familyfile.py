"""A chapter's `families:` section -> Family, validated with file:line as the rest of the chapter is (pure).

A family draws instances of one hand-written unit of its chapter (a pair, a twin or a case): its slots, the
transcript of each member as a template over them, and the slot values (`zero`) with which the templates give the
hand-written members back, so that the hand-written unit is instance zero of its family. cases/families.py draws the
instances; truth/instances.py cuts each one where its outputs part. docs/cases.md, "Families", is the format.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..results.vocabulary import FamilyKind, SlotKind
from . import transcript
from .slots import Expr, Text, LineError, Slot, SlotError, Template, expression, slot_from, template, written
from .transcript import TranscriptError
from .yamlfile import Map



class Case(Protocol):
    """What a family reads of a hand-written case (chapter.Case, which imports this module)."""

    @property
    def transcript(self) -> transcript.Transcript: ...

    @property
    def scored(self) -> bool: ...


class Pair(Protocol):
    """What a family reads of a hand-written pair or twin (chapter.Pair)."""

    @property
    def id(self) -> str: ...

    @property
    def members(self) -> tuple[str, str]: ...

FAMILY_KEYS = {"pair", "twin", "case", "seed", "slots", "where", "zero", "members", "misreading", "note"}
MEMBER_KEYS = {"transcript", "misreading"}


@dataclass(frozen=True)
class Member:
    """One program of a family's unit, as a template: its hand-written case, and how its wrong answer is found (the
    partner's output where none is stated)."""

    case: str
    template: Template
    misreading: Template | None
    line: int  # of the template in the file


@dataclass(frozen=True)
class Family:
    id: str
    kind: FamilyKind
    unit: str  # the hand-written pair, twin or case: instance zero
    seed: int
    slots: tuple[Slot, ...]
    where: tuple[Expr, ...]
    zero: tuple[tuple[str, Any], ...]  # slot name -> instance zero's value
    members: tuple[Member, ...]  # in the unit's order
    line: int
    note: str | None = None

    def zero_slots(self) -> dict[str, str]:
        """Instance zero's slot values as its transcripts show them."""
        return {name: written(value) for name, value in self.zero}


@dataclass(frozen=True)
class Draw:
    """What a drawn case carries until collection cuts it (truth/instances.py): its family and instance, and where
    its wrong answer comes from."""

    family: str
    kind: FamilyKind
    unit: str  # the drawn pair, twin or case id
    index: int
    slots: tuple[tuple[str, str], ...]  # as written into the transcript
    partner: str | None  # the other member's case id, whose output is this one's wrong answer (pair families)
    misreading: str | None  # the stated misreading, written out (twin and case families, or a member's own)
    zero: tuple[str, str]  # instance zero's (correct, wrong) for this member: a drawn cut keeps their kinds
    line: int  # the family's, which a message about the whole instance names
    problem: str | None = None  # why the draw is no transcript at all: refused at collection

    @property
    def shown(self) -> str:
        """The slot values as a message names them: "x='k', start='1030'"."""
        return ", ".join(f"{name}={value!r}" for name, value in self.slots)


@dataclass(frozen=True)
class Drawn:
    """One drawn instance of a family (index 1 on; instance zero is the hand-written unit)."""

    family: str
    index: int
    unit: str  # the drawn pair, twin or case id
    slots: tuple[tuple[str, str], ...]  # as written into the transcript
    cases: tuple[str, ...]  # its cases, in the unit's order


Fail = Callable[[int, str], Exception]


def families(raw: Any, line: int, cases: dict[str, Case], pairs: tuple[Pair, ...], twins: tuple[Pair, ...],
             fail: Fail, ids: re.Pattern[str]) -> tuple[Family, ...]:
    """The `families:` mapping (family id -> family) of a chapter whose cases, pairs and twins are read; `ids` is
    what an id may be (chapter.CASE_ID)."""
    if raw is None:
        return ()
    if not isinstance(raw, Map):
        raise fail(line, "`families` maps a family id to the family: the unit it draws, its slots and templates")
    found: list[Family] = []
    units: dict[str, str] = {}
    for family_id, body in raw.items():
        if not ids.fullmatch(str(family_id)):
            raise fail(raw.lines[family_id], f"family id {family_id!r} must be letters, digits, `-`, `_` and `.`")
        family = _Reader(str(family_id), raw.lines[family_id], cases, pairs, twins, fail).read(body)
        if family.unit in units:
            raise fail(family.line, f"family {family.id!r}: {family.kind} {family.unit!r} is already the unit of "
                                    f"family {units[family.unit]!r}")
        units[family.unit] = family.id
        found.append(family)
    return tuple(found)


class _Reader:
    def __init__(self, family_id: str, line: int, cases: dict[str, Case], pairs: tuple[Pair, ...],
                 twins: tuple[Pair, ...], fail: Fail) -> None:
        self.id, self.line, self.cases, self.pairs, self.twins, self._fail = family_id, line, cases, pairs, twins, fail

    def fail(self, line: int, message: str) -> Exception:
        return self._fail(line, f"family {self.id!r}: {message}")

    def read(self, body: Any) -> Family:
        if not isinstance(body, Map):
            raise self.fail(self.line, "a family is a mapping with `pair` (or `twin`, `case`), `slots`, `zero` and "
                                       "`members`")
        for key in body:
            if key not in FAMILY_KEYS:
                raise self.fail(body.lines[key], f"unknown family key {key!r} (allowed: "
                                                 f"{', '.join(sorted(FAMILY_KEYS))})")
        kind, unit, members = self._unit(body)
        seed = body.get("seed", 0)
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise self.fail(body.lines.get("seed", body.line), f"`seed` is a whole number, 0 or more, got {seed!r}")
        slots = self._slots(body)
        names = {slot.name for slot in slots}
        where = tuple(self._expression(body, text, names) for text in self._texts(body, "where"))
        zero = self._zero(body, slots)
        shared = self._template(body, "misreading", names, body) if "misreading" in body else None
        templates = body.get("members")
        if not isinstance(templates, Map) or sorted(map(str, templates)) != sorted(members):
            raise self.fail(body.lines.get("members", body.line), "`members` gives each case of the unit its "
                                                                  f"template: {', '.join(members)}")
        read = tuple(self._member(templates, case_id, names, shared) for case_id in members)
        note = body.get("note")
        if note is not None and not isinstance(note, str):
            raise self.fail(body.lines["note"], "`note` is a text")
        if kind != FamilyKind.PAIR and any(member.misreading is None for member in read):
            raise self.fail(body.line, f"a {kind} family states its `misreading`: the output a careless reader "
                                       "expects after the cursor (a pair's members take each other's output)")
        family = Family(self.id, kind, unit, seed, slots, where, zero, read, body.line, note)
        for member in read:
            self._gives_back(family, member)
        return family

    def _unit(self, body: Map) -> tuple[FamilyKind, str, tuple[str, ...]]:
        named = [kind for kind in FamilyKind if str(kind) in body]
        if len(named) != 1:
            raise self.fail(body.line, "a family names the one unit it draws: `pair: ID`, `twin: ID` or `case: ID`")
        kind = named[0]
        unit = str(body[str(kind)])
        line = body.lines[str(kind)]
        if kind == FamilyKind.CASE:
            if unit not in self.cases or not self.cases[unit].scored:
                raise self.fail(line, f"`case` names no scored case of the chapter: {unit!r}")
            return kind, unit, (unit,)
        group = next((p for p in (self.pairs if kind == FamilyKind.PAIR else self.twins) if p.id == unit), None)
        if group is None:
            raise self.fail(line, f"`{kind}` names no {kind} of the chapter: {unit!r}")
        return kind, unit, group.members

    def _slots(self, body: Map) -> tuple[Slot, ...]:
        raw = body.get("slots")
        if not isinstance(raw, Map) or not raw:
            raise self.fail(body.lines.get("slots", body.line), "`slots` maps each slot's name to what it draws")
        slots = []
        for name, spec in raw.items():
            try:
                slots.append(slot_from(str(name), spec))
            except SlotError as error:
                raise self.fail(raw.lines[name], str(error)) from None
        return tuple(slots)

    def _texts(self, body: Map, key: str) -> list[str]:
        value = body.get(key)
        texts = [] if value is None else [value] if isinstance(value, str) else value
        if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
            raise self.fail(body.lines[key], f"`{key}` is an expression or a list of expressions over the slots")
        return texts

    def _expression(self, body: Map, text: str, names: set[str]) -> Expr:
        try:
            return expression(text, names)
        except SlotError as error:
            raise self.fail(body.lines["where"], f"`where`: {error}") from None

    def _zero(self, body: Map, slots: tuple[Slot, ...]) -> tuple[tuple[str, Any], ...]:
        raw = body.get("zero")
        names = [slot.name for slot in slots]
        if not isinstance(raw, Map) or sorted(map(str, raw)) != sorted(names):
            raise self.fail(body.lines.get("zero", body.line), "`zero` gives every slot the value that writes the "
                                                               f"hand-written unit back (slots: {', '.join(names)})")
        values = []
        for slot in slots:
            try:
                given = raw.get(slot.name) if slot.kind in (SlotKind.INT, SlotKind.ITEMS, SlotKind.ORDER) else raw.text(
                    slot.name)  # a text as written: `3.10`, not 3.1
                values.append((slot.name, _zero_value(slot, given)))
            except SlotError as error:
                raise self.fail(raw.lines[slot.name], f"`zero`: {error}") from None
        return tuple(values)

    def _member(self, members: Map, case_id: str, names: set[str], shared: Template | None) -> Member:
        spec = members[case_id]
        if isinstance(spec, Map):
            for key in spec:
                if key not in MEMBER_KEYS:
                    raise self.fail(spec.lines[key], f"member {case_id!r}: unknown key {key!r} (allowed: "
                                                     f"{', '.join(sorted(MEMBER_KEYS))})")
            if "transcript" not in spec:
                raise self.fail(spec.line, f"member {case_id!r}: `transcript` is missing")
            own = self._template(spec, "misreading", names, spec) if "misreading" in spec else None
            return Member(case_id, self._template(spec, "transcript", names, spec), own or shared,
                          spec.value_lines["transcript"])
        return Member(case_id, self._template(members, case_id, names, members), shared, members.value_lines[case_id])

    def _template(self, holder: Map, key: str, names: set[str], lines: Map) -> Template:
        text = holder.get(key)
        if not isinstance(text, str):
            raise self.fail(lines.lines.get(key, lines.line), f"`{key}` is a text with `${{slot}}` placeholders")
        try:
            return template(text, names)
        except LineError as error:
            offset = error.line - 1 if holder.literal.get(key) else 0
            raise self.fail(holder.value_lines[key] + offset, str(error)) from None

    def _gives_back(self, family: Family, member: Member) -> None:
        """Written with `zero`, a member's template is its hand-written case's input, cut no later than the case."""
        case = self.cases[member.case]
        values = dict(family.zero)
        try:
            text = member.template.render(values)
            parsed = transcript.parse(text)
        except (SlotError, TranscriptError) as error:
            raise self.fail(member.line, f"member {member.case!r} written with `zero`: {error}") from None
        own = case.transcript
        if (parsed.repl_input, parsed.command) != (own.repl_input, own.command) or not own.prompt.startswith(
                parsed.prompt):
            raise self.fail(member.line, f"member {member.case!r}: written with `zero`, the template is not the "
                                         f"case's transcript up to a cursor at or before its cut:\n  template: "
                                         f"{parsed.prompt!r}\n  case:     {own.prompt!r}")


def _zero_value(slot: Slot, raw: object) -> Any:
    if slot.kind == SlotKind.INT:
        if not isinstance(raw, int) or isinstance(raw, bool):
            raise SlotError(f"{slot.name}: a whole number, got {raw!r}")
        return raw
    if slot.kind in (SlotKind.ITEMS, SlotKind.ORDER):
        if not isinstance(raw, list):
            raise SlotError(f"{slot.name}: a list, got {raw!r}")
        if slot.kind == SlotKind.ORDER:
            if sorted(map(str, raw)) != sorted(slot.pool):
                raise SlotError(f"{slot.name}: an order of {list(slot.pool)}, got {raw!r}")
            return [str(item) for item in raw]
        element = slot.element
        assert element is not None
        return [item if element.kind == SlotKind.INT else Text(str(item)) if element.kind == SlotKind.TEXT
                else str(item) for item in raw]
    if raw is None or isinstance(raw, (list, dict)):
        raise SlotError(f"{slot.name}: a value, got {raw!r}")
    return Text(str(raw)) if slot.kind == SlotKind.TEXT else str(raw)
