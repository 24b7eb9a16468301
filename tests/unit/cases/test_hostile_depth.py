"""Deep nesting in a chapter file: PyYAML composes and constructs recursively, so 10,000 levels ended in a
RecursionError traceback. A file deeper than MAX_DEPTH levels (aliases followed) is one error naming file, line and
the limit, found before anything recursive runs."""

from __future__ import annotations

import pytest
from gotchas_helpers import chapter_text

from pytest_gotchas.cases.chapter import CaseFileError, load_chapter
from pytest_gotchas.cases.yamlfile import MAX_DEPTH

CASE = """
- id: one
  transcript: |-
    >>> 1 + 1
    █
  correct: "2"
  wrong: "3"
"""
NOTE = chapter_text(CASE).count("\n") + 1  # the line a note added after the case is on


def refused(tmp_path, text: str) -> str:
    path = tmp_path / "a.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CaseFileError) as error:
        load_chapter(path, "a.yaml")
    return str(error.value)


def too_deep(line: int) -> str:
    return f"a.yaml:{line}: the file nests more than 100 levels deep (a chapter needs 6); write the values out flat"


@pytest.mark.parametrize("value", [
    "[" * 10_000 + "]" * 10_000,  # flow sequences
    "{a: " * 10_000 + "1" + "}" * 10_000,  # flow mappings
    "- " * 10_000 + "x",  # block sequences, all on one line
])
def test_ten_thousand_levels_are_one_error(tmp_path, value: str) -> None:
    assert MAX_DEPTH == 100
    text = chapter_text(CASE) + "    note:\n      " + value + "\n" if value.startswith("-") else (
        chapter_text(CASE) + f"    note: {value}\n")
    assert refused(tmp_path, text) == too_deep(NOTE + (1 if value.startswith("-") else 0))


def test_depth_through_a_chain_of_aliases_counts(tmp_path) -> None:
    """Each anchor nests the one before: shallow as written, 2,000 levels once the aliases are followed."""
    chain = "".join(f"      k{n}: &a{n} [{'*a' + str(n - 1) if n else 'x'}]\n" for n in range(2_000))
    text = chapter_text(CASE) + "    env:\n" + chain
    # k0's list is 2 levels high (the list and x), k99's is 101: the first node past the limit, on line NOTE + 100
    assert refused(tmp_path, text) == too_deep(NOTE + 1 + 99)


def test_a_hundred_levels_are_read(tmp_path) -> None:
    """The limit refuses only what no chapter needs: a note nested to the limit is read (and refused as a list)."""
    depth = MAX_DEPTH - 4  # the chapter, `cases`, the case and the note's own level are 4 of them
    text = chapter_text(CASE) + "    note: " + "[" * (depth - 1) + "1" + "]" * (depth - 1) + "\n"
    assert refused(tmp_path, text).startswith(f"a.yaml:{NOTE}: case 'one': `note` is a text, got a list: [[[")
