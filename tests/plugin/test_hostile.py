"""Broken and hostile chapter files, snippets and installs through the plugin: each gets one clear message naming
the file (and line and case where there is one), never a traceback, an INTERNALERROR or a silent wrong result;
a snippet that kills its parent does not take collection with it."""

from __future__ import annotations

import textwrap

import pytest
from helpers.chapters import chapter_text
from helpers.hostile import CASE, latin1

from pytest_gotchas.truth import sandbox

ISOLATION = sandbox.isolation()


def test_plugin_collects_a_latin1_chapter_as_an_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "a.yaml").write_bytes(latin1(chapter_text(CASE.replace('"2"', '"2"\n  note: "é"'))))
    result = pytester.runpytest("--gotchas", "--collect-only")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*ERROR collecting a.yaml*", "*a.yaml:*: the file is not UTF-8 (byte 0xe9)*"])


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


# -- snippets --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind, args", [
    (ISOLATION.kind, ()),
    (ISOLATION.kind, ("-n", "2")),  # under xdist the workers collect, and died
    (sandbox.PROCESS_GROUP, ()),  # no namespace: the snippet kills its supervisor, the case says so
])
def test_collection_survives_a_snippet_that_kills_its_parent(pytester: pytest.Pytester, kind: str,
                                                             args: tuple[str, ...]) -> None:
    if args:
        pytest.importorskip("xdist")
    if kind == sandbox.PROCESS_GROUP:  # weak, and unshare pretended missing
        pytester.makeconftest("from pytest_gotchas.truth import sandbox\n"
                              "sandbox.which = lambda tool: None\n")
    weak = ("--gotchas-isolation=weak",) if kind == sandbox.PROCESS_GROUP else ()
    pytester.makefile(".yaml", killer=textwrap.dedent("""\
        chapter: killer
        title: hostile snippets
        interpreter: "3.12"
        cases:
          - id: kill-parent
            transcript: |-
              >>> import os; os.kill(os.getppid(), 9)
              >>> 1 + 1
              █
            correct: "2"
            wrong: "3"
          - id: after
            transcript: |-
              >>> 2 + 2
              █
            correct: "4"
            wrong: "5"
        """))
    result = pytester.runpytest_subprocess("--gotchas", "--collect-only", "-q", "-p", "no:cacheprovider", *args,
                                           *weak)
    assert result.ret == 0, result.outlines + result.errlines
    if not args:
        result.stdout.fnmatch_lines(["killer.yaml::kill-parent", "killer.yaml::after", "*2 tests collected*"])
    if kind == sandbox.PROCESS_GROUP:  # collected as a crash, whose message says what the snippet did
        result = pytester.runpytest_subprocess("--gotchas", "-p", "no:cacheprovider", "-rs", "--gotchas-model",
                                               "/nonexistent", *weak)
        assert "the snippet killed its sandbox: the process that supervises it ended (killed by SIGKILL)" in \
            result.stdout.str()
