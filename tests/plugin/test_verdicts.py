"""Scoring through the plugin, driven by a tiny model whose next-token logits the test chooses: every verdict,
healed and untokenizable cuts, prime-dep, the JSON report, and xdist giving what a serial run gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.reportdata import PRIMED, WINDOW_RULES  # the primed chapter: the last primer answer decides
from helpers.results import comparable_report, read_report
from helpers.tinymodel import build_tiny_model


pytest.importorskip("transformers")

RULES = {
    "a": {"7": 2.0, "8": 1.0},  # ok
    "b": {"7": 1.0, "8": 2.0},  # MISS
    "c": {"7": 1.5, "8": 1.5},  # an exact tie
    "d": {"x": 8.0},  # noise: neither candidate
    "6": {"),": 2.0, ")]": 1.0},  # the healed cut of `[(5, 6)█`: `),` against `)]`
    "\n": {"3": 1.0, "4": 1.0},
}

CHAPTER = """\
chapter: demo
title: "verdicts on a tiny model"
interpreter: "3.11"
env: {PYTHONHASHSEED: "0"}
cases:
  - id: right
    transcript: |-
      >>> print("a7")
      a█
    correct: "7"
    wrong: "8"
  - id: wrong
    transcript: |-
      >>> print("b7")
      b█
    correct: "7"
    wrong: "8"
  - id: even
    transcript: |-
      >>> print("c7")
      c█
    correct: "7"
    wrong: "8"
  - id: elsewhere
    transcript: |-
      >>> print("d7")
      d█
    correct: "7"
    wrong: "8"
  - id: healed
    transcript: |-
      >>> [(5, 6), (7, 8)]
      [(5, 6)█
    correct: ","
    wrong: "]"
pairs:
  good-pair: [right, healed]
  bad-pair: [right, wrong]
"""


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", RULES, window_rules=WINDOW_RULES, window=16)


@pytest.fixture
def run(pytester: pytest.Pytester, tiny_model: Path):
    def run(*args: str, chapters: dict[str, str] | None = None):
        for name, text in (chapters or {"demo.yaml": CHAPTER}).items():
            (pytester.path / name).write_text(text)
        return pytester.runpytest_subprocess("--gotchas", "--gotchas-model", str(tiny_model),
                                             "--gotchas-cache-dir", str(pytester.path / "models"), *args)
    return run


def test_every_verdict_is_its_own_category(run) -> None:
    result = run("-v")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert result.parseoutcomes() == {"ok": 2, "MISS": 1, "tie": 1, "noise": 1}
    result.stdout.fnmatch_lines([
        "demo.yaml::right ok  P(correct) 73.05%  P(wrong) 26.95%  coverage 100.00%  margin 46.09%*",
        "demo.yaml::wrong MISS  P(correct) 26.95%  P(wrong) 73.05%*",
        "demo.yaml::even tie  P(correct) 50.00%  P(wrong) 50.00%  coverage 100.00%  margin 0.00%*",
        "demo.yaml::elsewhere noise  P(correct) 0.00%  P(wrong) 0.00%*",
        "demo.yaml::healed ok  P(correct) 73.05%  P(wrong) 26.95%*healed cut: '),' vs ')]'*",
    ])


def test_summary_has_the_chapter_table_and_pairs(run) -> None:
    result = run()
    result.stdout.fnmatch_lines([
        "verdicts on a tiny model",
        "  case       verdict    P(correct)  P(wrong)  coverage   margin  cut",
        "  right      ok             73.05%    26.95%   100.00%   46.09%",
        "  wrong      MISS           26.95%    73.05%   100.00%   46.09%",
        "  even       tie            50.00%    50.00%   100.00%    0.00%",
        "  healed     ok             73.05%    26.95%   100.00%   46.09%  healed cut: '),' vs ')]'; plain reading *",
        "  pair good-pair: pass (right ok, healed ok)",
        "  pair bad-pair: FAIL (right ok, wrong MISS)",
        "  verdicts on a tiny model: 1/2 pairs",
    ])


def test_prime_dep_when_the_primer_order_changes_the_verdict(run) -> None:
    result = run("-v", chapters={"primed.yaml": PRIMED})
    assert result.parseoutcomes() == {"prime_dep": 1, "ok": 1}, result.stdout.str()
    result.stdout.fnmatch_lines([
        "primed.yaml::swayed prime-dep  [[]F-last: ok *|*T-last: MISS *[]]*",
        "primed.yaml::steady ok  [[]F-last: ok *|*T-last: ok *[]]*",
        "  pair mixed: FAIL (swayed prime-dep, steady ok)",
        "ch.1 primers decide: 0/1 pairs [[]0.0%, 79.3%[]]; 1/2 cases ok *",
    ])


def test_json_report_carries_every_number(run, pytester: pytest.Pytester) -> None:
    result = run("--gotchas-json", "out.json", chapters={"demo.yaml": CHAPTER, "primed.yaml": PRIMED})
    assert result.ret == pytest.ExitCode.OK
    data = read_report(pytester.path / "out.json")
    assert {"format", "models", "chapters", "cases", "pairs", "rollups"} <= set(data)
    assert data["models"][0]["dtype"] == "bfloat16" and data["models"][0]["device"] == "cpu"
    case = next(c for c in data["cases"] if c["id"] == "swayed")
    assert {"id", "chapter", "verdict", "runs"} <= set(case)
    assert case["chapter"] == "primed" and case["verdict"] == "prime-dep"
    first = case["runs"][0]
    assert {"primer", "prompt", "p_correct", "p_wrong", "coverage", "margin", "verdict"} <= set(first)
    assert first["primer"] == "F-last"
    assert first["prompt"] == '>>> print("T")\nT\n>>> print("F")\nF\n>>> print(3)\n'
    assert [r["verdict"] for r in case["runs"]] == ["ok", "MISS"]
    healed = next(c for c in data["cases"] if c["id"] == "healed")["runs"][0]["readings"]
    token = healed["token"]
    assert (token["kind"], token["correct_tokens"], token["wrong_tokens"]) == ("healed", ["),"], [")]"])
    assert healed["plain"]["p_correct"] is not None
    assert {f'{p["chapter"]}/{p["id"]}': p["passed"] for p in data["pairs"]} == {
        "demo/good-pair": True, "demo/bad-pair": False, "primed/mixed": False}
    assert [c["label"] for c in data["chapters"]] == ["verdicts on a tiny model", "ch.1 primers decide"]
    assert [(r["chapter"], r["pairs_passed"], r["pairs_counted"]) for r in data["rollups"]] == [
        ("demo", 1, 2), ("primed", 0, 1)]


def test_float32_softmax_is_recorded(run, pytester: pytest.Pytester) -> None:
    run("--gotchas-json", "out.json", "--gotchas-softmax-dtype", "float32")
    data = read_report(pytester.path / "out.json")
    right = next(c for c in data["cases"] if c["id"] == "right")["runs"][0]["readings"]
    assert right["token"]["softmax_dtype"] == "float32"
    assert right["token"]["p_correct"] == pytest.approx(0.7310586, abs=1e-6)  # finer than bfloat16's 0.73046875
    # the same logits through the model's own softmax, for comparison
    assert (right["other-softmax"]["softmax_dtype"], right["other-softmax"]["p_correct"]) == ("bfloat16", 0.73046875)


def test_the_run_shows_which_verdicts_the_softmax_dtype_decides(run, pytester: pytest.Pytester) -> None:
    result = run("--gotchas-json", "out.json")
    data = read_report(pytester.path / "out.json")
    right = next(c for c in data["cases"] if c["id"] == "right")["runs"][0]["readings"]
    assert (right["token"]["softmax_dtype"], right["token"]["p_correct"]) == ("bfloat16", 0.73046875)
    assert right["other-softmax"]["softmax_dtype"] == "float32"
    assert right["other-softmax"]["p_correct"] == pytest.approx(0.7310586, abs=1e-6)
    # equal logits tie in either dtype: the ties come from the logits, not from the softmax
    result.stdout.fnmatch_lines(["softmax in bfloat16; in float32 0 of 5 case verdicts would differ"])


ACCENT = """\
chapter: accents
title: "a candidate the tokenizer cannot spell"
interpreter: "3.11"
cases:
  - id: accent
    transcript: |-
      >>> print("x\u00e9")
      x\u2588
    correct: "\u00e9"
    wrong: "e"
"""


def test_untokenizable_cut_is_an_error_naming_the_case(run) -> None:
    result = run(chapters={"accents.yaml": ACCENT})
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    assert result.parseoutcomes() == {"failed": 1}
    result.stdout.fnmatch_lines(["*accents.yaml:5: case 'accent': cut not representable by this tokenizer*"])
    assert "Traceback" not in result.stdout.str()


def test_a_model_that_will_not_load_is_one_clear_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "demo.yaml").write_text(CHAPTER)
    missing = pytester.path / "no-such-model"
    result = pytester.runpytest_subprocess("--gotchas", "--gotchas-model", str(missing))
    assert result.ret == pytest.ExitCode.INTERRUPTED  # the run stops at the first case that needed the model
    assert result.parseoutcomes().get("failed") == 1, result.stdout.str()
    assert "Traceback" not in result.stdout.str()
    result.stdout.fnmatch_lines([f"*{missing}*", "*Interrupted: gotchas: the model could not be loaded*"])


def test_collect_only_never_imports_torch(pytester: pytest.Pytester) -> None:
    (pytester.path / "demo.yaml").write_text(CHAPTER)
    (pytester.path / "conftest.py").write_text(
        "import sys\n"
        "def pytest_unconfigure(config):\n"
        "    sys.__stdout__.write('torch imported: %s\\n' % ('torch' in sys.modules))\n"
        "    sys.__stdout__.write('page imported: %s\\n' % ('pytest_gotchas.report.page' in sys.modules))\n")
    result = pytester.runpytest_subprocess("--gotchas", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    # nor the HTML report's views, which only a run that writes the page needs
    result.stdout.fnmatch_lines(["5 tests collected*", "torch imported: False", "page imported: False"])


def test_xdist_gives_the_serial_results(run, pytester: pytest.Pytester) -> None:
    chapters = {"demo.yaml": CHAPTER, "primed.yaml": PRIMED}
    serial = run("--gotchas-json", "serial.json", chapters=chapters)
    parallel = run("--gotchas-json", "parallel.json", "-n", "2", chapters=chapters)
    assert serial.ret == parallel.ret == pytest.ExitCode.OK
    assert serial.parseoutcomes()["ok"] == parallel.parseoutcomes()["ok"]

    assert comparable_report(pytester.path / "serial.json") == comparable_report(pytester.path / "parallel.json")

    def summary(result) -> list[str]:
        lines = result.outlines
        start = next(n for n, ln in enumerate(lines) if "gotchas" in ln and ln.startswith("="))
        # the baseline hint repeats the command line, which differs by `-n 2`
        return [ln for ln in lines[start:] if not ln.startswith(("=", "baseline:"))]

    assert summary(serial) == summary(parallel)
