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


# -- the hostile runs of tests/plugin/test_hostile.py ----------------------------------------------------------------

# The tiny model of the hostile runs reads "1" after "[" and "3" after "(".
MODEL_RULES = {"[": {"1": 2.0, "2": 1.0}, "(": {"3": 2.0, "4": 1.0}}
# The characters of HOSTILE_CHAPTER that would act on a terminal: no output or file may hold one.
IN_HOSTILE_CHAPTER = ("\x1b", "\x07", "\u202e")

# One case the tiny model reads ok.
OK_CHAPTER = """\
chapter: demo
title: "demo chapter"
interpreter: "3.11"
cases:
  - id: a
    transcript: |-
      >>> [1, 2]
      [█
    correct: "1"
    wrong: "2"
"""

# A conftest.py whose disk is full at one seam of truth/execute.py, and only there: `FULL_DISK % "write_sealed"` (the
# transcript cache) or `FULL_DISK % "TemporaryDirectory"` (a snippet's temporary folder; execute.py gets a tempfile of
# its own, so that the isolation's probe still finds room).
FULL_DISK = """
import errno, os, tempfile, types
from pytest_gotchas.truth import execute

SAVED = {}

def full(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

def pytest_configure(config):
    SAVED.update(write_sealed=execute.write_sealed, tempfile=execute.tempfile)
    if "%s" == "write_sealed":
        execute.write_sealed = full
    else:
        execute.tempfile = types.SimpleNamespace(TemporaryDirectory=full, gettempdir=tempfile.gettempdir)

def pytest_unconfigure(config):
    execute.write_sealed = SAVED["write_sealed"]
    execute.tempfile = SAVED["tempfile"]
"""

# A title with colour codes, an OSC window title and U+202E; a case whose prompt is longer than the tiny model's
# 1,024 positions; an unscored case whose output holds control characters; a pair.
HOSTILE_CHAPTER = """\
chapter: demo
title: "demo \\e[31mred\\e[0m \\e]0;pwned\\a \\u202egnp.exe"
interpreter: "3.11"
cases:
  - id: a
    transcript: |-
      >>> [1, 2]
      [█
    correct: "1"
    wrong: "2"
  - id: b
    transcript: |-
      >>> (3, 4)
      (█
    correct: "3"
    wrong: "4"
  - id: long
    transcript: |-
      >>> print('a' * 1100 + '[1')
      %s[█
    correct: "1"
    wrong: "2"
  - id: shown
    transcript: |-
      >>> print('\\x1b]0;pwned\\x07\\u202e', set('abcdefgh'))
      █
    unscored: "the set's order changes with the hash seed"
pairs:
  ab: [a, b]
""" % ("a" * 1100)
# Recorded by an older version: chapter `old` had a pair id with a `/`, which the reader now refuses.
OLDER_BASELINE = """\
format: 2
count: {pairs: 2, verdicts: 2}
pairs:
  old/kept: pass
  old/x/y: pass
verdicts:
  old/one: {p_correct: 0.75, p_wrong: 0.125, verdict: ok}
  old/two: {p_correct: 0.75, p_wrong: 0.125, verdict: ok}
"""
STALE_TEMPORARY = ".tiny-bfloat16-cpu.yaml.k1ll3d00.tmp"  # what a killed update leaves
