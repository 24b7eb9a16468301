"""A chapter's families drawn into instances, pure: which slot values each draws, the drawn cases, pairs and twins
that join the chapter, and what a report records of each family (FamilyInfo).

Draws are seeded (the family's `seed` and its id) and use only `random.random()`, whose sequence Python keeps the
same across versions for a seed, so an instance is the same on every machine; the first N of a larger N's draws are
the draws of N. A family whose draws are few (at most ENUMERATE) takes them all in a shuffled order, so it stops
with every instance its slots admit; one with many draws them at random, up to ATTEMPTS tries per instance.
Instances whose transcripts are alike, or alike to instance zero's, are drawn once. A drawn instance is not yet cut:
collection executes its programs and cuts them where their outputs part (truth/instances.py).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from ..results.schema import FamilyInfo, Instance
from ..results.vocabulary import FamilyKind, SlotKind
from . import transcript
from .chapter import Case, Chapter, Pair
from .familyfile import Draw, Drawn, Family, Member
from .slots import SlotError, written
from .transcript import Transcript, TranscriptError

ENUMERATE = 50_000  # a family with at most this many combinations of slot values draws from all of them
ATTEMPTS = 100  # tries per instance asked, where the combinations are too many to enumerate
DIGEST = 8  # hex digits of an instance's digest in its ids


@dataclass(frozen=True)
class Rendered:
    """One combination of slot values, written out: the members' transcripts and misreadings (or why it cannot)."""

    values: dict[str, Any]
    texts: tuple[str, ...]  # each member's transcript
    misreadings: tuple[str | None, ...]
    problem: str | None


def draws(family: Family, n: int) -> list[Rendered]:
    """The first `n` distinct instances of a family, in draw order."""
    zero = _render(family, dict(family.zero))
    seen = {(zero.texts, zero.misreadings)}
    found: list[Rendered] = []
    for values in _combinations(family, n):
        if not _admitted(family, values):
            continue
        rendered = _render(family, values)
        key = (rendered.texts, rendered.misreadings)
        if rendered.problem is None and key in seen:
            continue
        seen.add(key)
        found.append(rendered)
        if len(found) == n:
            break
    return found


def _combinations(family: Family, n: int) -> Iterator[dict[str, Any]]:
    rng = random.Random(f"{family.id}:{family.seed}")  # a str seed: sha512 of it, the same in every version
    sizes = [slot.size() for slot in family.slots]
    total = 1
    for size in sizes:
        total *= size
    if total <= ENUMERATE:
        order = list(range(total))
        for i in range(total - 1, 0, -1):  # Fisher-Yates with random() alone
            j = int(rng.random() * (i + 1))
            order[i], order[j] = order[j], order[i]
        for number in order:
            indices = []
            for size in reversed(sizes):
                number, index = divmod(number, size)
                indices.append(index)
            yield _values(family, list(reversed(indices)))
        return
    for _ in range(ATTEMPTS * n):
        yield _values(family, [_below(rng, size) for size in sizes])


def _below(rng: random.Random, size: int) -> int:
    """A number in [0, size) from random() alone (53 bits a call, enough calls for the size)."""
    number, span = 0, 1
    while span < size << 20:
        number, span = number * (1 << 53) + int(rng.random() * (1 << 53)), span << 53
    return number % size


def _values(family: Family, indices: list[int]) -> dict[str, Any]:
    return {slot.name: slot.value(index) for slot, index in zip(family.slots, indices)}


def _admitted(family: Family, values: dict[str, Any]) -> bool:
    """Distinct names, none that the templates write themselves, and every `where` true (one that cannot be
    evaluated is the instance's refusal, not a silent skip: _render evaluates it again)."""
    names = [values[slot.name] for slot in family.slots if slot.kind == SlotKind.NAME]
    literal = set().union(*(m.template.identifiers for m in family.members))
    if len(set(names)) != len(names) or literal.intersection(names):
        return False
    try:
        return all(condition.evaluate(values) for condition in family.where)
    except SlotError:
        return True


def _render(family: Family, values: dict[str, Any]) -> Rendered:
    try:
        for condition in family.where:
            condition.evaluate(values)
        texts = tuple(member.template.render(values) for member in family.members)
        misreadings = tuple(m.misreading.render(values) if m.misreading else None for m in family.members)
        for text in texts:
            transcript.parse(text)
    except (SlotError, TranscriptError) as error:
        return Rendered(values, (), (), f"the slot values make no transcript: {error}")
    return Rendered(values, texts, misreadings, None)


def digest(family: Family, slots: dict[str, str]) -> str:
    """The instance's digest in its ids: of the family and its slot values, the same on every machine."""
    text = json.dumps([family.id, sorted(slots.items())], ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST]


def drawn(chapter: Chapter, n: int) -> Chapter:
    """The chapter with up to `n` instances of each family: their cases, pairs and twins after its own."""
    if n <= 0 or not chapter.families:
        return chapter
    by_id = {case.id: case for case in chapter.cases}
    taken = {*by_id, *(p.id for p in chapter.pairs), *(t.id for t in chapter.twins)}
    cases: list[Case] = []
    groups: dict[FamilyKind, list[Pair]] = {FamilyKind.PAIR: [], FamilyKind.TWIN: []}
    instances: list[Drawn] = []
    for family in chapter.families:
        index = 0
        for rendered in draws(family, n):
            slots = {slot.name: written(rendered.values[slot.name]) for slot in family.slots}
            mark = digest(family, slots)
            unit = f"{family.id}-{mark}"
            ids = tuple(f"{member.case}-{mark}" for member in family.members)
            if taken.intersection((unit, *ids)):
                continue  # an id the chapter already has: never two cases under one id
            taken.update((unit, *ids))
            index += 1
            made = [_case(family, member, by_id[member.case], rendered, position, index, unit, ids, slots)
                    for position, member in enumerate(family.members)]
            cases.extend(made)
            if family.kind != FamilyKind.CASE:
                groups[family.kind].append(Pair(unit, (ids[0], ids[1]), family.line))
            instances.append(Drawn(family.id, index, unit, tuple(slots.items()), ids))
    return replace(chapter, cases=chapter.cases + tuple(cases), pairs=chapter.pairs + tuple(groups[FamilyKind.PAIR]),
                   twins=chapter.twins + tuple(groups[FamilyKind.TWIN]), instances=tuple(instances))


def _case(family: Family, member: Member, own: Case, rendered: Rendered, position: int, index: int, unit: str,
          ids: tuple[str, ...], slots: dict[str, str]) -> Case:
    """A drawn member, uncut: its transcript ends at the template's cursor until collection cuts it."""
    partner = ids[1 - position] if family.kind == FamilyKind.PAIR and member.misreading is None else None
    text = rendered.texts[position] if rendered.problem is None else None
    parsed: Transcript = transcript.parse(text) if text is not None else own.transcript
    draw = Draw(family=family.id, kind=family.kind, unit=unit, index=index, slots=tuple(slots.items()),
                partner=partner, misreading=rendered.misreadings[position] if rendered.problem is None else None,
                zero=(own.correct or "", own.wrong or ""), line=family.line, problem=rendered.problem)
    return Case(id=ids[position], line=member.line, transcript=parsed, correct=None, wrong=None, unscored=None,
                note=own.note, interpreter=own.interpreter, env=own.env, drawn=draw)


def family_infos(chapter: Chapter) -> dict[str, FamilyInfo]:
    """What a report records of each family: empty where the run drew no instances."""
    if not chapter.instances:
        return {}
    infos = {family.id: FamilyInfo(kind=family.kind, seed=family.seed,
                                   instances=[Instance(unit=family.unit, slots=family.zero_slots(), index=0)])
             for family in chapter.families}
    for instance in chapter.instances:
        infos[instance.family].instances.append(Instance(unit=instance.unit, slots=dict(instance.slots),
                                                         index=instance.index))
    return infos


def keywords(chapter: Chapter) -> dict[str, tuple[str, ...]]:
    """The names `-k` matches a case by beyond its own id, where instances were drawn: its family's id, and the
    id of the instance (the drawn pair, twin or case) it belongs to."""
    if not chapter.instances:
        return {}
    found: dict[str, tuple[str, ...]] = {}
    for family in chapter.families:
        for member in family.members:
            found[member.case] = (*found.get(member.case, ()), family.id, family.unit)
    for instance in chapter.instances:
        for case_id in instance.cases:
            found[case_id] = (instance.family, instance.unit)
    return found
