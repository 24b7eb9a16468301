"""The baseline gate through pytest: record, compare, regress, improve, partial updates, refusals, xdist.

Every run scores with a tiny model whose logits are set by hand (helpers/tinymodel.py), so a case is ok or MISS at
will: the model prefers "1" after "[", "3" after "(", "5" after "{" and "y" after "'". A case is made to regress by
editing its transcript so that the preferred token becomes the wrong one, with the same model (the baseline is
per model).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
import yaml
from helpers.tinymodel import build_tiny_model

RULES = {"[": {"1": 2.0, "2": 1.0}, "(": {"3": 2.0, "4": 1.0}, "{": {"5": 2.0, "6": 1.0}, "'": {"x": 1.0, "y": 2.0}}
OTHER_RULES = {**RULES, "[": {"1": 2.5, "2": 1.0}}  # the same verdicts, other weights

# (case id, what Python prints, the cut, correct, wrong)
A_OK = ("a", ">>> [1, 2]\n[1, 2]", "[", "1", "2")
A_MISS = ("a", ">>> [2, 1]\n[2, 1]", "[", "2", "1")
B_OK = ("b", ">>> (3, 4)\n(3, 4)", "(", "3", "4")
C_OK = ("c", ">>> {5: 6}\n{5: 6}", "{", "5", "6")
D_MISS = ("d", ">>> 'xy'\n'xy'", "'", "x", "y")
D_OK = ("d", ">>> 'yx'\n'yx'", "'", "y", "x")


def chapter(name: str, cases: list[tuple[str, str, str, str, str]], pair: str) -> str:
    body = [f"chapter: {name}", f'title: "{name} chapter"', 'interpreter: "3.11"', "cases:"]
    for case_id, shown, cut, correct, wrong in cases:
        command, output = shown.split("\n")
        body += [f"  - id: {case_id}", "    transcript: |-", f"      {command}", f"      {cut}█",
                 f'    correct: "{correct}"', f'    wrong: "{wrong}"']
        assert output.startswith(cut + correct)
    body += ["pairs:", f"  {pair}: [{cases[0][0]}, {cases[1][0]}]"]
    return "\n".join(body) + "\n"


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("models")
    # Both folders are called "model": the same default baseline path, different weights.
    return {"tiny": build_tiny_model(root / "one" / "model", RULES),
            "other": build_tiny_model(root / "two" / "model", OTHER_RULES)}


@pytest.fixture
def run(pytester: pytest.Pytester, models: dict[str, Path], py311, tmp_path_factory: pytest.TempPathFactory):
    cache = tmp_path_factory.mktemp("cache")

    def go(*args: str, model: str = "tiny") -> pytest.RunResult:
        return pytester.runpytest("--gotchas", f"--gotchas-model={models[model]}", f"--gotchas-cache-dir={cache}",
                                  "--gotchas-runs=2", "-p", "no:randomly", *args)

    return go


@pytest.fixture
def chapters(pytester: pytest.Pytester):
    def write(a=A_OK, b=B_OK, c=C_OK, d=D_MISS) -> None:
        pytester.path.joinpath("alpha.yaml").write_text(chapter("alpha", [a, b], "ab"))
        pytester.path.joinpath("beta.yaml").write_text(chapter("beta", [c, d], "cd"))

    return write


SHOWN = "baselines/model-bfloat16-cpu.yaml"  # as reports name it: relative to the rootdir


def default_baseline(pytester: pytest.Pytester) -> Path:
    return pytester.path / SHOWN


def baseline_section(result: pytest.RunResult) -> list[str]:
    """The summary lines from `baseline ...` to the end of the gotchas section."""
    lines = result.outlines
    start = next(n for n, line in enumerate(lines) if line.startswith("baseline"))
    end = next(n for n in range(start, len(lines)) if lines[n].startswith("="))
    return lines[start:end]


def failures(result: pytest.RunResult) -> str:
    text = result.stdout.str()
    start = text.find("= FAILURES =")
    return text[start:text.find("short test summary", start)] if start >= 0 else ""


# -- the story: no baseline, record, compare, regress, improve ----------------------------------------------------


def test_first_run_without_a_baseline_is_green_and_says_how_to_record(run, chapters, pytester) -> None:
    chapters()
    result = run()
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert result.parseoutcomes() == {"ok": 3, "MISS": 1}
    path = default_baseline(pytester)
    (line,) = [ln for ln in result.outlines if ln.startswith("baseline")]
    assert line.startswith(f"baseline: none at {SHOWN}; record one with: pytest --gotchas ")
    assert line.endswith(" --gotchas-update-baseline")
    assert not path.exists()


def test_update_then_compare_is_green(run, chapters, pytester) -> None:
    chapters()
    recorded = run("--gotchas-update-baseline")
    assert recorded.ret == pytest.ExitCode.OK, recorded.stdout.str()
    path = default_baseline(pytester)
    assert baseline_section(recorded)[-1] == (f"baseline {SHOWN} written: 2 pairs and 4 verdicts recorded (0 changed), "
                                              "0 removed, 0 kept from cases that did not run")
    data = yaml.safe_load(path.read_text())
    assert data["pairs"] == {"alpha/ab": "pass", "beta/cd": "fail"}
    assert {k: v["verdict"] for k, v in data["verdicts"].items()} == {
        "alpha/a": "ok", "alpha/b": "ok", "beta/c": "ok", "beta/d": "MISS"}
    assert data["model"]["dtype"] == "bfloat16" and data["model"]["device"] == "cpu"
    assert len(data["model"]["weights_sha256"]) == 64

    again = run()
    assert again.ret == pytest.ExitCode.OK, again.stdout.str()
    assert again.parseoutcomes() == {"ok": 3, "MISS": 1}
    section = baseline_section(again)
    assert section[0].startswith(f"baseline {SHOWN}: compared with model ")
    assert section[1:] == ["  pairs: 0 regressed, 0 improved, 2 unchanged, 0 new, 0 gone, 0 not checked; cases: 0 new, "
                           "0 gone, 0 verdicts changed"]


def test_a_regression_fails_the_member_that_broke_the_pair(run, chapters, pytester) -> None:
    chapters()
    run("--gotchas-update-baseline")
    chapters(a=A_MISS)
    result = run()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.parseoutcomes() == {"failed": 1, "ok": 2, "MISS": 1}
    text = failures(result)
    assert re.search(r"_+ alpha chapter: a _+", text), text
    assert textwrap.dedent(f"""\
        regression against the baseline {SHOWN}:
          pair alpha/ab passed in the baseline and fails now (other member b: ok in the baseline)
          a:
            baseline  ok        P(correct) 73.05%  P(wrong) 26.95%
            now       MISS      P(correct) 26.95%  P(wrong) 73.05%
        If the change is intended, record it:
          pytest --gotchas """) in text
    assert "--gotchas-update-baseline" in text
    assert "FAILED alpha.yaml::a" in result.stdout.str()
    section = baseline_section(result)
    assert "  REGRESSION alpha/ab: pass -> FAIL (a ok -> MISS, b ok)" in section
    assert "  verdict changed alpha/a: ok -> MISS (was P(correct) 73.05%  P(wrong) 26.95%; " \
           "now P(correct) 26.95%  P(wrong) 73.05%)" in section
    assert section[-2].startswith("  if the regressions are intended, record them with: pytest --gotchas ")
    assert section[-1].startswith("  this run's baseline, as --gotchas-update-baseline would record it: ")

    accepted = run("--gotchas-update-baseline")
    assert accepted.ret == pytest.ExitCode.OK
    assert "  regression (recorded) alpha/ab: pass -> FAIL (a ok -> MISS, b ok)" in baseline_section(accepted)
    assert run().ret == pytest.ExitCode.OK


def test_a_regression_leaves_this_runs_baseline_beside_the_shipped_one(run, chapters, pytester) -> None:
    """As pytest-regressions leaves <name>.obtained: a CI job uploads it, a reviewer diffs it with the shipped one."""
    chapters()
    run("--gotchas-update-baseline")
    shipped = default_baseline(pytester)
    obtained = shipped.with_name("model-bfloat16-cpu.obtained.yaml")
    recorded = shipped.read_text()
    unchanged = run()
    assert unchanged.ret == pytest.ExitCode.OK and not obtained.exists()  # no regression, nothing beside it
    assert not any("obtained" in line for line in unchanged.outlines)

    chapters(a=A_MISS)
    result = run()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert baseline_section(result)[-1] == (
        "  this run's baseline, as --gotchas-update-baseline would record it: "
        f"baselines/model-bfloat16-cpu.obtained.yaml (diff it with {SHOWN}, or keep it from CI)")
    assert shipped.read_text() == recorded  # the shipped one is left as it is
    data = yaml.safe_load(obtained.read_text())
    assert data["pairs"] == {"alpha/ab": "fail", "beta/cd": "fail"}
    assert data["verdicts"]["alpha/a"]["verdict"] == "MISS"
    assert run("--gotchas-update-baseline").ret == pytest.ExitCode.OK
    assert shipped.read_text() == obtained.read_text()  # what recording the change writes, byte for byte


def test_an_improvement_is_listed_and_the_run_stays_green(run, chapters, pytester) -> None:
    chapters()
    run("--gotchas-update-baseline")
    chapters(d=D_OK)
    result = run()
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert result.parseoutcomes() == {"ok": 4}
    section = baseline_section(result)
    assert "  improvement beta/cd: fail -> pass (c ok, d MISS -> ok)" in section
    assert section[-1].startswith("  record these changes with: pytest --gotchas ")
    assert section[-1].endswith(" --gotchas-update-baseline")


def test_strict_fails_every_verdict_that_is_not_ok(run, chapters) -> None:
    chapters()
    result = run("--gotchas-strict")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.parseoutcomes() == {"failed": 1, "ok": 3}
    assert "--gotchas-strict: verdict MISS is not ok: P(correct) 26.95%  P(wrong) 73.05%" in failures(result)


# -- partial runs, new and vanished pairs ---------------------------------------------------------------------------


def test_a_k_update_keeps_the_other_chapters(run, chapters, pytester) -> None:
    chapters()
    run("--gotchas-update-baseline")
    path = default_baseline(pytester)
    before = yaml.safe_load(path.read_text())
    chapters(a=A_MISS, d=D_OK)  # alpha would regress, beta improves; only beta is recorded
    result = run("-k", "beta", "--gotchas-update-baseline")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert baseline_section(result)[-1] == (f"baseline {SHOWN} written: 1 pairs and 2 verdicts recorded (2 changed), "
                                            "0 removed, 3 kept from cases that did not run")
    after = yaml.safe_load(path.read_text())
    assert after["pairs"] == {"alpha/ab": "pass", "beta/cd": "pass"}
    assert {k: v for k, v in after["verdicts"].items() if k.startswith("alpha/")} == {
        k: v for k, v in before["verdicts"].items() if k.startswith("alpha/")}
    assert after["verdicts"]["beta/d"]["verdict"] == "ok"
    # alpha still gates.
    assert run().ret == pytest.ExitCode.TESTS_FAILED


def test_a_single_member_run_still_gates(run, chapters) -> None:
    chapters()
    run("--gotchas-update-baseline")
    chapters(a=A_MISS)
    result = run("-k", "alpha and a and not b")
    assert result.parseoutcomes() == {"failed": 1, "deselected": 3}
    section = baseline_section(result)
    assert "  REGRESSION alpha/ab: pass -> FAIL (a ok -> MISS, b not scored)" in section
    assert "  chapters in the baseline that did not run (not compared): beta" in section


def test_new_and_vanished_pairs_are_listed(run, chapters, pytester) -> None:
    chapters()
    run("--gotchas-update-baseline")
    pytester.path.joinpath("beta.yaml").write_text(chapter("beta", [C_OK, D_MISS], "c-and-d"))
    result = run()
    assert result.ret == pytest.ExitCode.OK
    section = baseline_section(result)
    assert "  new pair beta/c-and-d: fail (c ok, d MISS), not in the baseline" in section
    assert "  pair beta/cd is in the baseline (fail) but no longer in its chapter" in section


# -- files that cannot be used ----------------------------------------------------------------------------------------


def test_a_corrupt_baseline_is_a_usage_error_naming_the_file(run, chapters, pytester) -> None:
    chapters()
    path = default_baseline(pytester)
    path.parent.mkdir()
    path.write_text("format: 1\npairs: {alpha/ab: pass\n")
    result = run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (f"ERROR: baseline {path} is not a pytest-gotchas baseline: line 3: invalid YAML "
            "(expected ',' or '}', but got '<stream end>'). Fix or delete the file, then record it again with "
            "--gotchas-update-baseline.") in result.errlines


def test_a_missing_explicit_baseline_is_a_usage_error(run, chapters, pytester) -> None:
    chapters()
    result = run("--gotchas-baseline", "ci/base.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    path = pytester.path / "ci" / "base.yaml"
    assert (f"ERROR: baseline {path} does not exist; record it with --gotchas-baseline {path} "
            "--gotchas-update-baseline") in result.errlines
    assert run("--gotchas-baseline", "ci/base.yaml", "--gotchas-update-baseline").ret == pytest.ExitCode.OK
    assert run("--gotchas-baseline", "ci/base.yaml").ret == pytest.ExitCode.OK


def test_a_baseline_of_another_model_is_refused_once(run, chapters, pytester) -> None:
    chapters()
    run("--gotchas-update-baseline")
    result = run(model="other")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert result.parseoutcomes()["failed"] == 1  # the first scored case; then the run stops
    text = failures(result)
    assert f"baseline {SHOWN} was recorded with model " in text
    assert "They differ in weights_sha256, so their verdicts are not comparable. Record a baseline for this " \
           "model with --gotchas-baseline OTHER.yaml --gotchas-update-baseline, or compare anyway with " \
           "--gotchas-baseline-any-model." in text.replace("\n", " ")
    assert "Interrupted: gotchas: the baseline cannot be used with this model" in result.stdout.str()


def test_any_model_compares_across_models_and_says_so(run, chapters) -> None:
    chapters()
    run("--gotchas-update-baseline")
    result = run("--gotchas-baseline-any-model", model="other")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    section = baseline_section(result)
    assert section[1].startswith("  compared ACROSS MODELS (--gotchas-baseline-any-model): they differ in "
                                 "weights_sha256; this run uses model ")


def test_a_baseline_of_another_dtype_is_refused_before_anything_runs(run, chapters, pytester) -> None:
    chapters()
    run("--gotchas-update-baseline")
    result = run("--gotchas-baseline", str(default_baseline(pytester)), "--gotchas-dtype", "float32")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (error,) = [line for line in result.errlines if line.startswith("ERROR: ")]
    assert "They differ in dtype, softmax_dtype" in error and "this run uses dtype float32, softmax float32" in error


def test_a_baseline_of_another_reading_is_refused_before_anything_runs(run, chapters, pytester) -> None:
    """Recorded with the token reading, run with the default text reading: refused with the cause named, before a
    single case is scored, and no bug claimed."""
    chapters()
    run("--gotchas-update-baseline", "--gotchas-reading", "token")
    assert "  reading: token\n" in default_baseline(pytester).read_text()
    result = run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (error,) = [line for line in result.errlines if line.startswith("ERROR: ")]
    assert (f"ERROR: baseline {SHOWN} was recorded with model " in error and
            ", token reading, BOS auto: <bos>); this run uses dtype bfloat16, softmax bfloat16, text reading, without "
            "opt-in checks. They differ in reading (recorded token, now text), so their verdicts are not comparable: "
            "the numbers were read another way, so a verdict that moved would tell nothing of the model, and is no "
            "bug. Record a baseline for this model with --gotchas-baseline OTHER.yaml --gotchas-update-baseline, or "
            "compare anyway with --gotchas-baseline-any-model." in error)


def test_a_baseline_of_another_bos_is_refused_at_the_first_case(run, chapters, pytester) -> None:
    """Recorded with the model's <bos>, run with --gotchas-bos never: what the policy gives is known once the model
    has loaded, so the first scored case stops the run, naming the cause."""
    chapters()
    run("--gotchas-update-baseline")
    assert "  bos: 'auto: <bos>'\n" in default_baseline(pytester).read_text()
    result = run("--gotchas-bos", "never")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert result.parseoutcomes()["failed"] == 1
    text = " ".join(failures(result).split())
    assert ("They differ in bos (recorded auto: <bos>, now never: none), so their verdicts are not comparable: the "
            "numbers were read another way, so a verdict that moved would tell nothing of the model, and is no bug."
            ) in text
    assert "report it" not in result.stdout.str()


# -- xdist ----------------------------------------------------------------------------------------------------------


def summary_and_status(result: pytest.RunResult) -> tuple[int, dict[str, int], list[str]]:
    """What a run decided; the suggested command repeats the run's own arguments, "-n 2" included."""
    return result.ret, result.parseoutcomes(), [line.replace(" -n 2", "") for line in baseline_section(result)]


def test_xdist_gives_the_same_status_and_summary_as_serial(run, chapters, pytester) -> None:
    chapters()
    serial_record = run("--gotchas-update-baseline")
    recorded = default_baseline(pytester).read_text()
    default_baseline(pytester).unlink()
    parallel_record = run("-n", "2", "--gotchas-update-baseline")
    assert default_baseline(pytester).read_text() == recorded  # only the controller wrote, the same bytes
    assert summary_and_status(parallel_record) == summary_and_status(serial_record)
    assert not list(default_baseline(pytester).parent.glob(".*"))  # no temp file left behind

    chapters(a=A_MISS, d=D_OK)  # a regression and an improvement, possibly on different workers
    serial = run()
    parallel = run("-n", "2")
    assert serial.ret == pytest.ExitCode.TESTS_FAILED
    assert summary_and_status(parallel) == summary_and_status(serial)
    assert "regression against the baseline" in failures(parallel)
