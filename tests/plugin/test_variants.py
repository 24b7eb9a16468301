"""Variants of a case through the plugin: each executed and verified like the case at collection, put to the
model with --gotchas-variants, and a case whose transcripts answer unlike is surface-dep; `gotchas vary` proposes
variants that collect and score."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.tinymodel import build_tiny_model
from helpers.variants import CHAPTER
from helpers.results import read_report

from pytest_gotchas.cases.chapter import load_chapter

# After "[" the model says 7; a "y" anywhere in the last 12 tokens turns it to 8: the verdict belongs to a name.
RULES = {"[": {"7": 2.0, "8": 1.0}, "a": {"7": 2.0, "8": 1.0}}
WINDOW_RULES = {"y": {"8": 4.0}}


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", RULES, window_rules=WINDOW_RULES, window=12)


@pytest.fixture
def run(pytester: pytest.Pytester, model: Path, py312):
    def go(*args: str, text: str = CHAPTER) -> pytest.RunResult:
        (pytester.path / "demo.yaml").write_text(text)
        return pytester.runpytest_subprocess("--gotchas", "--gotchas-model", str(model), "--gotchas-cache-dir",
                                             str(pytester.path / "cache"), "-p", "no:randomly", *args)

    return go


def test_a_variant_whose_truth_does_not_verify_is_refused(run) -> None:
    text = CHAPTER.replace("          >>> zs = [7]", "          >>> zs = [8]")
    result = run("--collect-only", "--gotchas-variants", text=text)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*demo.yaml:5: case 'named': variant 'rename-zs': `correct` '7' is not what Python "
                                 "prints at the cut, `wrong` '8' is*"])


def test_without_the_option_no_variant_is_executed(run, pytester: pytest.Pytester) -> None:
    """A run executes what it scores: the broken variant above is not run, so not refused either (the library's
    CI collects with --gotchas-variants to catch it)."""
    text = CHAPTER.replace("          >>> zs = [7]", "          >>> zs = [8]")
    assert run("--collect-only", text=text).ret == pytest.ExitCode.OK
    result = run("--gotchas-json", "out.json", "-p", "no:cacheprovider", text=text)
    assert result.parseoutcomes() == {"ok": 2}
    timings = read_report(pytester.path / "out.json")["run"]["timings"]
    assert timings["transcript_cache"] == {"hits": 0, "misses": 2}  # the two cases' own transcripts, no variant


def test_without_the_option_a_run_is_the_write_ups_method(run) -> None:
    result = run()
    assert result.parseoutcomes() == {"ok": 2}


def test_a_verdict_that_belongs_to_a_name_is_surface_dep(run, pytester: pytest.Pytester) -> None:
    result = run("--gotchas-variants", "--gotchas-json", "out.json", "-v")
    assert result.parseoutcomes() == {"surface_dep": 1, "ok": 1}
    result.stdout.fnmatch_lines([
        "*demo.yaml::named surface-dep  [[]ok 2, MISS 1 over 3 runs with variants]*",
        "  pair both: FAIL (named surface-dep, steady ok)",
        "names decide: 1 of 1 cases with variants are surface-dep: named (ok 2, MISS 1)",
    ])
    case = next(c for c in read_report(pytester.path / "out.json")["cases"] if c["id"] == "named")
    assert [(r["variant"], r["verdict"]) for r in case["runs"]] == [(None, "ok"), ("rename-ys", "MISS"),
                                                                    ("rename-zs", "ok")]
    assert case["qualifiers"] == ["surface-dep"]


def test_a_variants_run_compares_with_its_own_baseline(run, pytester: pytest.Pytester) -> None:
    """surface-dep is a stricter reading, not a regression of a baseline recorded without variants."""
    here = ("--rootdir", str(pytester.path))  # baselines/ under this test's folder, not a shared parent
    run("--gotchas-update-baseline", *here).stdout.fnmatch_lines(["baseline baselines/model-bfloat16-cpu.yaml written*"])
    result = run("--gotchas-variants", *here)
    result.stdout.fnmatch_lines(["baseline: none at baselines/model-bfloat16-cpu+variants.yaml; record one with: *"])
    assert "REGRESSION" not in result.stdout.str() and result.parseoutcomes() == {"surface_dep": 1, "ok": 1}


# -- gotchas vary ---------------------------------------------------------------------------------------------------

VARY_CHAPTER = """\
# a comment that must survive
chapter: demo
title: "names decide"
interpreter: "3.12"
cases:
  - id: named
    transcript: |-
      >>> xs = [7, 2]
      >>> xs
      [█
    correct: "7"
    wrong: "2"
  - id: steady
    transcript: |-
      >>> print("a7")
      a█
    correct: "7"
    wrong: "8"
pairs:
  both: [named, steady]
"""


def test_vary_proposes_variants_that_collect_and_score(pytester: pytest.Pytester, model: Path, capsys, py312) -> None:
    from pytest_gotchas.cli import main

    chapter = pytester.path / "demo.yaml"
    chapter.write_text(VARY_CHAPTER)
    code = main(["vary", str(chapter), "--id", "named", "-n", "3", "--model", str(model), "--cache-dir",
                 str(pytester.path / "cache"), "--to", str(chapter)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "  rename-ys: cut after '[': correct '7', wrong '2'" in out
    assert "  integers-plus-1: cut after '[': correct '8', wrong '3'" in out  # 7 -> 8, and the misread 2 -> 3
    assert "  unrelated-line: cut after '[': correct '7', wrong '2'" in out
    text = chapter.read_text()
    assert text.startswith("# a comment that must survive\n") and text.endswith("pairs:\n  both: [named, steady]\n")
    case = load_chapter(chapter).cases[0]
    assert [(v.id, v.transcript.repl_input, v.correct, v.wrong) for v in case.variants] == [
        ("rename-ys", ("ys = [7, 2]", "ys"), "7", "2"),
        ("integers-plus-1", ("xs = [8, 3]", "xs"), "8", "3"),
        ("unrelated-line", ("_unrelated = 0", "xs = [7, 2]", "xs"), "7", "2")]
    result = pytester.runpytest_subprocess("--gotchas", "--gotchas-model", str(model), "--gotchas-cache-dir",
                                           str(pytester.path / "cache"), "--gotchas-variants")
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    assert sum(result.parseoutcomes().values()) == 2  # both cases scored, their variants with them
    again = main(["vary", str(chapter), "--id", "named", "-n", "3", "--cache-dir", str(pytester.path / "cache")])
    assert again == 1 and "no variant of 'named' verifies" in capsys.readouterr().err  # each id is taken already
