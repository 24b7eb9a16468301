"""transcript.py: cursor-marked transcripts into what is executed and what the model sees."""

from __future__ import annotations

import pytest

from pytest_gotchas.cases.transcript import CURSOR, ShellCommand, TranscriptError, normalise_prompts, parse


def error_of(text: str) -> TranscriptError:
    with pytest.raises(TranscriptError) as info:
        parse(text)
    return info.value


# -- REPL sessions ------------------------------------------------------------------------------------------------


def test_repl_prompt_and_input() -> None:
    t = parse(">>> x = [1, 2]\n>>> x\n[1, █")
    assert t.kind == "repl"
    assert t.prompt == ">>> x = [1, 2]\n>>> x\n[1, "
    assert t.repl_input == ("x = [1, 2]", "x")
    assert t.command is None


def test_cursor_at_the_start_of_an_output_line() -> None:
    t = parse(">>> 1 == 1\n█")
    assert t.prompt == ">>> 1 == 1\n"
    assert t.repl_input == ("1 == 1",)


def test_output_lines_are_not_input() -> None:
    t = parse(">>> print('a')\na\n>>> print('b')\nb█")
    assert t.repl_input == ("print('a')", "print('b')")


def test_blank_line_ending_a_block_is_a_continuation_with_a_trailing_space() -> None:
    # Editors strip the trailing space of `... `; Python prints it, and the prompt must match what Python prints.
    t = parse(">>> for i in range(2):\n...     print(i)\n...\n0█")
    assert t.prompt == ">>> for i in range(2):\n...     print(i)\n... \n0"
    assert t.repl_input == ("for i in range(2):", "    print(i)", "")


def test_bare_prompt_lines_are_normalised() -> None:
    assert normalise_prompts(">>>\n...\n>>> x\n... y\n...x") == ">>> \n... \n>>> x\n... y\n...x"


def test_trailing_newline_after_the_cursor_is_allowed() -> None:
    assert parse(">>> 1\n█\n").prompt == ">>> 1\n"
    assert parse(">>> 1\n█  \n\n").prompt == ">>> 1\n"


def test_whitespace_before_the_cursor_is_kept() -> None:
    assert parse(">>> print(' x')\n █").prompt == ">>> print(' x')\n "


# -- cursor errors (line numbers are 1-based within the transcript) ----------------------------------------------


def test_missing_cursor() -> None:
    error = error_of(">>> 1 + 1\n2")
    assert str(error) == f"a transcript needs exactly one cursor {CURSOR} marking the cut; found 0"
    assert error.line == 1


def test_two_cursors_point_at_the_second() -> None:
    error = error_of(f">>> 1 +{CURSOR} 1\n\n{CURSOR}")
    assert str(error) == f"a transcript needs exactly one cursor {CURSOR} marking the cut; found 2"
    assert error.line == 3


def test_text_after_the_cursor() -> None:
    error = error_of(f">>> 1 + 1\n{CURSOR}2\n>>> 3")
    assert str(error) == f"nothing may follow the cursor {CURSOR}; found '2\\n>>> 3'"
    assert error.line == 2


def test_long_text_after_the_cursor_is_shortened() -> None:
    error = error_of(f">>> 1\n{CURSOR}" + "x" * 100)
    assert str(error) == f"nothing may follow the cursor {CURSOR}; found {'x' * 40!r}"


@pytest.mark.parametrize("text, line", [
    (f">>> x = 1\n>>> x +{CURSOR}", 2),
    (f">>> for i in []:\n...     pass{CURSOR}", 2),
    (f">>> {CURSOR}", 1),
    (f">>> 1\n1\n>>>{CURSOR}", 3),  # a bare `>>>` is a prompt too
])
def test_cursor_on_an_input_line(text: str, line: int) -> None:
    error = error_of(text)
    assert str(error) == "the cursor is on an input line; cut inside what Python prints, not inside what is typed"
    assert error.line == line


def test_neither_repl_nor_shell() -> None:
    error = error_of(f"print(1)\n{CURSOR}")
    assert str(error) == "a transcript starts with `>>> ` (a REPL session) or `$ ` (a shell command)"


# -- shell commands -----------------------------------------------------------------------------------------------


def test_shell_command_with_environment() -> None:
    t = parse(f'$ PYTHONHASHSEED=0 python -c "print(set([str(x) for x in range(5)]))"\n{{\'{CURSOR}')
    assert t.kind == "shell"
    assert t.repl_input is None
    assert t.prompt == "$ PYTHONHASHSEED=0 python -c \"print(set([str(x) for x in range(5)]))\"\n{'"
    assert t.command == ShellCommand(
        text='PYTHONHASHSEED=0 python -c "print(set([str(x) for x in range(5)]))"',
        env=(("PYTHONHASHSEED", "0"),), interpreter=None, args=("-c", "print(set([str(x) for x in range(5)]))"),
    )


@pytest.mark.parametrize("program, version", [("python", None), ("python3", None), ("python3.13", "3.13"),
                                              ("python3.9", "3.9")])
def test_shell_interpreter(program: str, version: str | None) -> None:
    assert parse(f"$ {program} -c 'print(1)'\n{CURSOR}").command.interpreter == version


def test_command_spanning_lines() -> None:
    text = '$ python3.11 -c "def f():\n    return 1\nprint(f())"\n' + CURSOR
    t = parse(text)
    assert t.command.text == 'python3.11 -c "def f():\n    return 1\nprint(f())"'
    assert t.command.args == ("-c", "def f():\n    return 1\nprint(f())")
    assert t.command.interpreter == "3.11"
    assert t.prompt == text[:-1]


def test_cursor_inside_the_command() -> None:
    error = error_of(f'$ python -c "print(1)"{CURSOR}')
    assert str(error) == "the cursor is inside the command; cut inside its output"
    assert error.line == 1


def test_unclosed_quote() -> None:
    error = error_of(f'$ python -c "print(1)\n{CURSOR}')
    assert str(error) == "the command's quotes are never closed before the cursor"


@pytest.mark.parametrize("command, program", [("ruby -e 'p 1'", "ruby"), ("FOO=1 node x.js", "node"),
                                              ("python2 -c 1", "python2"), ("pythonw x.py", "pythonw"),
                                              ("/usr/bin/python3 -c 1", "/usr/bin/python3")])
def test_only_python_commands(command: str, program: str) -> None:
    error = error_of(f"$ {command}\n{CURSOR}")
    assert str(error) == f"only Python commands can be executed; got {program!r} (use python or python3.X)"
    assert error.line == 1


def test_command_with_no_program() -> None:
    error = error_of(f"$ FOO=1\n{CURSOR}")
    assert str(error) == "the command names no program; expected `python` or `python3.X`"
