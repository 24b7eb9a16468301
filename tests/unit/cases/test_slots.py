"""slots.py: what each kind of slot draws, the expressions of templates and `where`, and templates written out."""

from __future__ import annotations

import itertools

import pytest

from pytest_gotchas.cases.slots import NAMES, LineError, SlotError, Text, expression, slot_from, template, written
from pytest_gotchas.results.vocabulary import SlotKind


def values(raw: object) -> list[object]:
    slot = slot_from("s", raw)
    return [slot.value(i) for i in range(slot.size())]


def test_an_int_slot_is_its_range_in_order() -> None:
    assert values({"int": [3, 6]}) == [3, 4, 5, 6]


def test_a_kind_alone_draws_from_its_default_pool() -> None:
    slot = slot_from("x", "name")
    assert slot.kind == SlotKind.NAME and slot.pool == NAMES


def test_items_are_every_arrangement_of_their_sizes_once() -> None:
    drawn = values({"items": {"int": [0, 3]}, "size": [1, 2]})
    expected = [list(p) for k in (1, 2) for p in itertools.permutations(range(4), k)]
    assert sorted(map(tuple, drawn)) == sorted(map(tuple, expected)) and len(drawn) == len(expected)


def test_items_with_repeats_are_every_sequence() -> None:
    drawn = values({"items": {"choice": ["a", "b"]}, "size": 2, "distinct": False})
    assert sorted(drawn) == [["a", "a"], ["a", "b"], ["b", "a"], ["b", "b"]]


def test_an_order_is_every_permutation_of_its_fragments() -> None:
    drawn = values({"order": ["a", "b", "c"]})
    assert sorted(map(tuple, drawn)) == sorted(itertools.permutations("abc"))


def test_a_text_is_written_as_its_literal_and_every_other_string_as_it_is() -> None:
    assert written(values({"text": ["it's"]})[0]) == '"it\'s"'
    assert written(values({"choice": ["a + b"]})[0]) == "a + b"
    assert written([1, Text("a"), "b"]) == "1, 'a', b"


@pytest.mark.parametrize(("raw", "message"), [
    ({"name": ["list"]}, "slot 's': 'list' is not a name a program may bind (an identifier, not a keyword or a "
                         "builtin)"),
    ({"int": [5, 1]}, "slot 's': `int` is a range [low, high] of two integers, low <= high"),
    ({"int": [1, 2], "text": ["a"]}, "slot 's' names one kind of name, int, text, items, order, statement, choice "
                                     "(with `size` and `distinct` for items); got int, text"),
    ({"items": {"int": [0, 1]}, "size": 3}, "slot 's': 3 distinct items from 2 values"),
    ({"choice": ["a\nb"]}, "slot 's': the value 'a\\nb' holds a line break or the cursor"),
    ("int", "slot 's': 'int' alone is not a slot; write `name`, `text` or `statement` (their default pools), or a "
            "mapping such as `{int: [1, 9]}`"),
])
def test_a_slot_that_cannot_be_drawn_says_why(raw: object, message: str) -> None:
    with pytest.raises(SlotError) as error:
        slot_from("s", raw)
    assert str(error.value) == message


def test_expressions_compute_over_the_slots() -> None:
    values = {"n": 7, "w": Text("apple"), "xs": [3, 1, 2]}
    assert expression("n // 2 + n % 2", set(values)).evaluate(values) == 4
    assert expression("w[:-1] if len(w) > 3 else w", set(values)).evaluate(values) == "appl"
    assert expression("max(xs) == xs[0] and not n < 0", set(values)).evaluate(values) is True
    assert expression("['a', 'b'][n % 2]", set(values)).evaluate(values) == "b"


@pytest.mark.parametrize(("text", "message"), [
    ("y + 1", "`y + 1` names 'y', which is no slot of the family (slots: n)"),
    ("n.bit_length()", "`n.bit_length()` may call only len, abs, min, max, sum, sorted, str, repr, int, list, "
                       "tuple, zip, reversed, with plain arguments"),
    ("open('x')", "`open('x')` may call only len, abs, min, max, sum, sorted, str, repr, int, list, tuple, zip, "
                  "reversed, with plain arguments"),
    ("[k for k in n]", "`[k for k in n]`: ListComp is not allowed in a family's expression"),
    ("n / 2", "`n / 2`: Div is not allowed in a family's expression"),
    ("n is 2", "`n is 2`: Compare is not allowed in a family's expression"),
    ("n +", "`n +` is not an expression: invalid syntax"),
])
def test_an_expression_may_only_compute(text: str, message: str) -> None:
    with pytest.raises(SlotError) as error:
        expression(text, {"n"})
    assert str(error.value) == message


def test_an_expression_cannot_make_a_huge_value() -> None:
    with pytest.raises(SlotError, match="larger than a family may compute"):
        expression("n ** 100", {"n"}).evaluate({"n": 10})
    with pytest.raises(SlotError, match="repeated more than 10000 times"):
        expression("'a' * n", {"n"}).evaluate({"n": 10 ** 6})


def test_a_template_writes_its_placeholders_and_leaves_the_rest() -> None:
    text = template(">>> d = {${repr(key)}: ${n}}\n$${not a placeholder} ${'}' + str(n)}", {"n", "key"})
    assert text.render({"n": 3, "key": "k"}) == ">>> d = {'k': 3}\n${not a placeholder} }3"


def test_an_empty_statement_leaves_its_line_out() -> None:
    text = template(">>> ${s}\n>>> 1 + 1\n█", {"s"})
    assert text.render({"s": ""}) == ">>> 1 + 1\n█"
    assert text.render({"s": "import math"}) == ">>> import math\n>>> 1 + 1\n█"


def test_a_template_knows_the_identifiers_it_writes_itself() -> None:
    text = template(">>> print(len(${x}))\n[█", {"x"})
    assert text.identifiers == {"print", "len"} and text.names == {"x"}


def test_a_template_error_names_its_line() -> None:
    with pytest.raises(LineError) as error:
        template(">>> 1\n>>> ${nope}\n█", {"n"})
    assert (error.value.line, str(error.value)) == (2, "`nope` names 'nope', which is no slot of the family (slots: n)")
    with pytest.raises(LineError) as error:
        template(">>> ${n", {"n"})
    assert str(error.value) == "a `${` is never closed by `}` on its line"
