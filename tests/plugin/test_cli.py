"""What `gotchas new` writes, run by pytest: a printed case pasted into a chapter collects and scores as the
command said, an appended case collects with the file's other cases, and a case whose output changes between
runs is refused before anything is written.

The command runs in-process (`main([...])`, output through capsys); scoring uses the tiny model of
helpers/tinymodel.py, whose logits are set by hand.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from helpers.authoring import CHAPTER, LATE_CLOSURE, LATE_CLOSURE_CASE, RULES, error_of, new, printed_case
from helpers.tinymodel import build_tiny_model

from pytest_gotchas.cases.chapter import load_chapter
from pytest_gotchas.cli import main


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", RULES)


def test_snippet_to_case_that_collects_and_scores(snippet, capsys: pytest.CaptureFixture[str], tiny: Path,
                                                  pytester: pytest.Pytester, py311) -> None:
    cache = pytester.path / "model-cache"
    code = main(new(snippet(LATE_CLOSURE), "--interpreter", "3.11", "--wrong", "[0, 1, 2]", "--id", "late-closure",
                    "--model", str(tiny), "--cache-dir", str(cache)))
    out = capsys.readouterr().out
    assert code == 0, out
    assert textwrap.dedent(f"""\
        model {tiny} (bfloat16, cpu):
          text reading (the verdict): every token (and chain of tokens) that writes the candidate
            P(correct) 26.95%  P(wrong) 73.05%  coverage 100.00%  margin 46.09%  -> MISS
            correct: '2' 26.95%
            wrong:   '0' 73.05%
          token reading: one token each, at the cut
            P(correct) 26.95%  P(wrong) 73.05%  coverage 100.00%  margin 46.09%  -> MISS
            correct: '2'
            wrong:   '0'
        """) in out
    assert "WARNING" not in out
    assert "  verdict: MISS\n" in out
    case = printed_case(out)
    assert case == LATE_CLOSURE_CASE + '    interpreter: "3.11"\n'
    # The printed case, pasted into a chapter, collects and scores the same under pytest.
    pytester.path.joinpath("ch.yaml").write_text("chapter: pasted\ntitle: pasted\ncases:\n" + case)
    result = pytester.runpytest("--gotchas", "--gotchas-model", str(tiny), "--gotchas-cache-dir", str(cache), "-v")
    assert result.parseoutcomes() == {"MISS": 1}
    result.stdout.fnmatch_lines(["*ch.yaml::late-closure MISS  P(correct) 26.95%  P(wrong) 73.05%  coverage 100.00%*"])


def test_append_keeps_the_file_and_collects(snippet, capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                            pytester: pytest.Pytester, py311) -> None:
    chapter = pytester.path / "demo.yaml"
    chapter.write_text(CHAPTER)
    chapter.chmod(0o640)
    code = main(new(snippet(LATE_CLOSURE), "--wrong", "[0, 1, 2]", "--to", str(chapter), "--id", "late-closure",
                    "--note", "reads i after the loop"))
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.endswith(f"\nwrote case 'late-closure' to {chapter}:22\n")
    assert "\na case is one test; a pair, which the run counts and CI gates, is two cases that differ in one " \
           "construct\nand whose right answers differ: write the partner with `gotchas new` too, then list both " \
           "under `pairs:` in the\nchapter (docs/cases.md)\n\nwrote case" in out
    # Appended as text after the last case: comments, blank lines and the rest of the file are untouched.
    head, tail = CHAPTER.split("\n# pairs belong here\n")
    assert chapter.read_text() == (head + "\n" + LATE_CLOSURE_CASE + '    note: "reads i after the loop"\n'
                                   + "\n# pairs belong here\n" + tail)
    assert chapter.stat().st_mode & 0o777 == 0o640
    assert not [p.name for p in pytester.path.iterdir() if p.name.startswith(".demo.yaml")]
    loaded = load_chapter(chapter)
    assert [c.id for c in loaded.cases] == ["plus", "minus", "late-closure"]
    assert loaded.cases[2].note == "reads i after the loop"
    result = pytester.runpytest("--gotchas", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["demo.yaml::late-closure", "3 tests collected*"])


def test_output_that_changes_between_runs_is_refused(snippet, capsys, pytester: pytest.Pytester, py311) -> None:
    chapter = pytester.path / "demo.yaml"
    chapter.write_text(CHAPTER)
    code = main(new(snippet("set(str(x) for x in range(5))\n"), "--wrong", "{'0', '1', '2', '3', '4'}",
                    "--to", str(chapter), "--id", "strings"))
    err = error_of(capsys, code)
    assert err.startswith(f"gotchas new: error: collection would refuse {chapter}, nothing was written:\n"
                          f"{chapter}:22: case 'strings': the answer changes between runs: it holds under "
                          "PYTHONHASHSEED=")
    assert err.endswith("\n(the output changes with the hash seed: pin it with --env PYTHONHASHSEED=0)\n")
    assert chapter.read_text() == CHAPTER
    assert not [p.name for p in pytester.path.iterdir() if p.name.startswith(".demo.yaml")]
