"""A snippet as `gotchas new` reads it: REPL input lines (bare code, or a pasted transcript) or one shell command,
turned into what collection would execute. Pure: no subprocess, no model."""

from __future__ import annotations

import codeop
import re
import shlex
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ..cases import transcript
from ..cases.transcript import CURSOR, PS1, PS2, TranscriptError
from .errors import CLIError

# `python3.12 -c ...` without `$ `: a command needs an option (a script file would not exist in the sandbox), which
# tells it from Python code such as `python = 3`.
_SHELL_START = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*python(?:3(?:\.\d+)?)?\s+-")


@dataclass(frozen=True)
class Snippet:
    repl_lines: tuple[str, ...] | None  # REPL: the input lines, as typed
    command: str | None  # shell: the command line (may span lines inside quotes), env assignments included
    ignored: int  # pasted output lines that were dropped (the output is executed, never taken from the paste)


def read_snippet(source: str, stdin: TextIO) -> str:
    if source == "-":
        if stdin.isatty():
            raise CLIError("no snippet: give a file holding it, or pipe it on stdin")
        return stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CLIError(f"cannot read the snippet {source}: {getattr(error, 'strerror', None) or error}") from None


def parse_snippet(text: str, env: dict[str, str]) -> Snippet:
    """REPL input lines (bare code, or `>>> `/`... ` lines of a pasted transcript) or one shell command line
    (`$ python3.12 -c "..."`, or the same without `$ `)."""
    text = text.replace("\r\n", "\n").rstrip("\n")
    if not text.strip():
        raise CLIError("the snippet is empty")
    first = text.lstrip("\n").split("\n", 1)[0]
    if first.startswith("$ ") or _SHELL_START.match(first):
        command = text.lstrip("\n")
        command = command[2:] if command.startswith("$ ") else command
        if env:
            command = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " " + command
        try:
            parsed = transcript.parse(f"$ {command}\n{CURSOR}")
        except TranscriptError as error:
            raise CLIError(f"the snippet is not a command collection can run: {error}") from None
        kept = parsed.command.text
        ignored = command[len(kept):].strip("\n").count("\n") + 1 if command[len(kept):].strip() else 0
        return Snippet(repl_lines=None, command=kept, ignored=ignored)
    lines = transcript.normalise_prompts(text).split("\n")
    if lines[0].startswith(PS1):
        # A pasted transcript: its `>>> `/`... ` lines are the input; its output is executed afresh.
        typed = [ln[len(PS1):] for ln in lines if ln.startswith((PS1, PS2))]
        ignored = len(lines) - len(typed)
    else:
        typed, ignored = _end_blocks(lines), 0
    while typed and not typed[-1].strip():
        typed.pop()
    if _left_open(typed):
        typed.append("")  # the blank line that ends a block at the REPL; without it the block never runs
    return Snippet(repl_lines=tuple(typed), command=None, ignored=ignored)


_CONTINUES_BLOCK = re.compile(r"^(?:else|elif|except|finally)\b")


def _compiles(lines: list[str]) -> bool | None:
    """As the REPL reads `lines`: True complete, None waiting for more, False a syntax error."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return codeop.compile_command("\n".join(lines), "<stdin>", "single") is not None or None
        except (SyntaxError, ValueError, OverflowError):
            return False


def _end_blocks(lines: list[str]) -> list[str]:
    """Bare source lines typed at the REPL: a blank line is added where a block ends (a line at column 0 after an
    indented block), because the REPL needs one there, as a source file does not."""
    typed: list[str] = []
    pending: list[str] = []
    for line in lines:
        if (pending and line.strip() and not line[0].isspace() and not _CONTINUES_BLOCK.match(line)
                and _compiles(pending + [""])):
            typed.append("")
            pending = []
        typed.append(line)
        pending.append(line)
        if _compiles(pending) is not None:
            pending = []
    return typed


def _left_open(lines: list[str]) -> bool:
    """Whether the REPL would still be waiting for more of a statement after the last line."""
    pending: list[str] = []
    for line in lines:
        pending.append(line)
        if _compiles(pending) is not None:
            pending = []
    return bool(pending)


# -- YAML text, written by hand so that a chapter file keeps its comments and layout --------------------------------
