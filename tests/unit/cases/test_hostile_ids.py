"""Ids a chapter file names things by: case, pair, twin, variant and chapter ids are letters, digits, `-`, `_` and
`.`, whole (a trailing newline is no part of an id), and so is every value checked by a pattern (interpreter, env
names). A pair id is a baseline key's second half: one with a `/` would be recorded and then refused by the reader."""

from __future__ import annotations

import pytest
from gotchas_helpers import HEADER, chapter_text, line_of

from pytest_gotchas.cases.chapter import CaseFileError, load_chapter

CASES = """
- id: one
  transcript: |-
    >>> [1, 2]
    [█
  correct: "1"
  wrong: "2"
- id: two
  transcript: |-
    >>> [2, 1]
    [█
  correct: "2"
  wrong: "1"
"""


def refused(tmp_path, text: str) -> str:
    path = tmp_path / "a.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CaseFileError) as error:
        load_chapter(path, "a.yaml")
    return str(error.value)


@pytest.mark.parametrize("key", ["pairs", "twins"])
@pytest.mark.parametrize("pair_id", ['"a/b"', '"x\\ny"', '"x\\u202e"', '"-a"', '""'])
def test_a_pair_id_is_validated_as_case_ids_are(tmp_path, key: str, pair_id: str) -> None:
    text = chapter_text(CASES, footer=f"{key}:\n  {pair_id}: [one, two]\n")
    shown = repr(__import__("yaml").safe_load(pair_id))
    assert refused(tmp_path, text) == (
        f"a.yaml:{line_of(text, pair_id)}: {key[:-1]} id {shown} must be letters, digits, `-`, `_` and `.` (it names "
        f"the {key[:-1]} in reports and baselines)")


def test_a_pair_id_that_is_a_number_is_its_digits(tmp_path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text(chapter_text(CASES, footer="pairs:\n  12: [one, two]\n"), encoding="utf-8")
    assert [p.id for p in load_chapter(path).pairs] == ["12"]


def test_two_pairs_of_one_id_are_refused(tmp_path) -> None:
    text = chapter_text(CASES, footer="pairs:\n  12: [one, two]\n  '12': [two, one]\n")
    assert refused(tmp_path, text) == f"a.yaml:{line_of(text, chr(39) + '12')}: duplicate pair id '12'"


def test_a_case_id_with_a_trailing_newline_is_refused(tmp_path) -> None:
    """`$` matches before a final newline: the id pattern must match the whole id."""
    text = chapter_text(CASES.replace("- id: one", '- id: "one\\n"'))
    assert refused(tmp_path, text) == "a.yaml:5: every case needs an `id` (letters, digits, `-`, `_`, `.`)"


@pytest.mark.parametrize("header, message", [
    ('chapter: "demo\\n"', "a.yaml:1: `chapter` must be a short name such as `sets`"),
    ('interpreter: "3.12\\n"', "a.yaml:3: `interpreter` is a version such as \"3.12\", got '3.12\\n'"),
])
def test_chapter_values_with_a_trailing_newline_are_refused(tmp_path, header: str, message: str) -> None:
    key = header.split(":")[0]
    lines = [header if line.startswith(key + ":") else line for line in HEADER.splitlines()]
    assert refused(tmp_path, chapter_text(CASES, header="\n".join(lines) + "\n")) == message


def test_a_variant_id_and_an_env_name_with_a_trailing_newline_are_refused(tmp_path) -> None:
    variant = CASES.replace('  wrong: "2"\n- id: two', '  wrong: "2"\n  variants:\n  - id: "v\\n"\n'
                            '    transcript: "[█"\n    correct: "1"\n    wrong: "2"\n- id: two')
    text = chapter_text(variant)
    assert refused(tmp_path, text) == (f"a.yaml:{line_of(text, 'id: ' + chr(34) + 'v')}: case 'one': every variant "
                                       "needs an `id` (letters, digits, `-`, `_`, `.`)")
    text = chapter_text(CASES.replace('  wrong: "2"\n- id: two', '  wrong: "2"\n  env: {"X\\n": "1"}\n- id: two'))
    line = line_of(text, "env:")
    assert refused(tmp_path, text) == f"a.yaml:{line}: case 'one': `env`: 'X\\n' is not a variable name"
