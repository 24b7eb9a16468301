"""chapter.py: chapter YAML into Chapter / Case / Pair, with file:line on every error: values kept as they are
written, every field's type checked, the prelude, and a case's variants."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.chapters import HEADER, ONE_CASE, chapter_text, line_of
from helpers.hostile import CASE, refused
from helpers.variants import CHAPTER

from pytest_gotchas.cases.chapter import CaseFileError, load_chapter


# -- what is written is what is read ---------------------------------------------------------------------------------


def test_unquoted_numbers_keep_their_spelling(tmp_path: Path) -> None:
    # YAML reads `3.10` as the float 3.1 and `0.10` as 0.1; the chapter must keep what was written.
    path = tmp_path / "a.yaml"
    path.write_text(chapter_text("""
        - id: tenth
          interpreter: 3.10
          transcript: |-
            >>> print('0.10')
            █
          correct: 0.10
          wrong: 1.0
        """))
    case = load_chapter(path).cases[0]
    assert (case.interpreter, case.correct, case.wrong) == ("3.10", "0.10", "1.0")


def test_unquoted_bool_candidate_must_be_quoted(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    text = chapter_text("""
        - id: truth
          transcript: |-
            >>> 1 == 1
            █
          correct: True
          wrong: "False"
        """)
    path.write_text(text)
    with pytest.raises(CaseFileError) as error:
        load_chapter(path, "a.yaml")
    assert str(error.value) == (f"a.yaml:{line_of(text, 'correct:')}: case 'truth': `correct` must be the non-empty "
                                f"text Python prints at the cut (quote it: \"True\")")


def test_error_line_in_a_quoted_transcript_is_the_value_line(tmp_path: Path) -> None:
    # Only a `|` block maps transcript lines onto file lines; a quoted string is on one file line.
    path = tmp_path / "a.yaml"
    text = chapter_text("""
        - id: quoted
          transcript: ">>> 1\\n█1\\n>>> 2"
          correct: "1"
          wrong: "2"
        """)
    path.write_text(text)
    with pytest.raises(CaseFileError) as error:
        load_chapter(path, "a.yaml")
    assert str(error.value) == f"a.yaml:{line_of(text, 'transcript:')}: case 'quoted': nothing may follow the cursor █; found '1\\n>>> 2'"


def test_prelude_is_prepended_to_each_prompt(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text(chapter_text(ONE_CASE, header=HEADER.replace("cases:", "prelude: |\n  >>> x = 1\ncases:")))
    chapter = load_chapter(path)
    (prompt,) = chapter.prompts(chapter.cases[0])
    assert prompt.transcript.prompt == ">>> x = 1\n>>> 1 + 1\n"
    assert prompt.transcript.repl_input == ("x = 1", "1 + 1")


# -- every field has a type, checked with file:line ---------------------------------------------------------------


@pytest.mark.parametrize("extra, key, message", [
    ("  note: {why: 1}", "note:", "case 'one': `note` is a text, got a mapping: {'why': 1}"),
    ("  note: [a, b]", "note:", "case 'one': `note` is a text, got a list: ['a', 'b']"),
    ("  unscored: {a: 1}", "unscored:", "case 'one': `unscored` is a text, got a mapping: {'a': 1}"),
    ("  env: {PYTHONHASHSEED: null}", "env:",
     "case 'one': `env`: PYTHONHASHSEED must be a string or a whole number (quote it: \"0\"), got None"),
    ("  env: {PYTHONHASHSEED: [1, 2]}", "env:",
     "case 'one': `env`: PYTHONHASHSEED must be a string or a whole number (quote it: \"0\"), got [1, 2]"),
    ("  env: {PYTHONHASHSEED: true}", "env:",
     "case 'one': `env`: PYTHONHASHSEED must be a string or a whole number (quote it: \"0\"), got True"),
    ("  env: {1X: a}", "env:", "case 'one': `env`: '1X' is not a variable name"),
])
def test_case_fields_of_the_wrong_type(tmp_path, extra: str, key: str, message: str) -> None:
    text = chapter_text(CASE.rstrip("\n") + "\n" + extra + "\n")
    assert refused(tmp_path, text) == f"a.yaml:{line_of(text, key)}: {message}"


@pytest.mark.parametrize("header_line, message", [
    ('implementation_defined: "false"', "`implementation_defined` is true or false (unquoted), got 'false'"),
    ("implementation_defined: 0", "`implementation_defined` is true or false (unquoted), got 0"),
    ("prelude: {a: 1}", "`prelude` is a text, got a mapping: {'a': 1}"),
    ("env: [PYTHONHASHSEED]", "`env` maps variable names to values"),
])
def test_chapter_fields_of_the_wrong_type(tmp_path, header_line: str, message: str) -> None:
    text = chapter_text(CASE, header=HEADER.replace("cases:\n", header_line + "\ncases:\n"))
    assert refused(tmp_path, text) == f"a.yaml:{line_of(text, header_line.split(':')[0] + ':')}: {message}"


def test_a_title_that_is_not_text(tmp_path) -> None:
    text = chapter_text(CASE, header=HEADER.replace('title: "demo chapter"', "title: [a]"))
    assert refused(tmp_path, text) == "a.yaml:2: `title` is a text, got a list: ['a']"


def test_a_whole_number_is_a_valid_env_value(tmp_path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text(chapter_text(CASE.rstrip("\n") + "\n  env: {PYTHONHASHSEED: 0}\n"), encoding="utf-8")
    assert dict(load_chapter(path).cases[0].env)["PYTHONHASHSEED"] == "0"


# -- variants --------------------------------------------------------------------------------------------------------


def test_variants_are_read_from_the_chapter(tmp_path: Path) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(CHAPTER)
    case = load_chapter(path).cases[0]
    assert [(v.id, v.correct, v.wrong) for v in case.variants] == [("rename-ys", "7", "8"), ("rename-zs", "7", "8")]
    assert case.variants[0].transcript.repl_input == ("ys = [7]", "ys")


@pytest.mark.parametrize("edit, key, message", [
    (("      - id: rename-zs", "      - id: rename-ys"), "- id: rename-ys", "duplicate variant id 'rename-ys'"),
    (('          >>> zs\n          [█\n        correct: "7"', '          >>> zs\n          [█\n        correct: "7"\n'
                                                               '        interpreter: "3.11"'), 'interpreter: "3.11"',
     "variant 'rename-zs': unknown key 'interpreter' (allowed: correct, id, note, transcript, wrong; a variant runs "
     "under its case's interpreter and environment)"),
    (('        correct: "7"\n        wrong: "8"\n  - id: steady', '        correct: "7"\n        wrong: "7"\n'
                                                                  '  - id: steady'), 'wrong: "7"',
     "variant 'rename-zs': `correct` '7' and `wrong` '7' start alike; cut where they diverge"),
])
def test_a_malformed_variant_names_its_line(tmp_path: Path, edit: tuple[str, str], key: str, message: str) -> None:
    text = CHAPTER.replace(*edit)
    assert text != CHAPTER
    path = tmp_path / "demo.yaml"
    path.write_text(text)
    with pytest.raises(CaseFileError) as error:
        load_chapter(path, "demo.yaml")
    assert str(error.value) == f"demo.yaml:{line_of(text, key, 2 if 'duplicate' in message else 1)}: case 'named': " \
                               f"{message}"
