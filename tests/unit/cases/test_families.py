"""familyfile.py and families.py: a chapter's families read with file:line on every error, and drawn into
instances: seeded and the same on every draw, each slot's property kept, alike transcripts drawn once, and what a
report records of them."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.chapters import line_of
from helpers.families import FAMILY_CHAPTER

from pytest_gotchas.cases.chapter import CaseFileError, Chapter, load_chapter
from pytest_gotchas.cases.families import digest, draws, drawn, family_infos, keywords
from pytest_gotchas.results.vocabulary import FamilyKind


def chapter(tmp_path: Path, text: str = FAMILY_CHAPTER) -> Chapter:
    path = tmp_path / "fam.yaml"
    path.write_text(text, encoding="utf-8")
    return load_chapter(path, "fam.yaml")


def refused(tmp_path: Path, text: str) -> str:
    with pytest.raises(CaseFileError) as error:
        chapter(tmp_path, text)
    return str(error.value)


def test_a_family_is_read_with_its_unit_slots_and_members(tmp_path: Path) -> None:
    family = chapter(tmp_path).families[0]
    assert (family.id, family.kind, family.unit, family.seed) == ("list-vs-set", FamilyKind.PAIR, "list-vs-set", 0)
    assert [slot.name for slot in family.slots] == ["x", "n"]
    assert [member.case for member in family.members] == ["list-first", "set-first"]
    assert family.zero_slots() == {"x": "x", "n": "3"}


def test_the_same_draws_every_time_and_a_larger_n_begins_with_a_smaller_ones(tmp_path: Path) -> None:
    family = chapter(tmp_path).families[0]
    first, again = draws(family, 5), draws(family, 5)
    assert [d.texts for d in first] == [d.texts for d in again]
    assert [d.texts for d in draws(family, 12)][:5] == [d.texts for d in first]


def test_a_draw_keeps_every_slots_property(tmp_path: Path) -> None:
    text = FAMILY_CHAPTER.replace("      n: {int: [2, 9]}", "      n: {int: [2, 400]}\n      y: name").replace(
        "zero: {x: x, n: 3}", "zero: {x: x, n: 3, y: y}\n    where: \"n % 7 == 3\"")
    family = chapter(tmp_path, text).families[0]
    found = draws(family, 40)
    assert len(found) == 40
    for each in found:
        n, x, y = each.values["n"], each.values["x"], each.values["y"]
        assert 2 <= n <= 400 and n % 7 == 3
        assert x != y and x not in {"list", "reversed", "for", "in", "range", "set"}


def test_instances_alike_are_drawn_once_and_never_as_instance_zero(tmp_path: Path) -> None:
    # `unused` appears in no template: its values make no new transcript. n has 8 values, one of them instance zero.
    text = FAMILY_CHAPTER.replace("x: name", "x: {name: [x]}\n      unused: {int: [0, 50]}").replace(
        "zero: {x: x, n: 3}", "zero: {x: x, n: 3, unused: 0}")
    found = draws(chapter(tmp_path, text).families[0], 30)
    assert sorted(d.values["n"] for d in found) == [2, 4, 5, 6, 7, 8, 9]
    assert len({d.texts for d in found}) == len(found)


def test_drawn_instances_join_the_chapter_as_pairs_of_uncut_cases(tmp_path: Path) -> None:
    plain = chapter(tmp_path)
    full = drawn(plain, 3)
    assert full.cases[:2] == plain.cases and len(full.cases) == 8 and len(full.pairs) == 4
    pair = full.pairs[1]
    mark = pair.id.removeprefix("list-vs-set-")
    assert pair.members == (f"list-first-{mark}", f"set-first-{mark}") and len(mark) == 8
    case = full.cases[2]
    assert case.id == f"list-first-{mark}" and case.correct is None and case.note == plain.cases[0].note
    assert case.drawn is not None and case.drawn.partner == f"set-first-{mark}"
    assert case.transcript.prompt.endswith("\n[") and case.drawn.zero == ("2", "0")
    slots = dict(case.drawn.slots)
    assert mark == digest(plain.families[0], slots)
    assert case.transcript.prompt == f">>> list(reversed([{slots['x']} for {slots['x']} in range({slots['n']})]))\n["


def test_no_instance_is_drawn_by_default(tmp_path: Path) -> None:
    plain = chapter(tmp_path)
    assert drawn(plain, 0) is plain
    assert family_infos(plain) == {} and keywords(plain) == {}


def test_a_report_records_each_family_with_instance_zero_first(tmp_path: Path) -> None:
    full = drawn(chapter(tmp_path), 2)
    info = family_infos(full)["list-vs-set"]
    assert (info.kind, info.seed) == (FamilyKind.PAIR, 0)
    assert [(i.index, i.unit) for i in info.instances] == [(0, "list-vs-set"), (1, full.pairs[1].id),
                                                           (2, full.pairs[2].id)]
    assert info.instances[0].slots == {"x": "x", "n": "3"}
    assert keywords(full)["list-first"] == ("list-vs-set", "list-vs-set")
    assert keywords(full)[full.pairs[1].members[1]] == ("list-vs-set", full.pairs[1].id)


def test_another_seed_draws_other_instances(tmp_path: Path) -> None:
    family = chapter(tmp_path).families[0]
    other = chapter(tmp_path, FAMILY_CHAPTER.replace("    pair: list-vs-set", "    pair: list-vs-set\n    seed: 7"))
    assert [d.texts for d in draws(family, 5)] != [d.texts for d in draws(other.families[0], 5)]


@pytest.mark.parametrize(("old", "new", "line", "message"), [
    ("    zero: {x: x, n: 3}", "    zero: {x: x, n: 4}", ">>> list(reversed([${x}",
     "family 'list-vs-set': member 'list-first': written with `zero`, the template is not the case's transcript up "
     "to a cursor at or before its cut:\n  template: '>>> list(reversed([x for x in range(4)]))\\n['\n"
     "  case:     '>>> list(reversed([x for x in range(3)]))\\n['"),
    ("    zero: {x: x, n: 3}", "    zero: {x: x}", "    zero:",
     "family 'list-vs-set': `zero` gives every slot the value that writes the hand-written unit back (slots: x, n)"),
    ("    pair: list-vs-set", "    pair: nope", "    pair: nope",
     "family 'list-vs-set': `pair` names no pair of the chapter: 'nope'"),
    ("      n: {int: [2, 9]}", "      n: {int: [2, 9]}\n      m: {float: 1}", "      m: {float",
     "family 'list-vs-set': slot 'm' names one kind of name, int, text, items, order, statement, choice (with `size` "
     "and `distinct` for items); got float"),
    ("[${x} for ${x} in range(${n})]))\n        {█", "[${x} for ${x} in range(${k})]))\n        {█",
     "in range(${k})",
     "family 'list-vs-set': `k` names 'k', which is no slot of the family (slots: n, x)"),
    ("    zero: {x: x, n: 3}", "    zero: {x: x, n: 3}\n    colour: red", "    colour:",
     "family 'list-vs-set': unknown family key 'colour' (allowed: case, members, misreading, note, pair, seed, "
     "slots, twin, where, zero)"),
])
def test_a_family_that_cannot_be_drawn_is_refused_with_file_and_line(tmp_path: Path, old: str, new: str, line: str,
                                                                      message: str) -> None:
    assert old in FAMILY_CHAPTER
    text = FAMILY_CHAPTER.replace(old, new)
    assert refused(tmp_path, text) == f"fam.yaml:{line_of(text, line)}: {message}"


def test_a_twin_family_must_state_its_misreading(tmp_path: Path) -> None:
    text = FAMILY_CHAPTER.replace("pairs:\n  list-vs-set:", "twins:\n  list-vs-set:").replace(
        "    pair: list-vs-set", "    twin: list-vs-set").replace('    correct: "0"\n    wrong: "2"',
                                                                 '    correct: "2"\n    wrong: "0"')
    assert refused(tmp_path, text) == (
        f"fam.yaml:{line_of(text, '    twin: list-vs-set')}: family 'list-vs-set': a twin family states its "
        "`misreading`: the output a careless reader expects after the cursor (a pair's members take each other's "
        "output)")
