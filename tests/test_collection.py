"""The plugin driven through pytester: collection, refusals and their messages, categories, the summary.

Nothing here loads a model: every run is --collect-only, or only runs cases that are unscored, crash or skip.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from helpers import CASES_DIR
from helpers.chapters import HEADER, line_of
from helpers.interpreters import interpreter, path_of
from helpers.output import assert_block

from pytest_gotchas.truth import execute as execute_mod
from pytest_gotchas.cases.chapter import load_chapter

PY312_PATH = path_of("3.12")  # found by the package's own Finder; None where missing (then the py312 fixture skips)

ONE_CASE = """
- id: plus
  transcript: |-
    >>> 1 + 1
    █
  correct: "2"
  wrong: "3"
"""

MISSING = """
- id: nowhere
  interpreter: "3.99"
  transcript: |-
    >>> 1 + 1
    █
  unscored: "no such interpreter"
"""

UNSEEDED_SET = """
- id: letters
  transcript: |-
    >>> set(['a', 'b', 'c'])
    {'█
  unscored: "the order depends on the hash seed"
"""


def describe(py) -> str:
    """The line session.py appends to every refusal."""
    return f"  (python {py.version} at {py.path}; no variables set; 3 runs)"


# -- the plugin stays inert ---------------------------------------------------------------------------------------


def test_inert_without_gotchas(pytester: pytest.Pytester, write_chapter) -> None:
    write_chapter(MISSING)
    result = pytester.runpytest("--collect-only", "-q")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "a.yaml" not in result.stdout.str()


def test_ini_option_turns_it_on(pytester: pytest.Pytester, write_chapter) -> None:
    write_chapter(MISSING)
    pytester.makeini("[pytest]\ngotchas = true\n")
    result = pytester.runpytest("--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    assert "a.yaml::nowhere" in result.outlines


def test_yaml_that_is_not_a_chapter_is_ignored(pytester: pytest.Pytester) -> None:
    pytester.path.joinpath("workflow.yaml").write_text("name: CI\non: push\njobs:\n  test:\n    runs-on: ubuntu\n")
    # `cases:` that is not a top-level key does not make a chapter either
    pytester.path.joinpath("nested.yml").write_text("suite:\n  cases:\n    - id: a\n")
    pytester.path.joinpath("broken.yaml").write_text("key: [unclosed\n")
    result = pytester.runpytest("--gotchas", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED, result.stdout.str()
    assert "error" not in result.stdout.str().lower()


def test_yml_extension_is_a_chapter_too(pytester: pytest.Pytester, write_chapter) -> None:
    write_chapter(MISSING, name="a.yml")
    result = pytester.runpytest("--gotchas", "--collect-only", "-q")
    assert "a.yml::nowhere" in result.outlines


def test_runs_without_the_cache_provider(pytester: pytest.Pytester, write_chapter) -> None:
    # `config.cache` does not exist under `-p no:cacheprovider`: the plugin runs without a transcript cache.
    write_chapter(MISSING)
    result = pytester.runpytest("--gotchas", "-p", "no:cacheprovider", "--collect-only", "-q")
    crashed = "AttributeError: 'Config' object has no attribute 'cache'" in result.stderr.str()
    assert not crashed, "--gotchas with -p no:cacheprovider crashes in plugin.pytest_configure (config.cache is missing)"
    assert "a.yaml::nowhere" in result.outlines


# -- chapter file errors: file, line, case id ---------------------------------------------------------------------

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
            f"implementation_defined, interpreter, number, pairs, prelude, primers, title, twins)") in result.outlines


def test_a_broken_chapter_does_not_hide_the_others(pytester: pytest.Pytester, write_chapter) -> None:
    write_chapter(MISSING, name="good.yaml")
    write_chapter(ONE_CASE.replace("█", ""), name="bad.yaml")
    result = pytester.runpytest("--gotchas", "--collect-only", "-q", "--continue-on-collection-errors")
    assert "good.yaml::nowhere" in result.outlines
    assert "ERROR bad.yaml" in result.stdout.str()


# -- ground truth refusals: expected vs actual --------------------------------------------------------------------


def test_prompt_not_what_python_printed_shows_whitespace(pytester: pytest.Pytester, write_chapter, py312) -> None:
    _, text = write_chapter("""
        - id: spaced
          transcript: |-
            >>> print(' x')
            x█
          correct: "\\n"
          wrong: "y"
        """)
    result = pytester.runpytest("--gotchas", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert_block(result, f"""
        ground truth refuses these cases:
        a.yaml:{line_of(text, "- id: spaced")}: case 'spaced': the prompt is not what Python printed
          at line 2 of the transcript, after ">>> print(' x')\\n":
            transcript: 'x'
            python:     ' x\\n'
        {describe(py312)}
        """)


def test_correct_is_not_the_next_text(pytester: pytest.Pytester, write_chapter, py312) -> None:
    _, text = write_chapter(ONE_CASE.replace('"2"', '"4"'))
    result = pytester.runpytest("--gotchas", "--collect-only", "-q")
    assert_block(result, f"""
        a.yaml:{line_of(text, "- id: plus")}: case 'plus': `correct` '4' is not what Python prints at the cut; it prints '2\\n'
          at line 2 of the transcript, after '>>> 1 + 1\\n':
            transcript: '4'
            python:     '2\\n'
        {describe(py312)}
        """)


def test_distractor_is_the_next_text(pytester: pytest.Pytester, write_chapter, py312) -> None:
    _, text = write_chapter(ONE_CASE.replace('correct: "2"', 'correct: "4"').replace('wrong: "3"', 'wrong: "2"'))
    result = pytester.runpytest("--gotchas", "--collect-only", "-q")
    assert_block(result, f"""
        a.yaml:{line_of(text, "- id: plus")}: case 'plus': `correct` '4' is not what Python prints at the cut, `wrong` '2' is
          at line 2 of the transcript, after '>>> 1 + 1\\n':
            transcript: '4'
            python:     '2\\n'
        {describe(py312)}
        """)


def _set_output(py, seed: str) -> str:
    """What python prints for set(['a', 'b', 'c']) under a hash seed."""
    return subprocess.run([py.path, "-c", "print(set(['a', 'b', 'c']))"], capture_output=True, text=True,
                          env={"PYTHONHASHSEED": seed}).stdout.strip()


LETTERS = """
- id: letters
  transcript: |-
    >>> set(['a', 'b', 'c'])
    {{'█
  correct: "{correct}"
  wrong: "{wrong}"
"""


def test_nondeterministic_snippet_is_refused_naming_two_seeds(pytester: pytest.Pytester, write_chapter,
                                                              py312) -> None:
    # The answer holds under seed 1 but not under another seed.
    outputs = {seed: _set_output(py312, seed) for seed in ("1", "2", "3")}
    first = outputs["1"][2]
    bad = next((seed for seed in ("2", "3") if outputs[seed][2] != first), None)
    if bad is None:
        pytest.skip(f"this build starts the set with {first!r} under seeds 1, 2 and 3")
    _, text = write_chapter(LETTERS.format(correct=first, wrong="d"))
    result = pytester.runpytest("--gotchas", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    rest = outputs[bad][2:] + "\n"
    assert_block(result, f"""
        a.yaml:{line_of(text, '- id: letters')}: case 'letters': the answer changes between runs: it holds under PYTHONHASHSEED=1 but not under PYTHONHASHSEED={bad}: `correct` {first!r} is not what Python prints at the cut; it prints {rest[:12]!r}
          at line 2 of the transcript, after ">>> set(['a', 'b', 'c'])\\n{{'":
            transcript: {first!r}
            python:     {rest!r}
        {describe(py312)}
        """)


def test_output_that_varies_but_is_always_wrong_is_nondeterministic(pytester: pytest.Pytester, write_chapter,
                                                                     py312) -> None:
    # No seed prints `d`, and the seeds print different things: say that the output varies, not just "mismatch".
    outputs = {seed: _set_output(py312, seed) for seed in ("1", "2", "3")}
    other = next((seed for seed in ("2", "3") if outputs[seed] != outputs["1"]), None)
    if other is None:
        pytest.skip("this build prints the set the same way under seeds 1, 2 and 3")
    _, text = write_chapter(LETTERS.format(correct="d", wrong="e"))
    result = pytester.runpytest("--gotchas", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    line = line_of(text, "- id: letters")

    def problem(seed: str) -> str:
        rest = outputs[seed][2:] + "\n"
        return (f"`correct` 'd' is not what Python prints at the cut; it prints {rest[:12]!r}\n"
                f"  at line 2 of the transcript, after \">>> set(['a', 'b', 'c'])\\n{{'\":\n"
                f"    transcript: 'd'\n"
                f"    python:     {rest!r}")

    assert_block(result, (
        f"a.yaml:{line}: case 'letters': the output changes between runs: under PYTHONHASHSEED=1: {problem('1')}\n"
        f"under PYTHONHASHSEED={other}: {problem(other)}\n"
        f"{describe(py312)}").split("\n"))


def test_runaway_snippet_is_refused_with_a_timeout(pytester: pytest.Pytester, write_chapter, py312) -> None:
    _, text = write_chapter("""
        - id: forever
          transcript: |-
            >>> while True: pass
            ...
            █
          correct: "a"
          wrong: "b"
        """)
    result = pytester.runpytest("--gotchas", "--collect-only", "-q", "--gotchas-timeout", "1")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert_block(result, f"""
        ground truth refuses these cases:
        a.yaml:{line_of(text, "- id: forever")}: case 'forever': the snippet did not finish (killed after the timeout, seed 1); the limit is 1 s (--gotchas-timeout)
        """)


def test_unscored_case_whose_output_never_changes_is_refused(pytester: pytest.Pytester, write_chapter,
                                                             py312) -> None:
    _, text = write_chapter("""
        - id: steady
          transcript: |-
            >>> 1 + 1
            █
          unscored: "claims to vary"
        """)
    result = pytester.runpytest("--gotchas", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert_block(result, f"""
        a.yaml:{line_of(text, "- id: steady")}: case 'steady': an unscored case must show that its output changes, but it printed the same under PYTHONHASHSEED=1, 2, 3; score it with `correct`/`wrong` instead
        {describe(py312)}
        """)


def test_unscored_case_is_shown_with_its_outputs(pytester: pytest.Pytester, write_chapter, py312) -> None:
    write_chapter(UNSEEDED_SET)
    result = pytester.runpytest("--gotchas")
    assert result.parseoutcomes().get("unscored") == 1, result.stdout.str()
    assert result.ret == pytest.ExitCode.OK
    shown = {}
    for line in result.outlines:
        match = re.fullmatch(r"\s+PYTHONHASHSEED=(\d+): (.*)", line)
        if match:
            shown[match.group(1)] = match.group(2)
    assert sorted(shown) == ["1", "2", "3"], result.stdout.str()
    assert all(sorted(out) == sorted("{'a', 'b', 'c'}") for out in shown.values()), shown
    assert len(set(shown.values())) >= 2, shown
    # each output is what that seed really prints
    for seed, out in shown.items():
        actual = subprocess.run([py312.path, "-c", "print(set(['a', 'b', 'c']))"], capture_output=True, text=True,
                                env={"PYTHONHASHSEED": seed}).stdout.strip()
        assert out == actual


# -- interpreters -------------------------------------------------------------------------------------------------


def test_missing_interpreter_skips_saying_where_it_looked(pytester: pytest.Pytester, write_chapter) -> None:
    write_chapter(MISSING)
    result = pytester.runpytest("--gotchas", "-rs")
    assert result.parseoutcomes() == {"skipped": 1}
    text = result.stdout.str()
    assert "no working python3.99 found (tried: PATH: no python3.99; " in text
    assert "/versions/3.99.*/bin/python3.99: none; /usr/local/bin/python3.99: does not exist; " in text
    assert ("/usr/bin/python3.99: does not exist); point to one with --gotchas-python "
            "3.99=/path/to/python3.99 or the ini option gotchas_python") in text


def test_missing_interpreter_skip_points_at_the_case(pytester: pytest.Pytester, write_chapter) -> None:
    # BUG in plugin.py (GotchaItem.runtest): `pytest.skip(message)` is reported at the plugin's own line
    # ("SKIPPED [1] .../pytest_gotchas/plugin.py:90: ..."), not at the case. pytest's own skip marks use the item's
    # location (`raise pytest.skip.Exception(message, _use_item_location=True)`, which reads reportinfo()).
    _, text = write_chapter(MISSING)
    result = pytester.runpytest("--gotchas", "-rs")
    skipped = [ln for ln in result.outlines if ln.startswith("SKIPPED [1] ")]
    assert len(skipped) == 1, result.stdout.str()
    assert skipped[0].startswith(f"SKIPPED [1] a.yaml:{line_of(text, '- id: nowhere')}: no working python3.99"), \
        f"the skip is reported at the plugin's own line, not at the case: {skipped[0]!r}"


def test_gotchas_python_of_the_wrong_version_is_rejected(pytester: pytest.Pytester, write_chapter, py312) -> None:
    write_chapter(MISSING)
    result = pytester.runpytest("--gotchas", "-rs", f"--gotchas-python=3.99={py312.path}")
    assert result.parseoutcomes() == {"skipped": 1}
    assert (f"no working python3.99 found (tried: {py312.path}: is Python {py312.version}); point to one with "
            f"--gotchas-python 3.99=/path/to/python3.99 or the ini option gotchas_python") in result.stdout.str()


def test_gotchas_python_is_used(pytester: pytest.Pytester, write_chapter, py312) -> None:
    if py312.path != PY312_PATH:
        pytest.skip(f"python3.12 is not at {PY312_PATH}")
    # the chapter asks for 3.12; point it at the interpreter explicitly (through a symlink, to see it is used)
    link = pytester.path / "bin" / "mypython"
    link.parent.mkdir()
    link.symlink_to(PY312_PATH)
    write_chapter(UNSEEDED_SET)
    result = pytester.runpytest("--gotchas", f"--gotchas-python=3.12={PY312_PATH}")
    assert result.parseoutcomes() == {"unscored": 1}, result.stdout.str()
    reprec = pytester.inline_run("--gotchas", f"--gotchas-python=3.12={link}")
    (report,) = [r for r in reprec.getreports("pytest_runtest_logreport") if r.when == "call"]
    assert report.gotchas[0]["status"] == "unscored"
    assert report.gotchas[0]["interpreter"] == f"{py312.version} {link}"


def test_gotchas_python_that_does_not_exist(pytester: pytest.Pytester, write_chapter) -> None:
    write_chapter(UNSEEDED_SET)
    result = pytester.runpytest("--gotchas", "-rs", "--gotchas-python=3.12=/nonexistent/python3.12")
    assert result.parseoutcomes() == {"skipped": 1}
    assert ("no working python3.12 found (tried: /nonexistent/python3.12: does not exist); point to one with "
            "--gotchas-python 3.12=/path/to/python3.12 or the ini option gotchas_python") in result.stdout.str()


@pytest.mark.parametrize("value", ["3.99", "3.12:/usr/bin/python3.12", "=/usr/bin/python3", "3.12=", "py3.12=/x"])
def test_bad_gotchas_python_value_is_a_usage_error(pytester: pytest.Pytester, value: str) -> None:
    result = pytester.runpytest("--gotchas", f"--gotchas-python={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (f"pytest.main(): error: argument --gotchas-python: expects VERSION=PATH (e.g. 3.12=/usr/bin/python3.12), "
            f"got {value!r}" in result.errlines)


@pytest.mark.parametrize("value", ["3.99", "3.12:/usr/bin/python3.12"])
def test_bad_gotchas_python_in_the_ini_is_a_usage_error(pytester: pytest.Pytester, value: str) -> None:
    pytester.makeini(f"[pytest]\ngotchas = true\ngotchas_python = {value}\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (f"ERROR: ini option gotchas_python expects VERSION=PATH (e.g. 3.12=/usr/bin/python3.12), got {value!r}"
            in result.errlines)


# -- crashes ------------------------------------------------------------------------------------------------------

SEGFAULT = """
- id: segfault
  transcript: |-
    $ python -c "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"
    █
  correct: "a"
  wrong: "b"
"""


def assert_crash_lines(result: pytest.RunResult, first: str, version: str) -> None:
    """The summary row of a crash, and the interpreter's exact version in the lines that follow it."""
    lines = result.outlines
    assert first in lines, result.stdout.str()
    following = lines[lines.index(first) + 1:lines.index(first) + 4]
    assert version in [ln.strip() for ln in following], result.stdout.str()


def test_crash_is_its_own_category_with_signal_and_version(pytester: pytest.Pytester, write_chapter, py312) -> None:
    write_chapter(SEGFAULT)
    result = pytester.runpytest("--gotchas", "-v")
    outcomes = result.parseoutcomes()
    assert outcomes == {"crash": 1}, result.stdout.str()
    assert result.ret == pytest.ExitCode.OK
    assert "a.yaml::segfault CRASH" in result.stdout.str()
    assert_crash_lines(result, "  segfault  crash      the interpreter crashed: killed by SIGSEGV (seed 1)",
                       describe(py312).strip())
    assert "not what Python prints" not in result.stdout.str()


def test_crash_data_in_the_report(pytester: pytest.Pytester, write_chapter, py312) -> None:
    write_chapter(SEGFAULT)
    reprec = pytester.inline_run("--gotchas")
    (report,) = [r for r in reprec.getreports("pytest_runtest_logreport") if r.when == "call"]
    (data,) = report.gotchas
    assert data["status"] == "crash" and data["verdict"] is None
    assert data["interpreter"] == f"{py312.version} {py312.path}"
    assert "killed by SIGSEGV" in data["message"] and f"python {py312.version} at {py312.path}" in data["message"]
    json.dumps(data)  # plain data: it travels from xdist workers to the controller


def _segfaults(py) -> bool:
    snippet = "def f():\n    lambda: k\n    k = 1\n    print([locals() for k in [0]])\nf()"
    return subprocess.run([py.path, "-c", snippet], capture_output=True).returncode == -11


def test_real_chapter4_crashes_under_python313(pytester: pytest.Pytester, py313) -> None:
    if not _segfaults(py313):
        pytest.skip(f"python {py313.version} does not segfault on the ch.4 snippet here")
    shutil.copy(CASES_DIR / "4-versions.yaml", pytester.path)
    result = pytester.runpytest("--gotchas", "-v", "-k", "locals-py313")
    assert result.parseoutcomes() == {"crash": 1, "deselected": 2}, result.stdout.str()
    assert_crash_lines(result, "  locals-py313  crash      the interpreter crashed: killed by SIGSEGV (seed 1)",
                       f"(python {py313.version} at {py313.path}; no variables set; 3 runs)")


# -- implementation-defined chapters ------------------------------------------------------------------------------


def test_implementation_defined_mismatch_warns_and_skips(pytester: pytest.Pytester, write_chapter, py312) -> None:
    header = HEADER.replace("cases:", "implementation_defined: true\ncases:")
    _, text = write_chapter(ONE_CASE.replace('"2"', '"4"') + MISSING, header=header)
    result = pytester.runpytest("--gotchas", "-rs", "-W", "always::pytest_gotchas.plugin.hooks.GotchasWarning")
    assert result.ret == pytest.ExitCode.OK
    assert result.parseoutcomes() == {"skipped": 2, "warnings": 1}, result.stdout.str()
    line = line_of(text, "- id: plus")
    assert_block(result, [
        f"  {pytester.path / 'a.yaml'}:{line}: GotchasWarning: a.yaml:{line}: case 'plus': `correct` '4' is not what "
        f"Python prints at the cut; it prints '2\\n'",
        "    at line 2 of the transcript, after '>>> 1 + 1\\n':",
        "      transcript: '4'",
        "      python:     '2\\n'",
        f"  {describe(py312)}",
        "    (implementation-defined chapter: the case is left out of scoring)",
    ])
    # the rest of the file still collects and runs: the case is excluded, the other one skipped as usual
    pyenv = Path(os.environ.get("PYENV_ROOT", "~/.pyenv")).expanduser()
    assert ("  plus     excluded   `correct` '4' is not what Python prints at the cut; "
            "it prints '2\\n'") in result.outlines
    assert (f"  nowhere  skipped    no working python3.99 found (tried: PATH: no python3.99; {pyenv}/versions/3.99.*/"
            f"bin/python3.99: none; /usr/local/bin/python3.99: does not exist; /usr/bin/python3.99: does not exist); "
            f"point to one with --gotchas-python 3.99=/path/to/python3.99 or the ini option gotchas_python"
            ) in result.outlines


def test_implementation_defined_warning_can_be_an_error(pytester: pytest.Pytester, write_chapter, py312) -> None:
    header = HEADER.replace("cases:", "implementation_defined: true\ncases:")
    write_chapter(ONE_CASE.replace('"2"', '"4"'), header=header)
    result = pytester.runpytest("--gotchas", "--collect-only", "-W", "error::pytest_gotchas.plugin.hooks.GotchasWarning")
    assert result.ret != pytest.ExitCode.OK
    assert "GotchasWarning: a.yaml:" in result.stdout.str()


# -- the transcript cache -----------------------------------------------------------------------------------------


def test_transcript_cache_is_used_on_the_second_run(pytester: pytest.Pytester, write_chapter, monkeypatch,
                                                    py312) -> None:
    write_chapter(ONE_CASE + UNSEEDED_SET)
    calls = []
    real = execute_mod.execute

    def counting(request, runs, limits):
        calls.append(request)
        return real(request, runs, limits)

    monkeypatch.setattr(execute_mod, "execute", counting)
    first = pytester.runpytest("--gotchas", "--collect-only", "-q")
    assert first.ret == pytest.ExitCode.OK, first.stdout.str()
    assert len(calls) == 2
    cache_dir = pytester.path / ".pytest_cache" / "d" / "gotchas" / "transcripts"
    stored = sorted(p.name for p in cache_dir.glob("*.json"))
    assert len(stored) == 2
    for path in cache_dir.glob("*.json"):
        runs = json.loads(path.read_text())["payload"]
        assert [r["seed"] for r in runs] == ["1", "2", "3"]
        assert all(r["text"].startswith(">>> ") for r in runs)

    second = pytester.runpytest("--gotchas", "--collect-only", "-q")
    assert second.ret == pytest.ExitCode.OK
    assert len(calls) == 2, "the second collection executed again instead of reading the cache"
    assert sorted(p.name for p in cache_dir.glob("*.json")) == stored

    third = pytester.runpytest("--gotchas", "--collect-only", "-q", "--gotchas-runs", "2")
    assert third.ret == pytest.ExitCode.OK
    assert len(calls) == 4, "a different number of runs is a different cache entry"


# -- selection and the real chapters ------------------------------------------------------------------------------


def test_k_selects_one_chapter_by_its_name(pytester: pytest.Pytester, write_chapter) -> None:
    write_chapter(MISSING, name="a.yaml", header=HEADER.replace("chapter: demo", "chapter: sets"))
    write_chapter(MISSING + MISSING.replace("nowhere", "elsewhere"), name="b.yaml",
                  header=HEADER.replace("chapter: demo", "chapter: floats"))
    result = pytester.runpytest("--gotchas", "--collect-only", "-q", "-k", "sets")
    assert [ln for ln in result.outlines if "::" in ln] == ["a.yaml::nowhere"]
    assert "1/3 tests collected (2 deselected)" in result.stdout.str()


def _real_case_ids() -> list[str]:
    ids = []
    for path in sorted(CASES_DIR.glob("*.yaml")):
        ids += [f"cases/{path.name}::{case.id}" for case in load_chapter(path).cases]
    return ids


SPEC_CHAPTERS = ("0-pep289.yaml", "1-floats.yaml", "2-sets.yaml", "3-bound-methods.yaml", "4-versions.yaml")


def test_real_cases_are_all_listed(pytester: pytest.Pytester) -> None:
    """The spec's 36 cases (35 scored, one unscored), whatever chapters the project adds beside them."""
    (pytester.path / "cases").mkdir()
    for name in SPEC_CHAPTERS:
        shutil.copy(CASES_DIR / name, pytester.path / "cases")
    # No interpreter is needed to list them: point every version at a program that is not Python.
    missing = [f"--gotchas-python={v}=/bin/false" for v in ("3.11", "3.12", "3.13")]
    result = pytester.runpytest("--gotchas", "--collect-only", "-q", "cases", *missing)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    listed = [ln for ln in result.outlines if "::" in ln]
    assert len(listed) == 36
    assert listed == [i for i in _real_case_ids() if i.split("/")[1].split("::")[0] in SPEC_CHAPTERS]
    assert "36 tests collected" in result.stdout.str()


CHUNK = 4  # cases per ground-truth test, to keep each test fast


def _chunks() -> list[tuple[str, int]]:
    return [(path.name, start) for path in sorted(CASES_DIR.glob("*.yaml"))
            for start in range(0, len(load_chapter(path).cases), CHUNK)]


@pytest.mark.parametrize("name, start", _chunks(), ids=lambda v: str(v))
def test_real_chapter_ground_truth_holds(pytester: pytest.Pytester, name: str, start: int) -> None:
    """The real cases' prompts, correct and wrong agree with the interpreters on this machine (a few cases at a
    time, two runs each, to stay fast; ch.4's 3.13 case is a crash here, never a refusal)."""
    for version in ("3.11", "3.12", "3.13"):
        interpreter(version)
    data = yaml.safe_load((CASES_DIR / name).read_text(encoding="utf-8"))
    data["cases"] = data["cases"][start:start + CHUNK]
    data.pop("pairs", None), data.pop("twins", None)
    pytester.path.joinpath(name).write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False),
                                            encoding="utf-8")
    result = pytester.runpytest("--gotchas", "--collect-only", "-q", "--gotchas-runs", "2")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert [ln for ln in result.outlines if "::" in ln] == [f"{name}::{case['id']}" for case in data["cases"]]
