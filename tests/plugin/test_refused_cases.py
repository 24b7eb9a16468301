"""A case whose ground truth refuses it is an item of its own that fails with the refusal's full message: the
chapter's other cases are collected and scored, and the run (or a --collect-only check of the library) exits
non-zero. Chapter files run in the order of their numbers, numbers by value, and `-k` keeps selecting by name."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.chapters import HEADER, REFUSED_BETWEEN, REFUSED_BETWEEN_RULES, line_of
from helpers.output import assert_block
from helpers.tinymodel import build_tiny_model

CASES, RULES = REFUSED_BETWEEN, REFUSED_BETWEEN_RULES


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", RULES)


def refusal(text: str, py) -> list[str]:
    return [
        f"a.yaml:{line_of(text, '- id: bad')}: case 'bad': `correct` '5' is not what Python prints at the cut; it "
        "prints '4\\n'",
        "  at line 2 of the transcript, after '>>> 2 + 2\\n':",
        "    transcript: '5'",
        "    python:     '4\\n'",
        f"  (python {py.version} at {py.path}; no variables set; 3 runs)",
    ]


def test_a_refused_case_fails_alone_and_the_others_are_scored(pytester: pytest.Pytester, write_chapter, model: Path,
                                                              py312) -> None:
    _, text = write_chapter(CASES)
    # the rootdir, which messages name files from: else the common folder of the paths on the command line
    result = pytester.runpytest_subprocess("--rootdir", str(pytester.path), "--gotchas", "--gotchas-model", str(model), "--gotchas-cache-dir",
                                           str(pytester.path / "cache"), "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    assert result.parseoutcomes() == {"ok": 2, "failed": 1}, result.stdout.str()
    assert "error" not in result.parseoutcomes()
    assert_block(result, ["ground truth refuses this case:", *refusal(text, py312)])
    assert "FAILED a.yaml::bad - ground truth refuses this case:" in result.outlines
    assert any(line.startswith("a.yaml .F. ") for line in result.outlines)  # in the chapter's order
    assert "Traceback" not in result.stdout.str()


def test_collect_only_collects_the_others_and_fails_naming_the_refusal(pytester: pytest.Pytester, write_chapter,
                                                                       py312) -> None:
    _, text = write_chapter(CASES)
    result = pytester.runpytest("--gotchas", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    assert [line for line in result.outlines if line.startswith("a.yaml::")] == [
        "a.yaml::one", "a.yaml::bad", "a.yaml::plus"]
    assert "ERROR collecting" not in result.stdout.str()
    assert_block(result, refusal(text, py312))
    assert any("gotchas: ground truth refuses these cases" in line for line in result.outlines)


def test_collect_only_without_the_refused_case_passes(pytester: pytest.Pytester, write_chapter, py312) -> None:
    write_chapter(CASES)
    result = pytester.runpytest("--gotchas", "--collect-only", "-q", "-k", "not bad")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert "ground truth refuses" not in result.stdout.str()


def test_a_chapter_level_error_still_stops_collection(pytester: pytest.Pytester, write_chapter, py312) -> None:
    """A file that cannot be read as a chapter has no cases to keep: that stays a collection error."""
    write_chapter(CASES + "- id: one\n  transcript: x\n")
    result = pytester.runpytest("--gotchas", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "ERROR collecting a.yaml" in result.stdout.str() or "ERROR a.yaml" in result.stdout.str()


def test_chapter_files_run_in_the_order_of_their_numbers(pytester: pytest.Pytester, write_chapter, py312) -> None:
    one = """
    - id: plus
      transcript: |-
        >>> 1 + 1
        █
      correct: "2"
      wrong: "3"
    """
    for name, chapter in (("10-rounding.yaml", "rounding"), ("2-sets.yaml", "sets"), ("1-floats.yaml", "floats")):
        write_chapter(one, name=f"cases/{name}", header=HEADER.replace("chapter: demo", f"chapter: {chapter}"))
    result = pytester.runpytest("--gotchas", "--collect-only", "-q", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert [line for line in result.outlines if "::" in line] == [
        "cases/1-floats.yaml::plus", "cases/2-sets.yaml::plus", "cases/10-rounding.yaml::plus"]
    selected = pytester.runpytest("--gotchas", "--collect-only", "-q", "-p", "no:randomly", "-k", "sets")
    assert [line for line in selected.outlines if "::" in line] == ["cases/2-sets.yaml::plus"]
