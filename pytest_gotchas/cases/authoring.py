"""Writing a case, pure: a snippet as the tools read it, where its true output and a misreading first diverge, and
the Case and Chapter objects that result, built directly (no YAML round trip).

`gotchas new`, `gotchas vary` and the `gotchas` fixture of Python tests are thin over this module: they execute
(truth/) and score (scoring/), and take every decision about the cut from here, so the three cut alike.
"""

from __future__ import annotations

import codeop
import re
import shlex
import warnings
from dataclasses import dataclass
from pathlib import Path

from . import transcript
from .chapter import CASE_ID, Case, Chapter, Pair
from .transcript import CURSOR, PS1, PS2, ShellCommand, TranscriptError

_WORD = re.compile(r"\w+")
# `python3.12 -c ...` without `$ `: a command needs an option (a script file would not exist in the sandbox), which
# tells it from Python code such as `python = 3`.
_SHELL_START = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*python(?:3(?:\.\d+)?)?\s+-")
_CONTINUES_BLOCK = re.compile(r"^(?:else|elif|except|finally)\b")


class AuthoringError(Exception):
    """A snippet or misreading that cannot make a case; the message says why and what to give instead."""


# -- where two texts part -----------------------------------------------------------------------------------------


def divergence(a: str, b: str) -> int:
    """Where two texts first differ (the length of their common prefix)."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def natural(text: str) -> str:
    """A candidate from the divergence on: the rest of a word or number, or one other character."""
    match = _WORD.match(text)
    return match.group() if match else text[0]


def output_start(rendered: str, repl_input: tuple[str, ...] | None, command: ShellCommand | None) -> int:
    """Where the output of the last input line (or of the command) starts in a rendered session."""
    if command is not None:
        return len(f"$ {command.text}\n")
    pos = 0
    for line in repl_input or ():
        hits = []
        for prompt in (PS1, PS2):
            echo = prompt + line + "\n"
            at = rendered.find(echo, pos)
            while at > 0 and rendered[at - 1] != "\n":  # an echo starts a line
                at = rendered.find(echo, at + 1)
            if at != -1:
                hits.append((at, len(echo)))
        if not hits:
            raise ValueError(f"the REPL never read the input line {line!r}; is the snippet complete?")
        at, length = min(hits)
        pos = at + length
    return pos


@dataclass(frozen=True)
class CutPoint:
    """Where the output and the misreading part, and the two candidates there."""

    at: int  # characters of the output before the cut
    correct: str
    wrong: str


def cut(output: str, misreading: str, whole: bool = True) -> CutPoint:
    """The cut between `output` (what Python printed after the last input line) and `misreading`: the whole output a
    careless reader expects (a final newline is added where the output has one), or with `whole` false only its
    beginning (`gotchas vary` rewrites the case's output up to its cut)."""
    if misreading == "":
        raise AuthoringError("the misreading is empty: give the output a careless reader expects")
    ends = whole and output.endswith("\n") and not misreading.endswith("\n")
    wrong = misreading + "\n" if ends else misreading
    if output == wrong:
        raise AuthoringError(f"the misreading {misreading!r} is exactly what Python prints: it is not a misreading")
    if not output:
        raise AuthoringError("the snippet prints nothing after its last input line; end it with the code whose "
                             "output is misread")
    d = divergence(output, wrong)
    if d == len(wrong):
        raise AuthoringError(f"Python's output {output!r} goes on where the misreading {wrong!r} ends: they never "
                             "differ at one character; give the whole output a careless reader expects")
    if d == len(output):
        raise AuthoringError(f"the misreading {wrong!r} goes on where Python's output {output!r} ends: they never "
                             "differ at one character; give the whole output a careless reader expects")
    return CutPoint(d, natural(output[d:]), natural(wrong[d:]))


# -- snippets -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Snippet:
    repl_lines: tuple[str, ...] | None  # REPL: the input lines, as typed
    command: str | None  # shell: the command line (may span lines inside quotes), env assignments included
    ignored: int  # pasted output lines that were dropped (the output is executed, never taken from the paste)

    def session(self) -> str:
        """The snippet as a transcript cut right after its input, which collection executes."""
        if self.command is not None:
            return f"$ {self.command}\n{CURSOR}"
        assert self.repl_lines is not None
        return "".join(PS1 + line + "\n" for line in self.repl_lines) + CURSOR


def parse_snippet(text: str, env: dict[str, str] | None = None) -> Snippet:
    """REPL input lines (bare code, or `>>> `/`... ` lines of a pasted transcript) or one shell command line
    (`$ python3.12 -c "..."`, or the same without `$ `)."""
    text = text.replace("\r\n", "\n").rstrip("\n")
    if not text.strip():
        raise AuthoringError("the snippet is empty")
    first = text.lstrip("\n").split("\n", 1)[0]
    if first.startswith("$ ") or _SHELL_START.match(first):
        command = text.lstrip("\n")
        command = command[2:] if command.startswith("$ ") else command
        if env:
            command = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " " + command
        try:
            parsed = transcript.parse(f"$ {command}\n{CURSOR}")
        except TranscriptError as error:
            raise AuthoringError(f"the snippet is not a command collection can run: {error}") from None
        assert parsed.command is not None
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


def with_lead_in(snippet: Snippet, lead_in: str) -> Snippet:
    """The snippet after a lead-in: REPL lines typed first, in the same session, so that the transcript shows their
    output before the snippet's and the model has an output to continue at the cut (docs/cases.md, "A lead-in")."""
    if snippet.command is not None:
        raise AuthoringError("--lead-in: a shell command has no REPL to type a lead-in into; print an output the "
                             "model can continue inside the command instead (as ch.10's shell cases print a list)")
    if not lead_in.strip():
        raise AuthoringError("--lead-in is empty: give the REPL lines to type before the snippet")
    try:
        first = parse_snippet(lead_in)
    except AuthoringError as error:  # a command it could not read
        raise AuthoringError(f"--lead-in: {error}") from None
    if first.command is not None:
        raise AuthoringError("--lead-in: give REPL input (Python lines), not a shell command")
    assert first.repl_lines is not None and snippet.repl_lines is not None
    return Snippet(repl_lines=first.repl_lines + snippet.repl_lines, command=None,
                   ignored=first.ignored + snippet.ignored)


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


# -- cases and chapters, built directly ---------------------------------------------------------------------------


def candidate_problem(correct: str, wrong: str) -> str | None:
    """Why two candidates cannot be read at one cut, or None (the chapter loader says the same of a file's)."""
    if not correct or not wrong:
        return "`correct` and `wrong` must be non-empty texts"
    if correct[0] == wrong[0]:
        return f"`correct` {correct!r} and `wrong` {wrong!r} start alike; cut where they diverge"
    return None


def build_case(case_id: str, text: str, correct: str, wrong: str, *, interpreter: str = "3.11",
               env: dict[str, str] | None = None, note: str | None = None, line: int = 1) -> Case:
    """A scored case from a cursor-marked transcript, validated as the chapter loader validates one."""
    if not CASE_ID.fullmatch(case_id):
        raise AuthoringError(f"case id {case_id!r}: use letters, digits, `-`, `_` and `.`, starting with a letter "
                             "or digit")
    problem = candidate_problem(correct, wrong)
    if problem:
        raise AuthoringError(f"case {case_id!r}: {problem}")
    try:
        parsed = transcript.parse(text)
    except TranscriptError as error:
        raise AuthoringError(f"case {case_id!r}: {error}") from None
    own_env = dict(env or {})
    if parsed.command is not None:
        interpreter = parsed.command.interpreter or interpreter
        own_env = dict(parsed.command.env)
    return Case(id=case_id, line=line, transcript=parsed, correct=correct, wrong=wrong, unscored=None, note=note,
                interpreter=interpreter, env=tuple(sorted(own_env.items())))


def chapter_of(name: str, path: Path, cases: list[Case], pairs: dict[str, tuple[str, str]] | None = None,
               title: str | None = None) -> Chapter:
    """A chapter of cases built in Python (no primer, no prelude): what a Python test records into."""
    return Chapter(name=name, number=None, title=title or name, path=path, implementation_defined=False,
                   primers=(), prelude="", cases=tuple(cases),
                   pairs=tuple(Pair(pair_id, members, 1) for pair_id, members in (pairs or {}).items()), twins=())
