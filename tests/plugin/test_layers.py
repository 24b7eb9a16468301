"""--gotchas-layers: the run's own reading after every layer, through the plugin, the JSON and the HTML page; a
model whose layers cannot be read stops the run with one message.

The tiny model here is built so that the lead changes hands at a known layer; tests/e2e/test_layer_readings.py
checks on the real embedded models that the last layer's reading is the final reading.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.tinymodel import build_tokenizer, layer_writing_llama, save_folder
from helpers.results import read_report

torch = pytest.importorskip("torch")

CHAPTER = """\
chapter: demo
title: "layers"
interpreter: "3.12"
env: {PYTHONHASHSEED: "0"}
cases:
  - id: seven
    transcript: |-
      >>> print("a7")
      a█
    correct: "7"
    wrong: "8"
"""


def lead_changing_folder(path: Path, writes: list[dict[str, float]]) -> Path:
    """A Llama folder whose layer k adds ``writes[k-1]`` ({token: amount}) to that token's logit direction
    (tinymodel.layer_writing_llama); each token named in a write is read from its own direction."""
    vocab = build_tokenizer().get_vocab()
    directions = {token: d for d, token in enumerate(sorted({t for w in writes for t in w}), start=1)}
    model = layer_writing_llama([{directions[t]: amount for t, amount in w.items()} for w in writes],
                                {vocab[t]: d for t, d in directions.items()}, len(vocab), gain=4.0,
                                bos_token_id=vocab["<bos>"], eos_token_id=vocab["<eos>"], pad_token_id=vocab["<pad>"])
    return save_folder(model, path)


@pytest.fixture(scope="module")
def overtaken(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Layer 1 puts "7" ahead, layer 2 adds a little to "8", layer 3 lets "8" overtake: a MISS decided at layer 3.
    return lead_changing_folder(tmp_path_factory.mktemp("models") / "overtaken",
                                [{"7": 1.0}, {"8": 0.5}, {"8": 3.0}])


def run(pytester: pytest.Pytester, model: Path, *args: str) -> tuple[pytest.RunResult, dict]:
    (pytester.path / "demo.yaml").write_text(CHAPTER)
    out = pytester.path / "result.json"
    result = pytester.runpytest_subprocess(
        "--gotchas", "--gotchas-model", str(model), "--gotchas-cache-dir", str(pytester.path / "cache"),
        "-o", f"cache_dir={pytester.path / 'pc'}", "--rootdir", str(pytester.path), "-p", "no:randomly",
        "--gotchas-json", str(out), *args)
    return result, read_report(out) if out.exists() else {}


@pytest.mark.parametrize("reading", ["text", "token"])
def test_the_lead_changes_hands_at_the_layer_built_for_it(pytester: pytest.Pytester, overtaken: Path,
                                                          reading: str) -> None:
    result, data = run(pytester, overtaken, "--gotchas-layers", "--gotchas-reading", reading, "-v")
    (line,) = [x for x in result.stdout.lines if x.startswith("demo.yaml::seven ")]
    assert line.startswith("demo.yaml::seven MISS ")
    assert "[correct ahead at layers 1-2, then wrong from layer 3 of 3]" in line
    (case,) = data["cases"]
    (run_,) = case["runs"]
    layers = run_["layers"]
    assert [x["layer"] for x in layers] == [1, 2, 3]
    assert layers[0]["p_correct"] > layers[0]["p_wrong"] and layers[1]["p_correct"] > layers[1]["p_wrong"]
    assert layers[2]["p_correct"] < layers[2]["p_wrong"]
    # The last layer is the model's own logits: its reading is the final reading, bit for bit.
    final = run_["readings"][reading]
    assert (layers[-1]["p_correct"], layers[-1]["p_wrong"]) == (final["p_correct"], final["p_wrong"])
    assert data["run"]["timings"]["seconds"]["layers"] > 0


def test_without_the_flag_no_layer_is_read(pytester: pytest.Pytester, overtaken: Path) -> None:
    result, data = run(pytester, overtaken, "-v")
    assert "from layer" not in result.stdout.str()
    assert data["cases"][0]["runs"][0]["layers"] == []


def test_the_html_page_draws_each_runs_layers(pytester: pytest.Pytester, overtaken: Path) -> None:
    page = pytester.path / "report.html"
    run(pytester, overtaken, "--gotchas-layers", "--gotchas-html", str(page))
    html = page.read_text()
    assert html.count('<figure class="layers"><svg') == 1
    assert "correct ahead at layers 1-2, then wrong from layer 3 of 3" in html


def opt_folder(path: Path) -> Path:
    """A tiny OPT: its final norm is model.decoder.final_layer_norm, a place lens.py does not look."""
    from transformers import OPTConfig, OPTForCausalLM

    vocab = build_tokenizer().get_vocab()
    config = OPTConfig(vocab_size=len(vocab), hidden_size=8, num_hidden_layers=1, ffn_dim=8, num_attention_heads=1,
                       word_embed_proj_dim=8, max_position_embeddings=256, bos_token_id=vocab["<bos>"],
                       eos_token_id=vocab["<eos>"], pad_token_id=vocab["<pad>"])
    torch.manual_seed(0)
    return save_folder(OPTForCausalLM(config).to(torch.bfloat16).eval(), path)


def test_a_model_whose_layers_cannot_be_read_stops_the_run_with_one_message(pytester: pytest.Pytester,
                                                                         tmp_path: Path) -> None:
    model = opt_folder(tmp_path / "opt")
    result, _ = run(pytester, model, "--gotchas-layers")
    message = ("cannot read layers of model class OPTForCausalLM: no final norm found (looked for model.norm, "
               "transformer.ln_f); run without --gotchas-layers")
    # Once as the failure's own text; pytest's short summary may repeat it after the test id, width permitting.
    assert result.stdout.lines.count(message) == 1, result.stdout.str()
    assert result.ret != 0
    assert "Traceback" not in result.stdout.str()
    # The same model without the flag scores as any other.
    ok, data = run(pytester, model)
    assert ok.ret in (0, 1) and data["cases"][0]["verdict"]
