"""rewrite.py, pure: rewritings of a snippet that keep its meaning: a parenthesized last expression, an unrelated
line or import, strings shifted in the code and in the misreading alike, and renames of the names it binds (never
a class body's attributes)."""

from __future__ import annotations


def test_rewrites_that_fit_any_expression_parenthesize_it_and_add_an_import() -> None:
    from pytest_gotchas.cli.rewrite import rewrites

    found = {r.id: r.lines for r in rewrites(("0.1 + 0.2 == 0.3",), 12)}
    assert found == {"unrelated-line": ("_unrelated = 0", "0.1 + 0.2 == 0.3"),
                     "parenthesized": ("(0.1 + 0.2 == 0.3)",),
                     "unrelated-import": ("import math", "0.1 + 0.2 == 0.3")}
    # A last line that is not one expression (an assignment, a block) is not parenthesized.
    assert "parenthesized" not in {r.id for r in rewrites(("x = 1",), 12)}
    assert "parenthesized" not in {r.id for r in rewrites(("for i in []:", "    i", ""), 12)}


def test_word_strings_change_in_the_code_and_in_the_misreading_alike() -> None:
    from pytest_gotchas.cli.rewrite import change_strings

    rewrite = change_strings(("d = {'key': 1, '%d': 2}", 'd["key"]', "'a1'"))
    assert rewrite is not None and rewrite.id == "strings-shifted"
    assert rewrite.lines == ("d = {'lfz': 1, '%d': 2}", 'd["lfz"]', "'a1'")
    assert rewrite.text("{'key': 1, '%d': 2}") == "{'lfz': 1, '%d': 2}"
    assert change_strings(("'%s' % 3",)) is None


def test_class_body_names_are_attributes_and_never_renamed() -> None:
    from pytest_gotchas.cli.rewrite import bound_names

    names = bound_names(("class C:", "    n = 1", "    def f(self): pass", "", "c = C()", "c.n"))
    assert sorted(names) == ["C", "c", "self"]  # not n, not f: they are read as c.n and c.f
