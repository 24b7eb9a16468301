"""Text from other people's files reaches every view escaped: a chapter's title, a primer's name, a case's note and
reason, and an unscored case's output may hold colour codes, OSC sequences (which set a terminal's window title) and
bidirectional overrides (U+202E). The terminal, junit and the page show each as its escape (report/escape.py)."""

from __future__ import annotations

import pytest
from gotchas_helpers import make_case, make_run

from pytest_gotchas.report import html, junit, terminal
from pytest_gotchas.report.escape import escape
from pytest_gotchas.results.report import Report
from pytest_gotchas.results.schema import CaseResult, ChapterInfo, SeedOutput
from pytest_gotchas.results.verdict import Status

HOSTILE = "\x1b[31mred\x1b[0m \x1b]0;pwned\x07 \u202egnp.exe\u202c \u2066x\u2069 \x9b2J \r\x00\x7f\t"
ESCAPED = "\\x1b[31mred\\x1b[0m \\x1b]0;pwned\\x07 \\u202egnp.exe\\u202c \\u2066x\\u2069 \\x9b2J \\r\\x00\\x7f\\t"
UNSAFE = ("\x1b", "\x07", "\x9b", "\r", "\x00", "\x7f", "\u202e", "\u202c", "\u2066", "\u2069")


def test_escape_shows_every_control_and_bidirectional_character_as_its_escape() -> None:
    assert escape(HOSTILE) == ESCAPED
    assert escape("a\nb") == "a\\nb"
    assert escape("a\nb", lines=True) == "a\nb"  # a block of lines keeps its newlines, and only those
    assert escape("\u061c\u200e\u200f\udcff") == "\\u061c\\u200e\\u200f\\udcff"  # Bidi_Control; a lone surrogate
    plain = "é ü 中文 █ ∑ — “quotes” \\ 'x' \u00a0"
    assert escape(plain) == plain  # everything printable stays as it is


def hostile_report() -> Report:
    chapter = ChapterInfo(name="demo", label="ch.1 " + HOSTILE, title=HOSTILE, path="demo.yaml",
                          implementation_defined=False, case_ids=["a", "shown"], pairs={}, twins={})
    scored = make_case("a", "demo", [make_run(0.75, 0.125, primer="p" + HOSTILE), make_run(0.75, 0.125, primer="q")])
    scored.note = "note " + HOSTILE
    unscored = CaseResult(id="shown", chapter="demo", status=Status.UNSCORED, verdict=None,
                          message="why " + HOSTILE, outputs=[SeedOutput("1", ">>> s\n{'b', 'a'} " + HOSTILE + "\n"),
                                                             SeedOutput("2", ">>> s\n{'a', 'b'} " + HOSTILE + "\n")])
    return Report([scored, unscored], [chapter])


def test_the_terminal_summary_shows_titles_primers_reasons_and_outputs_escaped() -> None:
    lines = [text for text, _ in terminal.summary_lines(hostile_report(), [("baseline " + HOSTILE, {})])]
    shown = "\n".join(lines)
    assert not any(char in shown for char in UNSAFE)
    assert f"ch.1 {ESCAPED}" in lines  # the chapter's heading
    assert f"  shown  unscored   why {ESCAPED}" in lines
    assert f"         PYTHONHASHSEED=1: {{'b', 'a'}} {ESCAPED}" in lines
    assert any(line.startswith(f"  a      p{ESCAPED}  ok") for line in lines)  # the primer column
    assert f"baseline {ESCAPED}" in lines


def test_the_verbose_word_is_escaped() -> None:
    result = hostile_report().results[0]
    word = terminal.verbose_word(result)
    assert f"[p{ESCAPED}: ok 75.00%/12.50% | q: ok 75.00%/12.50%]" in word


def test_junit_properties_are_escaped() -> None:
    names = [name for name, _ in junit.properties(hostile_report().results[0])]
    assert names[1] == f"p{ESCAPED}.verdict"


@pytest.mark.parametrize("seen", ["title", "note", "reason", "output"])
def test_the_page_shows_them_escaped_too(seen: str) -> None:
    """Autoescaping makes them safe as HTML, not as text: the page escapes the control characters as well."""
    page = html.render(hostile_report())
    assert not any(char in page for char in UNSAFE)
    expected = {"title": f"ch.1 {ESCAPED}", "note": f"note {ESCAPED}", "reason": f"why {ESCAPED}",
                "output": f"{{&#39;b&#39;, &#39;a&#39;}} {ESCAPED}"}[seen]
    assert expected in page
