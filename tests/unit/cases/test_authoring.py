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
