"""The case-authoring command: `gotchas new` (or `python -m pytest_gotchas new`).

From a snippet, an interpreter and the misreading it executes the snippet exactly as collection does, shows the
transcript, proposes the cut where the true output and the misreading first diverge, optionally checks that cut
against a model's tokenizer and scores it, and prints (or appends to a chapter file) a case that collection accepts.

Every step is the plugin's own: transcript.parse and cases.load_chapter read what is written, the session executes
and checks it (GotchasSession.plan_chapter, the code behind collection) and scores it (GotchasSession.score, which
runs score.plan_cut and score.score_batch). Nothing is written unless the chapter that results collects.
"""

from __future__ import annotations

import argparse
import codeop
import json
import os
import re
import shlex
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import yaml

from . import transcript
from .cases import Case, CaseFileError, Chapter, load_chapter
from .execute import Request
from .groundtruth import check, divergence
from .interpreters import Missing, parse_mapping
from .options import DTYPES, Settings
from .results import CRASH, EXCLUDED, SCORED
from .session import GotchasError, GotchasSession, ModelUnavailable, Planned
from .transcript import CURSOR, PS1, PS2, TranscriptError

DEFAULT_ID = "new-case"
DEFAULT_PYTHON = "3.11"  # what cases.py gives a chapter that names no interpreter
PRINTED = "<new case>"  # where messages say a printed case is: line numbers count from its stand-in chapter
_VERSION = re.compile(r"^3\.\d+$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# `python3.12 -c ...` without `$ `: a command needs an option (a script file would not exist in the sandbox), which
# tells it from Python code such as `python = 3`.
_SHELL_START = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*python(?:3(?:\.\d+)?)?\s+-")
_CASES_KEY = re.compile(r"^cases\s*:\s*(?:#.*)?$")
_TOP_LEVEL = re.compile(r"^(?:[^\s#-]|---|\.\.\.)")
_WORD = re.compile(r"\w+")
PROG = "gotchas"

EXAMPLE = """\
examples:
  # print a case: the snippet on stdin, the misreading of what its last line prints
  printf 'fs = []\\nfor i in range(3):\\n    fs.append(lambda: i)\\n[f() for f in fs]\\n' \\
    | gotchas new --python 3.11 --wrong '[0, 1, 2]'

  # check the cut against the embedded model, then append the case to a chapter
  gotchas new snippet.py --wrong '[0, 1, 2]' --model default --to cases/my-chapter.yaml --id late-closure

  # a shell command names its interpreter and environment itself
  echo 'PYTHONHASHSEED=0 python3.12 -c "print({str(x) for x in range(5)})"' \\
    | gotchas new --wrong "{'0', '1', '2', '3', '4'}"
"""


class CLIError(Exception):
    """A user-facing failure: printed as one message, never a traceback; nothing is written."""


# -- the snippet ----------------------------------------------------------------------------------------------------


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


def _scalar(text: str) -> str:
    """A double-quoted YAML scalar that reads back as exactly `text`."""
    for ascii_only in (False, True):
        out = json.dumps(text, ensure_ascii=ascii_only)
        try:
            if yaml.safe_load(out) == text:
                return out
        except yaml.YAMLError:
            pass
    raise CLIError(f"cannot write {text!r} as YAML")


def _key(text: str) -> str:
    try:
        plain = yaml.safe_load(text) == text and ":" not in text and "#" not in text
    except yaml.YAMLError:
        plain = False
    return text if plain else _scalar(text)


def case_entry(indent: str, fields: list[tuple[str, object]]) -> str:
    """One `- id: ...` list item; the transcript as a `|-` block when that reads back exactly."""
    inner = indent + "  "
    out = []
    for n, (key, value) in enumerate(fields):
        lead = f"{indent}- " if n == 0 else inner
        if key == "transcript":
            out.append(_transcript_field(lead, inner, str(value)))
        elif key == "env":
            items = ", ".join(f"{_key(k)}: {_scalar(v)}" for k, v in value.items())  # type: ignore[union-attr]
            out.append(f"{lead}env: {{{items}}}")
        elif key == "id":
            out.append(f"{lead}id: {_key(str(value))}")
        else:
            out.append(f"{lead}{key}: {_scalar(str(value))}")
    return "\n".join(out) + "\n"


def _transcript_field(lead: str, inner: str, text: str) -> str:
    lines = text.split("\n")
    try:
        exact = yaml.safe_load("t: |-\n" + "\n".join("  " + ln if ln else "" for ln in lines)) == {"t": text}
    except yaml.YAMLError:
        exact = False
    if not exact:  # leading spaces, control characters ...: a quoted scalar is exact
        return f"{lead}transcript: {_scalar(text)}"
    return f"{lead}transcript: |-\n" + "\n".join(inner + "  " + ln if ln else "" for ln in lines)


def append_entry(text: str, fields: list[tuple[str, object]], where: str) -> str:
    """`text` with `entry` added as the last item of its top-level `cases:` list; nothing else changes."""
    lines = text.split("\n")
    start = next((i for i, ln in enumerate(lines) if _CASES_KEY.match(ln)), None)
    if start is None:
        raise CLIError(f"{where}: no top-level block list `cases:` to append to")
    end = next((i for i in range(start + 1, len(lines)) if _TOP_LEVEL.match(lines[i])), len(lines))
    item = next((re.match(r"^(\s*)- ", ln) for ln in lines[start + 1:end] if re.match(r"^\s*- ", ln)), None)
    indent = item.group(1) if item else "  "
    # Blank lines and column-0 comments just before the next top-level key belong to that key.
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
        end -= 1
    block = ["", *case_entry(indent, fields).rstrip("\n").split("\n")]
    if end == len(lines):
        block.append("")  # the file's final newline
    return "\n".join(lines[:end] + block + lines[end:])


def new_chapter_text(path: Path, title: str | None, python: str, fields: list[tuple[str, object]]) -> str:
    """A new chapter file: its name (and number) from the file name, `5-binding-time.yaml` -> ch.5 binding-time."""
    match = re.match(r"^(?:(\d+)-)?(.+)$", path.stem)
    number, name = match.group(1), match.group(2)
    if not _CASE_ID.match(name):
        raise CLIError(f"{path}: cannot name a new chapter after this file (use letters, digits, `-`, `_`)")
    header = [f"chapter: {name}"] + ([f"number: {int(number)}"] if number else [])
    header += [f"title: {_scalar(title or name)}", f"interpreter: {_scalar(python)}", "", "cases:"]
    return "\n".join(header) + "\n" + case_entry("  ", fields)


# -- the command ----------------------------------------------------------------------------------------------------


@dataclass
class Found:
    """The executed snippet, cut where the output and the misreading first diverge."""

    own_prompt: str  # the case's own transcript (after any primer/prelude) up to the cut
    correct: str
    wrong: str
    env: tuple[tuple[str, str], ...]  # the environment it ran under
    where: list[tuple[str, object]]  # the case's own `interpreter` / `env` keys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="pytest-gotchas tools. `gotchas new` writes a case: it executes a snippet, finds where its "
                    "true output and a misreading diverge, and prints or appends the case.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    new = commands.add_parser(
        "new", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLE,
        help="write a case from a snippet and its misreading",
        description="Execute a snippet exactly as `pytest --gotchas` collection does, print its transcript, cut it "
                    "where the true output and the misreading first diverge, and print a ready YAML case (or "
                    "append it to a chapter with --to). The case is written only if collection accepts it.\n\n"
                    "The snippet is REPL input (bare lines, or the >>> / ... lines of a pasted transcript) or one "
                    "shell command (python3.X -c \"...\", optionally after `$ `). The misreading is compared with "
                    "what Python prints after the last input line (or after the command).",
    )
    new.add_argument("snippet", nargs="?", default="-", help="file holding the snippet; - or nothing: stdin")
    new.add_argument("--wrong", required=True, metavar="TEXT",
                     help="the output a careless reader expects, e.g. the whole line '[0, 1, 2]'")
    new.add_argument("--python", metavar="VERSION",
                     help="interpreter, e.g. 3.12 (default: the chapter's, else 3.11; a python3.X command names its own)")
    new.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                     help="environment variable for the snippet, e.g. PYTHONHASHSEED=0 (repeatable)")
    new.add_argument("--model", metavar="NAME",
                     help="check the cut against this model's tokenizer and score it: a model folder, a .gguf file, "
                          "a hub id, or `default` for the embedded gemma-3-270m")
    new.add_argument("--to", metavar="CHAPTER.yaml",
                     help="append the case to this chapter file (created if missing) instead of printing it")
    new.add_argument("--id", metavar="ID", help=f"the case id (required with --to; default {DEFAULT_ID})")
    new.add_argument("--note", metavar="TEXT", help="a note stored with the case")
    new.add_argument("--title", metavar="TEXT", help="title of a chapter that --to creates")
    new.add_argument("--gotchas-python", action="append", default=[], metavar="VERSION=PATH",
                     help="the interpreter to use for python VERSION (repeatable)")
    new.add_argument("--runs", type=int, default=3, help="executions of the snippet; all must agree (default 3)")
    new.add_argument("--timeout", type=float, default=10.0, help="seconds one run may take (default 10)")
    new.add_argument("--dtype", default="bfloat16", choices=DTYPES, help="dtype the model runs in (default bfloat16)")
    new.add_argument("--softmax-dtype", choices=DTYPES, help="dtype of the softmax at the cut (default: the model's)")
    new.add_argument("--device", help="cpu, cuda or cuda:N (default: cuda when available)")
    new.add_argument("--top-k", type=int, default=5, help="alternatives shown at the cut (default 5)")
    new.add_argument("--cache-dir", metavar="DIR", help="where converted models are kept (default ~/.cache/pytest-gotchas)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command != "new":
        parser.print_help()
        return 2
    try:
        return run_new(args, sys.stdout)
    except CLIError as error:
        sys.stdout.flush()
        print(f"{PROG} new: error: {error}", file=sys.stderr)
        return 1


def _settings(args: argparse.Namespace) -> Settings:
    try:
        python = parse_mapping(args.gotchas_python)
    except ValueError as error:
        raise CLIError(str(error)) from None
    if args.runs < 2:
        raise CLIError(f"--runs must be at least 2, got {args.runs}")
    if args.timeout <= 0:
        raise CLIError(f"--timeout must be positive, got {args.timeout}")
    default_cache = Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "pytest-gotchas"
    return Settings(
        enabled=True, model=None if args.model in (None, "default") else args.model, dtype=args.dtype,
        device=args.device, softmax_dtype=args.softmax_dtype, top_k=args.top_k, batch_size=1, python=python,
        runs=args.runs, timeout=args.timeout,
        cache_dir=Path(args.cache_dir).expanduser() if args.cache_dir else default_cache,
    )


def _env(entries: list[str]) -> dict[str, str]:
    env = {}
    for entry in entries:
        name, sep, value = entry.partition("=")
        if not sep or not _ENV_NAME.match(name):
            raise CLIError(f"--env expects NAME=VALUE (e.g. PYTHONHASHSEED=0), got {entry!r}")
        env[name] = value
    return env


def run_new(args: argparse.Namespace, out: TextIO) -> int:
    if args.python is not None and not _VERSION.match(args.python):
        raise CLIError(f"--python expects a version such as 3.12, got {args.python!r}")
    if args.to and not args.id:
        raise CLIError("--to needs --id, the new case's id")
    case_id = args.id or DEFAULT_ID
    if not _CASE_ID.match(case_id):
        raise CLIError(f"--id {case_id!r}: use letters, digits, `-`, `_` and `.`, starting with a letter or digit")
    if args.wrong == "":
        raise CLIError("--wrong is empty: give the output a careless reader expects")
    env = _env(args.env)
    settings = _settings(args)
    snippet = parse_snippet(read_snippet(args.snippet, sys.stdin), env)
    target = Path(args.to) if args.to else None
    if target is not None and target.exists() and not target.is_file():
        raise CLIError(f"--to {target}: not a file")
    base = target.read_text(encoding="utf-8") if target is not None and target.exists() else None
    if target is not None and base is None and not target.parent.is_dir():
        raise CLIError(f"--to {target}: the folder {target.parent} does not exist")
    display = str(target) if target is not None else PRINTED

    with tempfile.TemporaryDirectory(prefix="gotchas-new-") as tmp:
        session = GotchasSession(settings, Path(tmp) / "transcripts")
        if snippet.ignored:
            print(f"(ignoring {snippet.ignored} pasted output line(s): the output is executed, not copied)", file=out)
        found = _execute(session, snippet, args, env, base, target, Path(tmp), display, out)
        fields = _fields(case_id, found, args.note)
        result_text = _chapter_text(base, target, args.title, args.python, fields, display)
        staged = _writing(target, lambda: _stage(result_text, target, Path(tmp)))
        try:
            nothing = "nothing was written" if target is not None else "no case was printed"
            planned = _collects(session, staged, display, case_id, found.env, nothing)
            if args.model is not None:
                _score(session, planned, out, nothing)
            if target is None:
                print("\n# the case, ready to paste under `cases:` in a chapter file", file=out)
                out.write(case_entry("  ", fields))
            else:
                _writing(target, lambda: _install(staged, target))
                staged = None
                print(f"\nwrote case {case_id!r} to {target}:{planned.case.line}", file=out)
        finally:
            if staged is not None and staged.exists():
                staged.unlink()
    return 0


def _chapter_text(base: str | None, target: Path | None, title: str | None, python: str | None,
                  fields: list[tuple[str, object]], display: str) -> str:
    if base is not None:
        return append_entry(base, fields, display)
    if target is not None:
        return new_chapter_text(target, title, python or DEFAULT_PYTHON, fields)
    # Printing only: a stand-in chapter with no defaults of its own, which is what the printed case assumes.
    return "chapter: new\ntitle: new\ncases:\n" + case_entry("  ", fields)


def _writing(target: Path | None, write):
    try:
        return write()
    except OSError as error:
        raise CLIError(f"cannot write {target}: {error.strerror or error}") from None


def _stage(text: str, target: Path | None, tmp: Path) -> Path:
    """The chapter as it would be, in a file collection never picks up (not .yaml), beside the target."""
    folder = target.parent if target is not None else tmp
    fd, name = tempfile.mkstemp(prefix=f".{target.name if target else 'case'}.", suffix=".gotchas-new", dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as stream:
        stream.write(text)
    return Path(name)


def _install(staged: Path, target: Path) -> None:
    if target.exists():
        os.chmod(staged, target.stat().st_mode & 0o7777)
    else:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(staged, 0o666 & ~umask)
    os.replace(staged, target)


def _placeholder(snippet: Snippet, case_id: str, where: list[tuple[str, object]]) -> list[tuple[str, object]]:
    """An unscored case holding just the snippet: loading it tells how collection frames and runs it."""
    if snippet.command is not None:
        text = f"$ {snippet.command}\n{CURSOR}"
    else:
        text = "".join(PS1 + line + "\n" for line in snippet.repl_lines) + CURSOR
    fields: list[tuple[str, object]] = [("id", case_id), ("transcript", text), ("unscored", "placeholder")]
    return fields + where


def _where(snippet: Snippet, python: str | None, env: dict[str, str], chapter_python: str | None,
           chapter_env: dict[str, str]) -> list[tuple[str, object]]:
    """The `interpreter` and `env` keys the case needs beyond its chapter's defaults (None: always write them).
    A shell case carries both on its command line."""
    fields: list[tuple[str, object]] = []
    if snippet.command is not None:
        named = transcript.parse(f"$ {snippet.command}\n{CURSOR}").command.interpreter
        if named is not None and python is not None and named != python:
            raise CLIError(f"the command runs python{named} but --python says {python}; drop one of them")
        if named is None and python is not None and python != chapter_python:
            fields.append(("interpreter", python))
        return fields
    if python is not None and python != chapter_python:
        fields.append(("interpreter", python))
    own_env = {k: v for k, v in env.items() if chapter_env.get(k) != v}
    if own_env:
        fields.append(("env", own_env))
    return fields


def _execute(session: GotchasSession, snippet: Snippet, args: argparse.Namespace, env: dict[str, str],
             base: str | None, target: Path | None, tmp: Path, display: str, out: TextIO) -> Found:
    case_id = args.id or DEFAULT_ID
    # Loaded once without keys of its own, the case shows the chapter's defaults; then with the keys it needs.
    chapter, case = _load_placeholder(snippet, case_id, [], base, target, args, tmp, display)
    if display == PRINTED:  # a printed case may be pasted anywhere: it names what it was run with
        where = _where(snippet, args.python, env, None, {})
    else:
        where = _where(snippet, args.python, env, case.interpreter, dict(case.env))
    if where:
        chapter, case = _load_placeholder(snippet, case_id, where, base, target, args, tmp, display)
    found = session.finder.find(case.interpreter)
    if isinstance(found, Missing):
        raise CLIError(found.reason(ini=False))
    prompt = chapter.prompts(case)[0]
    command = prompt.transcript.command
    request = Request(interpreter=found, repl_input=prompt.transcript.repl_input,
                      args=command.args if command else None, shell_text=command.text if command else None,
                      env=case.env)
    runs = session.cache.get_or_execute(request, session.settings.runs, session.limits)
    text = runs[0].text
    frame = len(prompt.transcript.prompt) - len(case.transcript.prompt)
    own = text[frame:]
    env_shown = " ".join(f"{k}={v}" for k, v in case.env) or "no variables set"
    framing = _framing(chapter, prompt.primer)
    print(f"python {found.version} ({found.path}); {env_shown}; {len(runs)} run(s){framing}", file=out)
    print(own if own.endswith("\n") else own + "\n", end="", file=out)
    problem = check("", None, None, runs)
    if problem.status in ("crash", "timeout"):
        limit = f" within --timeout {session.limits.timeout:g}s" if problem.status == "timeout" else ""
        raise CLIError(f"{problem.message}; a case must run to completion under python {found.version}{limit}")
    if not text.startswith(prompt.transcript.prompt[:frame]):
        raise CLIError(f"the chapter's primer/prelude does not print what {display} shows")
    start = frame + _output_start(own, case, snippet)
    output = text[start:]
    wrong = args.wrong
    if output.endswith("\n") and not wrong.endswith("\n"):
        wrong += "\n"  # the whole expected output, as Python would end it
    d = divergence(output, wrong)
    if output == wrong:
        raise CLIError(f"the misreading {args.wrong!r} is exactly what Python prints: it is not a misreading")
    if not output:
        raise CLIError("the snippet prints nothing after its last input line; end it with the code whose output "
                       "is misread")
    if d == len(wrong):
        raise CLIError(f"Python's output {output!r} goes on where the misreading {wrong!r} ends: they never differ "
                       "at one character; give --wrong the whole output a careless reader expects")
    if d == len(output):
        raise CLIError(f"the misreading {wrong!r} goes on where Python's output {output!r} ends: they never differ "
                       "at one character; give --wrong the whole output a careless reader expects")
    correct_token, wrong_token = _natural(output[d:]), _natural(wrong[d:])
    own_prompt = text[frame:start + d]
    last_line = own_prompt.rsplit("\n", 1)[-1]
    print(f"\ncut at line {own_prompt.count(chr(10)) + 1} of the transcript, after {last_line[-40:]!r}:", file=out)
    print(f"  correct {correct_token!r:<12} Python prints   {output[:d + 40]!r}", file=out)
    print(f"  wrong   {wrong_token!r:<12} the misreading  {wrong[:d + 40]!r}", file=out)
    return Found(own_prompt, correct_token, wrong_token, case.env, where)


def _load_placeholder(snippet: Snippet, case_id: str, where: list[tuple[str, object]], base: str | None,
                      target: Path | None, args: argparse.Namespace, tmp: Path, display: str) -> tuple[Chapter, Case]:
    text = _chapter_text(base, target, args.title, args.python, _placeholder(snippet, case_id, where), display)
    staged = _stage(text, None, tmp)
    try:
        chapter = load_chapter(staged, display)
    except CaseFileError as error:
        raise CLIError(f"collection would refuse this case: {error}") from None
    finally:
        staged.unlink()
    return chapter, next(c for c in chapter.cases if c.id == case_id)  # a duplicate id was refused above


def _framing(chapter: Chapter, primer: str | None) -> str:
    parts = ([f"primer {primer!r}"] if primer else []) + (["the prelude"] if chapter.prelude else [])
    return f"; shown after the chapter's {' and '.join(parts)}" if parts else ""


def _output_start(own: str, case, snippet: Snippet) -> int:
    """Where the output of the last input line (or of the command) starts in the case's rendered text."""
    if snippet.command is not None:
        return len(f"$ {case.transcript.command.text}\n")
    pos = 0
    for line in case.transcript.repl_input:
        hits = []
        for prompt in (PS1, PS2):
            echo = prompt + line + "\n"
            at = own.find(echo, pos)
            while at > 0 and own[at - 1] != "\n":  # an echo starts a line
                at = own.find(echo, at + 1)
            if at != -1:
                hits.append((at, len(echo)))
        if not hits:
            raise CLIError(f"the REPL never read the input line {line!r}; is the snippet complete?")
        at, length = min(hits)
        pos = at + length
    return pos


def _natural(text: str) -> str:
    """From the divergence to a natural token end: the rest of a word or number, or one other character."""
    match = _WORD.match(text)
    return match.group() if match else text[0]


def _fields(case_id: str, found: Found, note: str | None) -> list[tuple[str, object]]:
    fields: list[tuple[str, object]] = [("id", case_id), ("transcript", found.own_prompt + CURSOR),
                                        ("correct", found.correct), ("wrong", found.wrong)]
    fields += found.where
    if note:
        fields.append(("note", note))
    return fields


def _collects(session: GotchasSession, staged: Path, display: str, case_id: str, env: tuple[tuple[str, str], ...],
              nothing: str) -> Planned:
    """Collect the chapter as it would be written: every refusal of collection refuses the write."""
    what = "this case" if display == PRINTED else display
    try:
        plan = session.plan_chapter(staged, display)
    except CaseFileError as error:
        raise CLIError(f"collection would refuse {what}, {nothing}: {error}") from None
    if plan.refused:
        hint = ""
        if any("between runs" in m for m in plan.refused) and "PYTHONHASHSEED" not in dict(env):
            hint = "\n(the output changes with the hash seed: pin it with --env PYTHONHASHSEED=0)"
        raise CLIError(f"collection would refuse {what}, {nothing}:\n" + "\n".join(plan.refused) + hint)
    planned = next(p for p in plan.planned if p.case.id == case_id)
    if planned.status in (CRASH, EXCLUDED):
        raise CLIError(f"collection would not score this case, {nothing}: {planned.message}")
    assert planned.status == SCORED, planned.status
    return planned


def _score(session: GotchasSession, planned: Planned, out: TextIO, nothing: str) -> None:
    from .report.terminal import pct

    print(f"\nloading model {session.settings.model or 'default (embedded gemma-3-270m)'} ...", file=out, flush=True)
    try:
        result = session.score(planned)
    except ModelUnavailable as error:
        raise CLIError(f"{nothing}: {str(error).replace('--gotchas-model', '--model')}") from None
    except GotchasError as error:
        raise CLIError(f"this model cannot score the cut, {nothing}: {error}") from None
    info = result.model or {}
    print(f"model {info.get('name')} ({info.get('dtype')}, {info.get('device')}):", file=out)
    for run in result.runs:
        label = f"  [{run.primer}]" if run.primer else ""
        tokens = f"{'+'.join(map(repr, run.correct_tokens))} vs {'+'.join(map(repr, run.wrong_tokens))}"
        reading = {"plain": "plain", "healed": "healed (backed off to a clean token boundary)",
                   "chain": "multi-token chain (prefer a cut that tokenizes plainly)"}[run.reading]
        print(f"  cut{label}: {reading}: {tokens}", file=out)
        print(f"  P(correct) {pct(run.p_correct)}  P(wrong) {pct(run.p_wrong)}  coverage {pct(run.coverage)}  "
              f"margin {pct(run.margin)}  -> {run.verdict}", file=out)
        if run.plain_p_correct is not None:
            print(f"  plain reading at the full prompt: {pct(run.plain_p_correct)} / {pct(run.plain_p_wrong)} "
                  f"({run.plain_verdict})", file=out)
        print("  top: " + ", ".join(f"{t!r} {pct(p)}" for t, p in run.top), file=out)
    print(f"  verdict: {result.verdict}", file=out)
