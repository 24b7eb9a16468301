"""Ground truth at collection: a case whose prompt, correct or wrong text is not what Python printed is refused
with the expected and the actual text (an item of its own that fails: --collect-only exits non-zero and names it), and so are output that changes between runs, a runaway snippet and an
unscored case whose output never changes; an implementation-defined chapter warns instead; the transcript cache
runs each snippet once.

Nothing here loads a model: every run is --collect-only, or runs cases that are unscored or skip.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from helpers.chapters import HEADER, MISSING, ONE_CASE, UNSEEDED_SET, describe, line_of
from helpers.output import assert_block

from pytest_gotchas.truth import execute as execute_mod


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
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert_block(result, f"""
        a.yaml:{line_of(text, "- id: spaced")}: case 'spaced': the prompt is not what Python printed
          at line 2 of the transcript, after ">>> print(' x')\\n":
            transcript: 'x'
            python:     ' x\\n'
        {describe(py312)}
        """)


def test_correct_is_not_the_next_text(pytester: pytest.Pytester, write_chapter, py312) -> None:
    _, text = write_chapter(ONE_CASE.replace('"2"', '"4"'))
    result = pytester.runpytest("--gotchas", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "a.yaml::plus" in result.outlines  # collected, its refusal named below
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
    assert result.ret == pytest.ExitCode.TESTS_FAILED
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
    assert result.ret == pytest.ExitCode.TESTS_FAILED
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
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert_block(result, f"""
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
    assert result.ret == pytest.ExitCode.TESTS_FAILED
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


# -- implementation-defined chapters ------------------------------------------------------------------------------


def test_implementation_defined_mismatch_warns_and_skips(pytester: pytest.Pytester, write_chapter, py312) -> None:
    header = HEADER.replace("cases:", "implementation_defined: true\ncases:")
    _, text = write_chapter(ONE_CASE.replace('"2"', '"4"') + MISSING, header=header)
    result = pytester.runpytest("--gotchas", "-rs", "-W", "always::pytest_gotchas.plugin.GotchasWarning")
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
    result = pytester.runpytest("--gotchas", "--collect-only", "-W", "error::pytest_gotchas.plugin.GotchasWarning")
    assert result.ret != pytest.ExitCode.OK
    assert "GotchasWarning: a.yaml:" in result.stdout.str()


# -- the transcript cache -----------------------------------------------------------------------------------------


def test_transcript_cache_is_used_on_the_second_run(pytester: pytest.Pytester, write_chapter, monkeypatch,
                                                    py312) -> None:
    write_chapter(ONE_CASE + UNSEEDED_SET)
    calls = []
    real = execute_mod.execute

    def counting(request, runs, limits, isolation):
        calls.append(request)
        return real(request, runs, limits, isolation)

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
