"""authoring.py's snippets: what `gotchas new` reads as a snippet: one shell command, or REPL input lines (bare code or a pasted
transcript) typed as the REPL needs them."""

from __future__ import annotations

import pytest

from pytest_gotchas.cases.authoring import parse_snippet


@pytest.mark.parametrize("text, command", [
    ('python3.12 -c "print(1)"', 'python3.12 -c "print(1)"'),
    ('$ PYTHONHASHSEED=0 python -c "print(1)"', 'PYTHONHASHSEED=0 python -c "print(1)"'),
    ("python = 3", None),
    ("python3 + 1", None),
])
def test_shell_command_or_repl_input(text: str, command: str | None) -> None:
    parsed = parse_snippet(text + "\n", {})
    assert parsed.command == command
    assert (parsed.repl_lines is None) == (command is not None)


@pytest.mark.parametrize("lines, typed", [
    (["def f():", "    return 1", "f()"], ("def f():", "    return 1", "", "f()")),
    (["if 0:", "    x = 1", "else:", "    x = 2", "x"], ("if 0:", "    x = 1", "else:", "    x = 2", "", "x")),
    (["xs = [", "1,", "]", "xs"], ("xs = [", "1,", "]", "xs")),
    (["for i in range(2): print(i)"], ("for i in range(2): print(i)", "")),
    ([">>> def f():", "...     return 1", "...", ">>> f()", "1"], ("def f():", "    return 1", "", "f()")),
])
def test_snippet_lines_are_typed_as_the_repl_needs(lines: list[str], typed: tuple[str, ...]) -> None:
    assert parse_snippet("\n".join(lines) + "\n", {}).repl_lines == typed


def test_a_lead_in_is_typed_before_the_snippet() -> None:
    from pytest_gotchas.cases.authoring import with_lead_in

    led = with_lead_in(parse_snippet("round(2.5)\n"), "round(2.4)")
    assert led.repl_lines == ("round(2.4)", "round(2.5)")
    # a lead-in that leaves a block open gets the blank line that ends it, before the snippet's first line
    led = with_lead_in(parse_snippet("x = 1\n"), "for i in range(2):\n    print(i)")
    assert led.repl_lines == ("for i in range(2):", "    print(i)", "", "x = 1")
    assert led.session() == ">>> for i in range(2):\n>>>     print(i)\n>>> \n>>> x = 1\n█"


def test_a_lead_in_needs_repl_input_on_both_sides() -> None:
    from pytest_gotchas.cases.authoring import AuthoringError, with_lead_in

    with pytest.raises(AuthoringError) as error:
        with_lead_in(parse_snippet('python3.12 -c "print(1)"'), "print(0)")
    assert str(error.value) == ("--lead-in: a shell command has no REPL to type a lead-in into; print an output the "
                                "model can continue inside the command instead (as ch.10's shell cases print a list)")
    with pytest.raises(AuthoringError) as error:
        with_lead_in(parse_snippet("print(1)"), 'python3.12 -c "print(0)"')
    assert str(error.value) == "--lead-in: give REPL input (Python lines), not a shell command"
    with pytest.raises(AuthoringError) as error:
        with_lead_in(parse_snippet("print(1)"), "  \n")
    assert str(error.value) == "--lead-in is empty: give the REPL lines to type before the snippet"
