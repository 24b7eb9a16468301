"""partners.py: a case patches the pairs and twins it is the last member of in chapter order, with the other member
only where that one is selected for the same model and scored."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from pytest_gotchas.results.verdict import Status
from pytest_gotchas.truth.partners import Partner, partners

INFO = SimpleNamespace(pairs={"ab": ["a", "b"], "bc": ["b", "c"], "abc": ["a", "b", "c"]}, twins={"t": ["c", "a"]})
ORDER = {"a": 0, "b": 1, "c": 2}


def planned(case_id: str, status: str = Status.SCORED) -> Any:
    """What partners reads of a planned case: its id, its chapter's pairs and twins, and its status."""
    return SimpleNamespace(case=SimpleNamespace(id=case_id), info=INFO, status=status)


def test_the_last_member_patches_each_pair_and_twin_with_the_other_member() -> None:
    a, b, c = planned("a"), planned("b"), planned("c")
    selected = {"a": a, "b": b, "c": c}
    assert partners(a, ORDER, selected) == []  # the first member of each: the last one patches
    assert partners(b, ORDER, selected) == [Partner("ab", False, a)]
    assert partners(c, ORDER, selected) == [Partner("bc", False, b), Partner("t", True, a)]  # no group of three


def test_an_other_member_not_selected_or_not_scored_is_no_partner() -> None:
    b, c = planned("b"), planned("c")
    assert partners(b, ORDER, {"b": b}) == []  # -k left "a" out
    assert partners(c, ORDER, {"a": planned("a", Status.SKIPPED), "b": b, "c": c}) == [Partner("bc", False, b)]
