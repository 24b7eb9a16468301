"""Reading a snippet for `gotchas new`: from a file or stdin (cases/authoring.py parses it)."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from .errors import CLIError


def read_snippet(source: str, stdin: TextIO) -> str:
    if source == "-":
        if stdin.isatty():
            raise CLIError("no snippet: give a file holding it, or pipe it on stdin")
        return stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CLIError(f"cannot read the snippet {source}: {getattr(error, 'strerror', None) or error}") from None
