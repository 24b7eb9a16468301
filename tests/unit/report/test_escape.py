"""escape.py: the one escaping function of every view. Text from other people's files (a chapter's title, a primer's
name, a case's note and reason, an unscored case's output) may hold colour codes, OSC sequences (which set a
terminal's window title) and bidirectional overrides (U+202E); each is shown as its escape. test_terminal.py,
test_junit.py and test_html_one_model.py check that each view escapes them."""

from __future__ import annotations

from helpers.hostile import ESCAPED, HOSTILE

from pytest_gotchas.report.escape import escape


def test_escape_shows_every_control_and_bidirectional_character_as_its_escape() -> None:
    assert escape(HOSTILE) == ESCAPED
    assert escape("a\nb") == "a\\nb"
    assert escape("a\nb", lines=True) == "a\nb"  # a block of lines keeps its newlines, and only those
    assert escape("\u061c\u200e\u200f\udcff") == "\\u061c\\u200e\\u200f\\udcff"  # Bidi_Control; a lone surrogate
    plain = "é ü 中文 █ ∑ — “quotes” \\ 'x' \u00a0"
    assert escape(plain) == plain  # everything printable stays as it is
