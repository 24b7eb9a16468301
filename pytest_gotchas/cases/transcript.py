"""Parse a cursor-marked transcript into what must be executed and what the model will see.

A transcript is either a Python REPL session (doctest style: `>>> ` and `... ` lines are input, every other line
is output) or one shell command (`$ [NAME=value ...] python[3.X] args`, whose quoted arguments may span lines)
followed by its output. The cursor █ marks the cut: the text before it is the prompt.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

CURSOR = "\u2588"
PS1, PS2 = ">>> ", "... "
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON = re.compile(r"^python(?:3(?:\.(\d+))?)?$")


class TranscriptError(Exception):
    """A transcript that cannot be parsed; `line` is 1-based within the transcript text."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class ShellCommand:
    text: str  # as written after "$ ", possibly spanning lines
    env: tuple[tuple[str, str], ...]  # assignments written before the interpreter
    interpreter: str | None  # "3.12" for python3.12; None for a plain `python` / `python3`
    args: tuple[str, ...]  # arguments after the interpreter


@dataclass(frozen=True)
class Transcript:
    prompt: str  # the text before the cursor, normalised as Python prints it
    repl_input: tuple[str, ...] | None  # input lines of a REPL session
    command: ShellCommand | None  # the command of a shell transcript

    @property
    def kind(self) -> str:
        return "shell" if self.command else "repl"


def normalise_prompts(text: str) -> str:
    """A bare `>>>` or `...` line is what an editor leaves of the `>>> ` / `... ` that Python prints."""
    return "\n".join(PS1 if ln == ">>>" else PS2 if ln == "..." else ln for ln in text.split("\n"))


def parse(text: str) -> Transcript:
    count = text.count(CURSOR)
    if count != 1:
        # Point at the second cursor when there are several.
        line = text.count("\n", 0, text.find(CURSOR, text.find(CURSOR) + 1)) + 1 if count > 1 else 1
        raise TranscriptError(f"a transcript needs exactly one cursor {CURSOR} marking the cut; found {count}", line)
    before, after = text.split(CURSOR)
    if after.strip():
        line = before.count("\n") + 1
        raise TranscriptError(f"nothing may follow the cursor {CURSOR}; found {after.strip()[:40]!r}", line)
    prompt = normalise_prompts(before)
    if prompt.startswith("$ "):
        return Transcript(prompt=prompt, repl_input=None, command=_parse_shell(prompt))
    if not prompt.startswith(PS1):
        raise TranscriptError("a transcript starts with `>>> ` (a REPL session) or `$ ` (a shell command)")
    return Transcript(prompt=prompt, repl_input=_repl_input(prompt), command=None)


def _repl_input(prompt: str) -> tuple[str, ...]:
    lines = prompt.split("\n")
    # The last line is the one holding the cursor: only output may be cut, not input.
    cursor_line = lines[-1]
    if cursor_line.startswith((PS1, PS2)):
        raise TranscriptError(
            "the cursor is on an input line; cut inside what Python prints, not inside what is typed",
            len(lines),
        )
    return tuple(ln[len(PS1):] for ln in lines[:-1] if ln.startswith((PS1, PS2)))


def _parse_shell(prompt: str) -> ShellCommand:
    lines = prompt[2:].split("\n")
    for end in range(1, len(lines) + 1):
        text = "\n".join(lines[:end])
        try:
            words = shlex.split(text)
        except ValueError:  # an open quote: the command goes on on the next line
            continue
        if end == len(lines):
            raise TranscriptError("the cursor is inside the command; cut inside its output", end)
        return _shell_command(text, words)
    raise TranscriptError("the command's quotes are never closed before the cursor", 1)


def _shell_command(text: str, words: list[str]) -> ShellCommand:
    env = []
    while words and _ENV_ASSIGNMENT.match(words[0]):
        name, _, value = words.pop(0).partition("=")
        env.append((name, value))
    if not words:
        raise TranscriptError("the command names no program; expected `python` or `python3.X`")
    match = _PYTHON.match(words[0])
    if not match:
        raise TranscriptError(f"only Python commands can be executed; got {words[0]!r} (use python or python3.X)")
    interpreter = f"3.{match.group(1)}" if match.group(1) else None
    return ShellCommand(text=text, env=tuple(env), interpreter=interpreter, args=tuple(words[1:]))
