"""Variants of a case: each executed and verified like the case at collection, put to the model with
--gotchas-variants, and a case whose transcripts answer unlike is surface-dep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.tinymodel import build_tiny_model

from pytest_gotchas.cases.chapter import load_chapter

CHAPTER = """\
chapter: demo
title: "names decide"
interpreter: "3.12"
cases:
  - id: named
    transcript: |-
      >>> xs = [7]
      >>> xs
      [█
    correct: "7"
    wrong: "8"
    variants:
      - id: rename-ys
        transcript: |-
          >>> ys = [7]
          >>> ys
          [█
        correct: "7"
        wrong: "8"
      - id: rename-zs
        transcript: |-
          >>> zs = [7]
          >>> zs
          [█
        correct: "7"
        wrong: "8"
  - id: steady
    transcript: |-
      >>> print("a7")
      a█
    correct: "7"
    wrong: "8"
pairs:
  both: [named, steady]
"""
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
    result = run("--collect-only", text=text)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*demo.yaml:5: case 'named': variant 'rename-zs': `correct` '7' is not what Python "
                                 "prints at the cut, `wrong` '8' is*"])


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
    case = next(c for c in json.loads((pytester.path / "out.json").read_text())["cases"] if c["id"] == "named")
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


def test_vary_refuses_a_shell_case(tmp_path: Path, capsys) -> None:
    from pytest_gotchas.cli import main

    chapter = tmp_path / "demo.yaml"
    chapter.write_text('chapter: demo\ntitle: demo\ncases:\n  - id: sh\n    transcript: |-\n      $ python3.12 -c '
                       '"print(1)"\n      █\n    correct: "1"\n    wrong: "2"\n')
    assert main(["vary", str(chapter), "--id", "sh"]) == 1
    assert capsys.readouterr().err == (f"gotchas vary: error: {chapter}:4: case 'sh': only scored REPL cases can be "
                                       "varied (a shell case's program is one quoted argument)\n")


def test_rewrites_that_fit_any_expression_parenthesize_it_and_add_an_import() -> None:
    from pytest_gotchas.cli.rewrite import rewrites

    found = {r.id: r.lines for r in rewrites(("0.1 + 0.2 == 0.3",), 12)}
    assert found == {"unrelated-line": ("_unrelated = 0", "0.1 + 0.2 == 0.3"),
                     "parenthesized": ("(0.1 + 0.2 == 0.3)",),
                     "unrelated-import": ("import math", "0.1 + 0.2 == 0.3")}
    # A last line that is not one expression (an assignment, a block) is not parenthesized.
    assert "parenthesized" not in {r.id for r in rewrites(("x = 1",), 12)}
    assert "parenthesized" not in {r.id for r in rewrites(("for i in []:", "    i", ""), 12)}


def test_word_strings_change_in_the_code_and_in_the_misreading_alike() -> None:
    from pytest_gotchas.cli.rewrite import change_strings

    rewrite = change_strings(("d = {'key': 1, '%d': 2}", 'd["key"]', "'a1'"))
    assert rewrite is not None and rewrite.id == "strings-shifted"
    assert rewrite.lines == ("d = {'lfz': 1, '%d': 2}", 'd["lfz"]', "'a1'")
    assert rewrite.text("{'key': 1, '%d': 2}") == "{'lfz': 1, '%d': 2}"
    assert change_strings(("'%s' % 3",)) is None


def test_vary_tries_only_the_kinds_asked_for(capsys) -> None:
    from pytest_gotchas.cli import main
    from pytest_gotchas.cli.rewrite import rewrites

    lines = ("xs = [7, 2]", "xs")
    assert [r.id for r in rewrites(lines, 12, ("rename", "parenthesized"))] == [
        "rename-ys", "rename-items", "rename-data", "rename-p", "parenthesized"]
    with pytest.raises(SystemExit):
        main(["vary", "demo.yaml", "--id", "named", "--kinds", "rename,digits"])
    assert "--kinds: unknown kind(s) digits; choose from rename, integers, unrelated, strings, parenthesized, import" \
        in capsys.readouterr().err


def test_class_body_names_are_attributes_and_never_renamed() -> None:
    from pytest_gotchas.cli.rewrite import bound_names

    names = bound_names(("class C:", "    n = 1", "    def f(self): pass", "", "c = C()", "c.n"))
    assert sorted(names) == ["C", "c", "self"]  # not n, not f: they are read as c.n and c.f


def test_a_rename_that_changes_what_the_program_prints_is_not_a_variant(tmp_path: Path, capsys, py312) -> None:
    """Renaming xs changes what globals().get("xs") finds: the cut would still verify, on another question."""
    from pytest_gotchas.cli import main

    chapter = tmp_path / "demo.yaml"
    chapter.write_text('chapter: demo\ntitle: demo\ninterpreter: "3.12"\ncases:\n  - id: g\n    transcript: |-\n'
                       '      >>> xs = 7\n      >>> globals().get("xs", 0)\n      █\n    correct: "7"\n    wrong: "8"\n')
    assert main(["vary", str(chapter), "--id", "g", "-n", "1", "--kinds", "rename"]) == 1
    captured = capsys.readouterr()
    assert "  rename-ys: skipped: it prints '0\\n', not what the case prints rewritten alike ('7'...): the rewriting " \
           "changed the program\n" in captured.out
    assert captured.err == "gotchas vary: error: no variant of 'g' verifies; nothing was written\n"
