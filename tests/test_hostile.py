"""Broken and hostile chapter files, caches and installs: each gets one clear message naming the file (and line
and case where there is one), never a traceback, an INTERNALERROR or a silent wrong result."""

from __future__ import annotations

import pytest
from helpers.chapters import chapter_text

from pytest_gotchas.cases.chapter import CaseFileError, load_chapter

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


def test_plugin_collects_a_latin1_chapter_as_an_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "a.yaml").write_bytes(latin1(chapter_text(CASE.replace('"2"', '"2"\n  note: "é"'))))
    result = pytester.runpytest("--gotchas", "--collect-only")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*ERROR collecting a.yaml*", "*a.yaml:*: the file is not UTF-8 (byte 0xe9)*"])


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
