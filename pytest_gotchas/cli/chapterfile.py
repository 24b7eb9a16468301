"""Chapter files written as text, so that appending a case keeps the file's comments and layout, and staged
beside their target so that collection can read them before anything is replaced."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import yaml

from ..cases.chapter import CASE_ID
from .errors import CLIError

_CASES_KEY = re.compile(r"^cases\s*:\s*(?:#.*)?$")
_TOP_LEVEL = re.compile(r"^(?:[^\s#-]|---|\.\.\.)")
T = TypeVar("T")


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
            assert isinstance(value, dict)
            items = ", ".join(f"{_key(k)}: {_scalar(v)}" for k, v in value.items())
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
    assert match is not None  # (.+) matches any non-empty stem
    number, name = match.group(1), match.group(2)
    if not CASE_ID.match(name):
        raise CLIError(f"{path}: cannot name a new chapter after this file (use letters, digits, `-`, `_`)")
    header = [f"chapter: {name}"] + ([f"number: {int(number)}"] if number else [])
    header += [f"title: {_scalar(title or name)}", f"interpreter: {_scalar(python)}", "", "cases:"]
    return "\n".join(header) + "\n" + case_entry("  ", fields)


# -- the command ----------------------------------------------------------------------------------------------------


def writing(target: Path | None, write: Callable[[], T]) -> T:
    try:
        return write()
    except OSError as error:
        raise CLIError(f"cannot write {target}: {error.strerror or error}") from None


def stage(text: str, target: Path | None, tmp: Path) -> Path:
    """The chapter as it would be, in a file collection never picks up (not .yaml), beside the target."""
    folder = target.parent if target is not None else tmp
    fd, name = tempfile.mkstemp(prefix=f".{target.name if target else 'case'}.", suffix=".gotchas-new", dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as stream:
        stream.write(text)
    return Path(name)


def install(staged: Path, target: Path) -> None:
    if target.exists():
        os.chmod(staged, target.stat().st_mode & 0o7777)
    else:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(staged, 0o666 & ~umask)
    os.replace(staged, target)
