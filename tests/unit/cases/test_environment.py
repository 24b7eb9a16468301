"""A case may not set a variable that changes how a process starts (the loader's, Python's start-up and path
variables, what the launchers read): refused by name at collection, with file, line and case, wherever the case
names it (a chapter's or case's `env:`, a shell case's or variant's `NAME=value` prefix). PYTHONHASHSEED, which the
shipped chapters pin, stays allowed."""

from __future__ import annotations

import pytest
from helpers.chapters import HEADER, chapter_text, line_of
from helpers.hostile import CASE, refused

from pytest_gotchas.cases import environment
from pytest_gotchas.cases.chapter import load_chapter

TAIL = "; a case's variables may change what the program does, not how a process starts (docs/cases.md)"
LOADER = "it changes how the dynamic loader starts every program"
PYTHON = "it changes how Python starts or where it imports from, which collection sets itself"
LAUNCHERS = "the programs that confine the snippet read it"


@pytest.mark.parametrize("name, why", [
    ("LD_PRELOAD", LOADER), ("LD_LIBRARY_PATH", LOADER), ("LD_AUDIT", LOADER), ("GLIBC_TUNABLES", LOADER),
    ("GCONV_PATH", LOADER), ("MALLOC_CHECK_", LOADER), ("PYTHONSTARTUP", PYTHON), ("PYTHONPATH", PYTHON),
    ("PYTHONHOME", PYTHON), ("PYTHONINSPECT", PYTHON), ("PYTHONUSERBASE", PYTHON), ("PYTHON_BASIC_REPL", PYTHON),
    ("GOTCHAS_SANDBOX", LAUNCHERS), ("LIBMOUNT_DEBUG", LAUNCHERS),
])
def test_a_variable_that_changes_how_a_process_starts_is_refused_in_a_cases_env(tmp_path, name: str, why: str
                                                                                 ) -> None:
    text = chapter_text(CASE.rstrip("\n") + f"\n  env: {{{name}: x}}\n")
    assert refused(tmp_path, text) == (f"a.yaml:{line_of(text, 'env:')}: case 'one': `env`: the variable {name} "
                                       f"cannot be set for a snippet: {why}{TAIL}")


def test_in_a_chapters_env_the_first_case_is_named(tmp_path) -> None:
    text = chapter_text(CASE, header=HEADER.replace("cases:\n", "env: {LD_PRELOAD: /tmp/x.so}\ncases:\n"))
    assert refused(tmp_path, text) == (f"a.yaml:{line_of(text, 'env:')}: `env`: the variable LD_PRELOAD cannot be "
                                       f"set for a snippet: {LOADER}{TAIL}")


def test_on_a_shell_cases_command_line(tmp_path) -> None:
    text = chapter_text("""
        - id: sh
          transcript: |-
            $ PYTHONHASHSEED=0 PYTHONSTARTUP=/tmp/x.py python -c "print(1)"
            █
          correct: "1"
          wrong: "2"
        """)
    assert refused(tmp_path, text) == (f"a.yaml:{line_of(text, '$ PYTHONHASHSEED')}: case 'sh': the command line: "
                                       f"the variable PYTHONSTARTUP cannot be set for a snippet: {PYTHON}{TAIL}")


def test_on_a_shell_variants_command_line(tmp_path) -> None:
    text = chapter_text("""
        - id: sh
          transcript: |-
            $ python -c "print(1)"
            █
          correct: "1"
          wrong: "2"
          variants:
          - id: v
            transcript: |-
              $ LD_PRELOAD=/tmp/x.so python -c "print(1)"
              █
            correct: "1"
            wrong: "2"
        """)
    assert refused(tmp_path, text) == (f"a.yaml:{line_of(text, '$ LD_PRELOAD')}: case 'sh': variant 'v': the "
                                       f"variable LD_PRELOAD cannot be set for a snippet: {LOADER}{TAIL}")


def test_what_the_shipped_chapters_set_is_allowed(tmp_path) -> None:
    for name in ("PYTHONHASHSEED", "PYTHONIOENCODING", "PYTHONWARNINGS", "PYTHONUTF8", "LC_ALL", "TZ", "FOO"):
        assert environment.refused(name) is None, name
    path = tmp_path / "a.yaml"
    path.write_text(chapter_text(CASE, header=HEADER.replace("cases:\n", "env: {PYTHONHASHSEED: \"0\"}\ncases:\n")))
    assert load_chapter(path).cases[0].env == (("PYTHONHASHSEED", "0"),)
