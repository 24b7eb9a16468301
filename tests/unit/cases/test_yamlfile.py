"""yamlfile.py: a YAML file someone else wrote is read as UTF-8, bounded in size and in alias expansion, or
refused with one message naming the file (and the line where there is one); a key given twice is refused too."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from helpers.chapters import ONE_CASE, chapter_text, line_of
from helpers.hostile import CASE, latin1, refused

from pytest_gotchas.cases.chapter import CaseFileError, load_chapter, looks_like_chapter


def test_duplicate_key_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    text = chapter_text(ONE_CASE.replace("  wrong:", "  correct: \"4\"\n  wrong:"))
    path.write_text(text)
    with pytest.raises(CaseFileError) as error:
        load_chapter(path, "a.yaml")
    assert str(error.value) == f"a.yaml:{line_of(text, 'correct:', 2)}: duplicate key 'correct'"


def test_an_alias_bomb_is_refused_at_once(tmp_path) -> None:
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for n in range(1, 9):
        bomb.append(f"{chr(97 + n)}: &{chr(97 + n)} [" + ", ".join([f"*{chr(96 + n)}"] * 10) + "]")
    text = chapter_text(CASE.rstrip("\n") + "\n  env:\n" + "".join(f"    {line}\n" for line in bomb))
    started = time.perf_counter()
    assert refused(tmp_path, text) == ("a.yaml: the file's aliases expand to more than 100000 values; write the "
                                       "values out instead")
    assert time.perf_counter() - started < 5


def test_a_file_too_large_to_be_a_chapter_is_refused(tmp_path) -> None:
    text = chapter_text(CASE) + "# " + "x" * (1 << 20) + "\n"
    assert refused(tmp_path, text) == f"a.yaml: {len(text.encode())} bytes is more than a chapter file may hold " \
                                      f"(1048576)"


# -- encodings -------------------------------------------------------------------------------------------------------


def test_a_latin1_chapter_is_an_error_naming_file_and_line(tmp_path) -> None:
    text = chapter_text(CASE.replace('"2"', '"2"\n  note: "café"'))
    path = tmp_path / "a.yaml"
    path.write_bytes(latin1(text))
    assert looks_like_chapter(path)
    with pytest.raises(CaseFileError) as error:
        load_chapter(path, "a.yaml")
    assert str(error.value) == (f"a.yaml:{line_of(text, 'café')}: the file is not UTF-8 (byte 0xe9); "
                                "save it as UTF-8")


def test_a_utf16_chapter_is_an_error(tmp_path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text(chapter_text(CASE), encoding="utf-16")
    assert looks_like_chapter(path)
    with pytest.raises(CaseFileError, match=r"^a\.yaml: the file is UTF-16; save it as UTF-8$"):
        load_chapter(path, "a.yaml")
