"""Verdicts that say what decided them, through the plugin: the float32 precision check, the numerics fingerprint
and the hardware recorded with the results and the baseline, and a comparison with a baseline recorded on other
kernels (or on the same ones)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml
from helpers.numerics import CHAPTER, RULES
from helpers.tinymodel import build_tiny_model
from helpers.results import read_report


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", RULES)


@pytest.fixture
def run(pytester: pytest.Pytester, model: Path, py312):
    (pytester.path / "demo.yaml").write_text(CHAPTER)

    def go(*args: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess("--gotchas", "--gotchas-model", str(model), "--gotchas-cache-dir",
                                             str(pytester.path / "cache"), "--rootdir", str(pytester.path),
                                             "-p", "no:randomly", *args)

    return go


def test_the_precision_check_marks_exactly_the_runs_rounding_decides(run, pytester: pytest.Pytester) -> None:
    plain = run()
    assert plain.parseoutcomes() == {"tie": 1, "ok": 1}
    checked = run("--gotchas-precision-check", "--gotchas-json", "out.json")
    assert checked.parseoutcomes() == {"precision_dep": 1, "ok": 1}
    checked.stdout.fnmatch_lines([
        "  pair both: FAIL (rounded precision-dep, clear ok)",
        "precision check: computed in float32, 1 of 2 case verdicts change (precision-dep): demo/rounded",
    ])
    cases = {c["id"]: c for c in read_report(pytester.path / "out.json")["cases"]}
    rounded = cases["rounded"]["runs"][0]["readings"]
    assert (rounded["text"]["verdict"], rounded["precision"]["verdict"]) == ("tie", "MISS")
    assert rounded["precision"]["softmax_dtype"] == "float32"
    assert rounded["precision"]["p_correct"] == pytest.approx(0.49951, abs=1e-4)
    assert cases["rounded"]["qualifiers"] == ["precision-dep"]
    assert cases["clear"]["qualifiers"] == [] and cases["clear"]["verdict"] == "ok"


def test_the_fingerprint_and_the_hardware_are_recorded(run, pytester: pytest.Pytester) -> None:
    run("--gotchas-json", "out.json", "--gotchas-update-baseline")
    model = read_report(pytester.path / "out.json")["models"][0]
    assert len(model["numerics"]) == 16 and int(model["numerics"], 16) >= 0
    assert model["threads"] == torch.get_num_threads()
    assert model["hardware"].startswith("cpu ") and "torch " in model["hardware"]
    header = yaml.safe_load((pytester.path / "baselines" / "model-bfloat16-cpu.yaml").read_text())["model"]
    assert header["numerics"] == model["numerics"] and header["hardware"] == model["hardware"]


def _edit_baseline(pytester: pytest.Pytester, edit) -> None:
    path = pytester.path / "baselines" / "model-bfloat16-cpu.yaml"
    text = path.read_text()
    path.write_text(edit(text))


def test_a_baseline_from_other_kernels_is_reported_as_such(run, pytester: pytest.Pytester) -> None:
    """Hardware labels alike, fingerprints not: the differences are the kernels', and a verdict a bfloat16 step
    decided is named."""
    run("--gotchas-update-baseline")
    data = yaml.safe_load((pytester.path / "baselines" / "model-bfloat16-cpu.yaml").read_text())
    numbers = data["verdicts"]["demo/rounded"]

    def other_kernels(text: str) -> str:
        text = text.replace(data["model"]["numerics"], "0123456789abcdef")
        old = f"demo/rounded: {{p_correct: {numbers['p_correct']}, p_wrong: {numbers['p_wrong']}, verdict: tie}}"
        assert old in text
        return text.replace(old, "demo/rounded: {p_correct: 0.5, p_wrong: 0.498046875, verdict: ok}")

    _edit_baseline(pytester, other_kernels)
    result = run()
    result.stdout.fnmatch_lines([
        f"  same model, other kernels (numerics 0123456789abcdef on {data['model']['hardware']}, now "
        f"{data['model']['numerics']} on {data['model']['hardware']}): probabilities differ from the baseline's in 1 "
        "cases; 1 verdicts changed",
        "  verdicts changed by a margin bfloat16 cannot resolve (decided by rounding, not by the model): demo/rounded",
    ])


def test_with_the_same_kernels_any_difference_is_a_bug(run, pytester: pytest.Pytester) -> None:
    run("--gotchas-update-baseline")
    data = yaml.safe_load((pytester.path / "baselines" / "model-bfloat16-cpu.yaml").read_text())
    recorded = data["verdicts"]["demo/clear"]["p_correct"]
    _edit_baseline(pytester, lambda text: text.replace(f"demo/clear: {{p_correct: {recorded},",
                                                       f"demo/clear: {{p_correct: {recorded / 2},"))
    result = run()
    result.stdout.fnmatch_lines([f"  numerics match the baseline's ({data['model']['numerics']}), yet 1 cases' "
                                 "probabilities differ from it: that is a bug, please report it: demo/clear"])


def test_a_run_on_the_float32_matmul_path_is_compared_as_other_kernels(run, pytester: pytest.Pytester) -> None:
    """The path is named in the fingerprint, so a baseline recorded with the plain kernels is another kernels'
    (the tiny model's sums are exact, so here no probability moves)."""
    run("--gotchas-update-baseline", "--gotchas-json", "plain.json")
    result = run("--gotchas-kernels", "float32-matmul", "--gotchas-json", "fast.json")
    plain, fast = (read_report(pytester.path / name) for name in ("plain.json", "fast.json"))
    assert fast["models"][0]["numerics"] == f"float32-matmul:{plain['models'][0]['numerics']}"
    assert fast["cases"] == plain["cases"]
    hardware = plain["models"][0]["hardware"]
    result.stdout.fnmatch_lines([
        f"  same model, other kernels (numerics {plain['models'][0]['numerics']} on {hardware}, now "
        f"{fast['models'][0]['numerics']} on {hardware}): probabilities differ from the baseline's in 0 cases; "
        "0 verdicts changed"])
