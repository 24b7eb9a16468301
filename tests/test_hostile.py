"""Broken and hostile chapter files, caches and installs: each gets one clear message naming the file (and line
and case where there is one), never a traceback, an INTERNALERROR or a silent wrong result."""

from __future__ import annotations

import time

import pytest
from helpers.chapters import HEADER, chapter_text, line_of

from pytest_gotchas.cases.chapter import CaseFileError, load_chapter, looks_like_chapter
from pytest_gotchas.cli import main

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


# -- encodings ----------------------------------------------------------------------------------------------------


def latin1(text: str) -> bytes:
    """A chapter saved by an editor set to Latin-1: its é is one byte (the cursor keeps its UTF-8 bytes, as no
    Latin-1 file can hold it)."""
    return text.encode("utf-8").replace("é".encode("utf-8"), b"\xe9")


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


def test_plugin_collects_a_latin1_chapter_as_an_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "a.yaml").write_bytes(latin1(chapter_text(CASE.replace('"2"', '"2"\n  note: "é"'))))
    result = pytester.runpytest("--gotchas", "--collect-only")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*ERROR collecting a.yaml*", "*a.yaml:*: the file is not UTF-8 (byte 0xe9)*"])


def test_gotchas_new_to_a_latin1_file_is_one_error(tmp_path, capsys) -> None:
    target = tmp_path / "a.yaml"
    target.write_bytes(latin1(chapter_text(CASE.replace('"2"', '"2"\n  note: "é"'))))
    snippet = tmp_path / "s.py"
    snippet.write_text("1 + 1\n")
    code = main(["new", str(snippet), "--wrong", "3", "--to", str(target), "--id", "two"])
    assert code == 1
    err = capsys.readouterr().err
    assert err.startswith(f"gotchas new: error: --to {target}:") and err.endswith(
        "the file is not UTF-8 (byte 0xe9); save it as UTF-8\n")


# -- through the plugin ---------------------------------------------------------------------------------------------


def test_two_chapter_files_with_one_name_are_refused(pytester: pytest.Pytester) -> None:
    (pytester.path / "a.yaml").write_text(chapter_text(CASE), encoding="utf-8")
    (pytester.path / "b.yaml").write_text(chapter_text(CASE), encoding="utf-8")
    result = pytester.runpytest("--gotchas", "--collect-only")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*b.yaml: chapter name 'demo' is already the name of a.yaml; give each chapter file "
                                 "its own `chapter:` name*"])


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_mistyped_field_is_a_collection_error_never_an_internal_error(pytester: pytest.Pytester,
                                                                       workers: list[str]) -> None:
    (pytester.path / "a.yaml").write_text(chapter_text(CASE.rstrip("\n") + "\n  note: {why: 1}\n"), encoding="utf-8")
    result = pytester.runpytest_subprocess("--gotchas", *workers)
    # serial: collection interrupted; xdist reports the worker's collection error as a failed run
    assert result.ret == (pytest.ExitCode.TESTS_FAILED if workers else pytest.ExitCode.INTERRUPTED), result.stdout.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*a.yaml:*: case 'one': `note` is a text, got a mapping*"])


def test_without_torch_the_session_stops_at_one_clear_error(pytester: pytest.Pytester, py312) -> None:
    """`pip install pytest-gotchas` without the model extras: one message naming the extra, not a traceback per
    case."""
    (pytester.path / "a.yaml").write_text(chapter_text(CASE + CASE.replace("one", "two")), encoding="utf-8")
    pytester.makeconftest("import sys\nsys.modules['torch'] = None\nsys.modules['transformers'] = None\n")
    result = pytester.runpytest_subprocess("--gotchas")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert result.parseoutcomes() == {"failed": 1}
    output = result.stdout.str()
    assert "Traceback" not in output and "ModuleNotFoundError: import of torch halted" in output
    result.stdout.fnmatch_lines(["*scoring needs torch and transformers*pip install \"pytest-gotchas?model?\"*",
                                 "*Interrupted: gotchas: the model could not be loaded*"])
