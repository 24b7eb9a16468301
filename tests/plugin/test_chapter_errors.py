"""A broken chapter file through the plugin: collection stops with one line per error that names the file, the
line and the case, and a broken chapter does not hide the others."""

from __future__ import annotations

import pytest
from helpers.chapters import HEADER, MISSING, ONE_CASE, line_of

CASE_ERRORS = {
    "unknown-case-key": (
        """
        - id: plus
          transcript: |-
            >>> 1 + 1
            █
          correct: "2"
          wrong: "3"
          expected: "2"
        """, "", "expected:",
        "case 'plus': unknown case key 'expected' (allowed: correct, env, id, interpreter, note, transcript, unscored, variants, wrong)"),
    "missing-cursor": (
        """
        - id: plus
          transcript: |-
            >>> 1 + 1
            2
          correct: "2"
          wrong: "3"
        """, "", ">>> 1 + 1",
        "case 'plus': a transcript needs exactly one cursor █ marking the cut; found 0"),
    "two-cursors": (
        """
        - id: plus
          transcript: |-
            >>> 1 +█ 1
            █
          correct: "2"
          wrong: "3"
        """, "", "            █",
        "case 'plus': a transcript needs exactly one cursor █ marking the cut; found 2"),
    "text-after-cursor": (
        """
        - id: plus
          transcript: |-
            >>> 1 + 1
            █2
            >>> 2 + 2
          correct: "2"
          wrong: "3"
        """, "", "█2",
        "case 'plus': nothing may follow the cursor █; found '2\\n>>> 2 + 2'"),
    "cursor-on-input-line": (
        """
        - id: plus
          transcript: |-
            >>> x = 1
            >>> x +█
          correct: "2"
          wrong: "3"
        """, "", ">>> x +█",
        "case 'plus': the cursor is on an input line; cut inside what Python prints, not inside what is typed"),
    "cursor-on-continuation-line": (
        """
        - id: plus
          transcript: |-
            >>> for i in range(2):
            ...     print(█
          correct: "2"
          wrong: "3"
        """, "", "print(█",
        "case 'plus': the cursor is on an input line; cut inside what Python prints, not inside what is typed"),
    "candidates-start-alike": (
        """
        - id: truth
          transcript: |-
            >>> 1 == 1
            █
          correct: "True"
          wrong: "Tru"
        """, "", "wrong:",
        "case 'truth': `correct` 'True' and `wrong` 'Tru' start alike; cut where they diverge"),
    "pair-names-unknown-case": (
        ONE_CASE, "pairs:\n  p1: [plus, minus]\n", "p1:",
        "pair 'p1' names unknown case 'minus'"),
    "duplicate-case-id": (
        ONE_CASE + ONE_CASE, "", "- id: plus",
        "case 'plus': duplicate case id"),
    "shell-not-python": (
        """
        - id: ruby
          transcript: |-
            $ ruby -e 'puts 1 + 1'
            █
          correct: "2"
          wrong: "3"
        """, "", "$ ruby",
        "case 'ruby': only Python commands can be executed; got 'ruby' (use python or python3.X)"),
    "shell-env-then-not-python": (
        """
        - id: node
          transcript: |-
            $ PYTHONHASHSEED=0 node -e 'console.log(2)'
            █
          correct: "2"
          wrong: "3"
        """, "", "$ PYTHONHASHSEED=0 node",
        "case 'node': only Python commands can be executed; got 'node' (use python or python3.X)"),
}


@pytest.mark.parametrize("name", list(CASE_ERRORS))
def test_case_file_error_names_file_line_and_case(pytester: pytest.Pytester, write_chapter, name: str) -> None:
    cases, footer, needle, message = CASE_ERRORS[name]
    # the duplicate id is reported on the second occurrence
    nth = 2 if name in ("duplicate-case-id", "two-cursors") else 1
    if name == "two-cursors":
        needle = "█"
    path, text = write_chapter(cases, footer=footer)
    line = line_of(text, needle, nth)
    result = pytester.runpytest("--gotchas", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert f"a.yaml:{line}: {message}" in result.outlines, result.stdout.str()


def test_bad_yaml_names_its_line(pytester: pytest.Pytester, write_chapter) -> None:
    _, text = write_chapter("""
        - id: plus
          transcript: |-
            >>> 1 + 1
            █
          correct: "2"
         wrong: "3"
        """)
    line = line_of(text, ' wrong: "3"')
    result = pytester.runpytest("--gotchas", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert f"a.yaml:{line}: not valid YAML: expected <block end>, but found '<block mapping start>'" in result.outlines, \
        result.stdout.str()


def test_unknown_chapter_key_names_its_line(pytester: pytest.Pytester, write_chapter) -> None:
    _, text = write_chapter(ONE_CASE, header=HEADER.replace("cases:", "colour: red\ncases:"))
    result = pytester.runpytest("--gotchas", "--collect-only", "-q")
    assert (f"a.yaml:{line_of(text, 'colour:')}: unknown chapter key 'colour' (allowed: cases, chapter, env, "
            f"families, implementation_defined, interpreter, number, pairs, prelude, primers, title, twins)") in (
        result.outlines)


def test_a_broken_chapter_does_not_hide_the_others(pytester: pytest.Pytester, write_chapter) -> None:
    write_chapter(MISSING, name="good.yaml")
    write_chapter(ONE_CASE.replace("█", ""), name="bad.yaml")
    result = pytester.runpytest("--gotchas", "--collect-only", "-q", "--continue-on-collection-errors")
    assert "good.yaml::nowhere" in result.outlines
    assert "ERROR bad.yaml" in result.stdout.str()
