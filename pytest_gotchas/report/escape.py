"""Text from outside shown safely: the one escaping function every view uses (terminal, junit, the page, `gotchas
merge`, the items' messages).

A chapter file's title, ids, notes and reasons, a snippet's output and a report's or baseline's names are written by
someone else. Shown raw, a control character acts on the reader's terminal (colour codes, an OSC sequence that sets
the window title, a carriage return that overwrites the line), and a bidirectional control (U+202E) reorders what the
reader sees, as in "Trojan Source". So each is shown as its Python escape, `\\x1b` or `\\u202e`: C0 controls (a
newline kept only where a block of lines is shown), DEL, C1 controls, the Unicode Bidi_Control characters, and lone
surrogates (bytes that were not UTF-8, which no terminal or page can encode). Everything else is shown as it is; the
JSON report keeps the raw text (JSON escapes it), as the record of what was written or printed.
"""

from __future__ import annotations

import re

# C0 (but \n, handled apart), DEL, C1, Bidi_Control (ALM, LRM, RLM, LRE..RLO, LRI..PDI), lone surrogates.
_UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\t": "\\t", "\r": "\\r", "\n": "\\n"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(text: str, lines: bool = False) -> str:
    """`text` with every control character as its escape; `lines`: a block of lines, whose newlines stay."""
    if not lines:
        text = text.replace("\n", "\\n")
    return _UNSAFE.sub(_escape, text)
