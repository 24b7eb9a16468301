"""A case to break, and the two ways the tests break its chapter: `refused` loads a chapter text and returns
its refusal; `latin1` is a chapter as an editor set to Latin-1 saves it. And text that would act on a terminal
(HOSTILE, shown as ESCAPED), in every field of a report that comes from someone else (`hostile_report`)."""

from __future__ import annotations

import pytest
from helpers.results import make_case, make_run

from pytest_gotchas.cases.chapter import CaseFileError, load_chapter
from pytest_gotchas.results.report import Report
from pytest_gotchas.results.schema import CaseResult, ChapterInfo, SeedOutput
from pytest_gotchas.results.verdict import Status

CASE = """
- id: one
  transcript: |-
    >>> 1 + 1
    █
  correct: "2"
  wrong: "3"
"""


def refused(tmp_path, text: str) -> str:
    path = tmp_path / "a.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CaseFileError) as error:
        load_chapter(path, "a.yaml")
    return str(error.value)


# -- encodings ----------------------------------------------------------------------------------------------------


def latin1(text: str) -> bytes:
    """A chapter saved by an editor set to Latin-1: its é is one byte (the cursor keeps its UTF-8 bytes, as no
    Latin-1 file can hold it)."""
    return text.encode("utf-8").replace("é".encode("utf-8"), b"\xe9")


# -- text that acts on a terminal ------------------------------------------------------------------------------------

# Colour codes, an OSC window title, bidirectional overrides and isolates, a C1 CSI, and C0 controls; ESCAPED is
# how every view shows them, UNSAFE the characters no view may hold.
HOSTILE = "\x1b[31mred\x1b[0m \x1b]0;pwned\x07 \u202egnp.exe\u202c \u2066x\u2069 \x9b2J \r\x00\x7f\t"
ESCAPED = "\\x1b[31mred\\x1b[0m \\x1b]0;pwned\\x07 \\u202egnp.exe\\u202c \\u2066x\\u2069 \\x9b2J \\r\\x00\\x7f\\t"
UNSAFE = ("\x1b", "\x07", "\x9b", "\r", "\x00", "\x7f", "\u202e", "\u202c", "\u2066", "\u2069")


def hostile_report() -> Report:
    """A chapter whose title and label, a scored case whose primer and note, and an unscored case whose reason and
    outputs hold HOSTILE."""
    chapter = ChapterInfo(name="demo", label="ch.1 " + HOSTILE, title=HOSTILE, path="demo.yaml",
                          implementation_defined=False, case_ids=["a", "shown"], pairs={}, twins={})
    scored = make_case("a", "demo", [make_run(0.75, 0.125, primer="p" + HOSTILE), make_run(0.75, 0.125, primer="q")])
    scored.note = "note " + HOSTILE
    unscored = CaseResult(id="shown", chapter="demo", status=Status.UNSCORED, verdict=None,
                          message="why " + HOSTILE, outputs=[SeedOutput("1", ">>> s\n{'b', 'a'} " + HOSTILE + "\n"),
                                                             SeedOutput("2", ">>> s\n{'a', 'b'} " + HOSTILE + "\n")])
    return Report([scored, unscored], [chapter])
