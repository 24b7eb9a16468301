"""Twins at collection: one program written twice must print the same text after the cut (both spellings
executed), and be cut at the same point; otherwise the chapter is refused with the file, the twin's line and id, and
where the two texts part: both members are refused items (a twin cut at different points is a schema error of the
file, which stops its collection) (the chapter's other cases still run). Nothing here loads a
model: every run is --collect-only."""

from __future__ import annotations

import pytest
from helpers.chapters import line_of
from helpers.output import assert_block

TWINS = """
- id: joined
  transcript: |-
    >>> print("a7", "x")
    a█
  correct: "7"
  wrong: "8"
- id: concatenated
  transcript: |-
    >>> print("a" + "7", "{last}")
    a█
  correct: "7"
  wrong: "{wrong}"
"""
FOOTER = "twins:\n  spelled-twice: [joined, concatenated]\n"


def test_a_twin_printing_the_same_text_collects(pytester: pytest.Pytester, write_chapter) -> None:
    write_chapter(TWINS.format(last="x", wrong="8"), footer=FOOTER)
    result = pytester.runpytest("--gotchas", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["a.yaml::joined", "a.yaml::concatenated", "2 tests collected*"])


def test_a_twin_printing_different_text_after_the_cut_is_refused(pytester: pytest.Pytester, write_chapter) -> None:
    """Each member alone is a true case (its prompt, `correct` and `wrong` hold): only comparing the two finds that
    they are two programs."""
    _, text = write_chapter(TWINS.format(last="y", wrong="8"), footer=FOOTER)
    result = pytester.runpytest("--gotchas", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert_block(result, f"""
        a.yaml:{line_of(text, "spelled-twice")}: twin 'spelled-twice': the two spellings print different text after the cut, so they are not one program; they part at line 1 after the cut, after '7 ':
            'joined':       'x\\n'
            'concatenated': 'y\\n'
        """)


def test_a_twin_cut_at_different_points_is_refused(pytester: pytest.Pytester, write_chapter) -> None:
    _, text = write_chapter(TWINS.format(last="x", wrong="9"), footer=FOOTER)
    result = pytester.runpytest("--gotchas", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([
        f"a.yaml:{line_of(text, 'spelled-twice')}: twin 'spelled-twice' is cut at different points: 'joined' has "
        "`correct` '7' and `wrong` '8', 'concatenated' has '7' and '9'"])
