"""The per-layer reading (lens.py): exact against the model's own logits, layer by layer against truncated models,
and on a tiny model built to change leader at a known layer (the lead itself, pure: tests/unit/results/test_layers.py).
tests/e2e/test_layer_readings.py reads the layers of the two real embedded models."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
import torch
from helpers.lens import assert_last_layer_is_the_models, model_logits, random_contexts
from helpers.tinymodel import build_tiny_model, layer_writing_llama

from pytest_gotchas.report.wording import lead_text
from pytest_gotchas.results.layers import Stretch, lead
from pytest_gotchas.scoring.lens import LayerLogits, LensError, find_readout, layer_logits, layer_probabilities
from pytest_gotchas.model.load import LoadedModel, ModelSpec, load_model
from pytest_gotchas.results.vocabulary import Leader


def truncated(model, layers: int):
    """The model with only its first ``layers`` decoder layers, the same final norm and head."""
    copied = copy.deepcopy(model)
    if hasattr(copied, "transformer"):  # GPT-2
        copied.transformer.h = torch.nn.ModuleList(list(copied.transformer.h)[:layers])
        copied.config.n_layer = layers
    else:
        copied.model.layers = torch.nn.ModuleList(list(copied.model.layers)[:layers])
        copied.config.num_hidden_layers = layers
    return copied


def assert_every_layer_is_a_truncated_model(model, contexts, layers: int) -> None:
    read = layer_logits(model, contexts, embeddings=True)
    for k in range(layers + 1):
        cut = model_logits(truncated(model, k), contexts)
        for n, context in enumerate(contexts):
            assert torch.equal(read[context].at(k), cut[n]), f"layer {k}"


def uneven_norms(model, seed: int = 2):
    """Norm weights (and biases) away from their initial 1 (Gemma: 0): a norm applied twice then shows."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "norm" in name or "ln_" in name:
                parameter.copy_((parameter.float() + 0.5 * torch.randn(parameter.shape, generator=generator)
                                 ).to(parameter.dtype))
    return model


SMALL = dict(vocab_size=300, hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
             max_position_embeddings=128)


def tiny_llama(layers: int = 4, seed: int = 0):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(**SMALL, num_hidden_layers=layers, tie_word_embeddings=False)
    return uneven_norms(LlamaForCausalLM(config)).to(torch.bfloat16).eval()


# -- finding the final norm and the unembedding ------------------------------------------------------------------


class FooForCausalLM(torch.nn.Module):
    """A stand-in with neither layout."""

    def __init__(self) -> None:
        super().__init__()
        self.config = type("Config", (), {})()
        self.decoder = torch.nn.Linear(4, 4)


def test_a_model_without_a_final_norm_is_named_in_one_clear_error() -> None:
    with pytest.raises(LensError) as raised:
        find_readout(FooForCausalLM())
    assert str(raised.value) == ("cannot read layers of model class FooForCausalLM: no final norm found "
                                 "(looked for model.norm, transformer.ln_f)")


def test_a_model_without_an_unembedding_is_named_in_one_clear_error() -> None:
    model = FooForCausalLM()
    model.model = torch.nn.Module()
    model.model.norm = torch.nn.LayerNorm(4)
    with pytest.raises(LensError, match=r"^cannot read layers of model class FooForCausalLM: no unembedding found "
                                        r"\(looked for lm_head\)$"):
        find_readout(model)


def test_layouts_found() -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    llama = find_readout(tiny_llama(layers=1))
    assert (llama.where, llama.softcap, llama.multiply, llama.divide, llama.last_is_normed) == (
        "model.norm + lm_head", None, None, None, True)
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=300, n_embd=64, n_layer=1, n_head=4, n_positions=64))
    assert find_readout(gpt2).where == "transformer.ln_f + lm_head"


def test_an_unknown_output_scaling_raises_instead_of_showing_wrong_layers() -> None:
    from transformers import LlamaForCausalLM

    class DoubledForCausalLM(LlamaForCausalLM):
        def forward(self, *args, **kwargs):
            out = super().forward(*args, **kwargs)
            out.logits = out.logits * 2
            return out

    model = tiny_llama(layers=2)
    with torch.no_grad():
        model.lm_head.weight.mul_(50)  # logits of a few units, so that doubling them is far from rounding
    doubled = DoubledForCausalLM(model.config).to(torch.bfloat16).eval()
    doubled.load_state_dict(model.state_dict())
    with pytest.raises(LensError, match=r"^cannot read layers of model class DoubledForCausalLM: its logits are not "
                                        r"model.norm \+ lm_head with the output scaling lens.py knows"):
        layer_logits(doubled, random_contexts(300))


def test_a_rounding_difference_is_not_an_error_and_the_last_layer_stays_the_models() -> None:
    """As a GPU kernel might round differently: ``exact`` says so, and the last layer is still the model's own."""
    from transformers import LlamaForCausalLM

    class NudgedForCausalLM(LlamaForCausalLM):
        def forward(self, *args, **kwargs):
            out = super().forward(*args, **kwargs)
            out.logits = torch.nextafter(out.logits, torch.full_like(out.logits, float("inf")))  # one ulp up
            return out

    model = tiny_llama(layers=2)
    nudged = NudgedForCausalLM(model.config).to(torch.bfloat16).eval()
    nudged.load_state_dict(model.state_dict())
    contexts = random_contexts(300)
    read, plain = layer_logits(nudged, contexts), model_logits(nudged, contexts)
    assert not any(r.exact for r in read.values())
    assert all(torch.equal(read[c].at(2), plain[n]) for n, c in enumerate(contexts))
    assert torch.equal(read[contexts[0]].at(1), layer_logits(model, contexts)[contexts[0]].at(1))


def test_contexts_of_unequal_length_are_refused() -> None:
    with pytest.raises(ValueError, match="equal length"):
        layer_logits(tiny_llama(layers=1), [(1, 2, 3), (1, 2)])
    assert layer_logits(tiny_llama(layers=1), []) == {}


def test_importing_lens_does_not_import_torch() -> None:
    code = "import sys, pytest_gotchas.scoring.lens; print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# -- exactness: the last layer is the model's own reading, every layer a truncated model's -------------------------


@pytest.fixture(scope="module")
def tiny_gemma(tmp_path_factory: pytest.TempPathFactory) -> LoadedModel:
    root = tmp_path_factory.mktemp("tiny")
    folder = build_tiny_model(root / "model", {" ": {"1": 3.0, "2": 1.0}, "\n": {"T": 2.0, "F": 2.0}})
    return load_model(ModelSpec(name=str(folder), dtype="bfloat16", device="cpu"), root / "cache")


def test_tiny_gemma(tiny_gemma: LoadedModel) -> None:
    tok = tiny_gemma.tokenizer
    contexts = [tuple(tok("x = ")["input_ids"]), tuple(tok("1 =\n")["input_ids"])]
    read = assert_last_layer_is_the_models(tiny_gemma.model, contexts)
    first = read[contexts[0]]
    assert (first.first_layer, list(first.layers)) == (0, [0, 1])
    # Its one layer writes nothing into the residual stream: the embeddings already read the rules.
    assert torch.equal(first.at(0), first.at(1))
    one, two = tok.convert_tokens_to_ids("1"), tok.convert_tokens_to_ids("2")
    plain = torch.softmax(model_logits(tiny_gemma.model, contexts)[0], dim=-1)
    assert layer_probabilities(first, [one, two])[1] == {one: plain[one].item(), two: plain[two].item()}
    assert plain[one].item() > plain[two].item()


def test_tiny_gemma_with_every_layer_computing(tiny_gemma: LoadedModel) -> None:
    """Random attention and MLP outputs (as test_score's scrambled model), three layers, soft-capping on."""
    from transformers import Gemma3ForCausalLM

    config = copy.deepcopy(tiny_gemma.model.config)
    config.num_hidden_layers = 3
    config.layer_types = ["full_attention"] * 3
    config.final_logit_softcapping = 2.0  # Gemma 2's; gemma-3 has None
    torch.manual_seed(1)
    model = uneven_norms(Gemma3ForCausalLM(config)).to(torch.bfloat16).eval()
    with torch.no_grad():
        model.lm_head.weight.mul_(100)  # raw logits of several units: the cap bites
    contexts = random_contexts(config.vocab_size)
    read = assert_last_layer_is_the_models(model, contexts)
    assert 1.5 < read[contexts[0]].logits[-1].abs().max().item() <= 2.0
    assert_every_layer_is_a_truncated_model(model, contexts, 3)


def test_tiny_llama() -> None:
    model = tiny_llama(layers=4)
    contexts = random_contexts(300)
    read = assert_last_layer_is_the_models(model, contexts)
    assert list(read[contexts[0]].layers) == [0, 1, 2, 3, 4]
    assert_every_layer_is_a_truncated_model(model, contexts, 4)
    without = layer_logits(model, contexts)
    assert list(without[contexts[0]].layers) == [1, 2, 3, 4]
    assert torch.equal(without[contexts[0]].logits, read[contexts[0]].logits[1:])


def test_tiny_gpt2() -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=300, n_embd=64, n_layer=3, n_head=4, n_positions=64, bos_token_id=0,
                        eos_token_id=0)
    model = uneven_norms(GPT2LMHeadModel(config)).to(torch.bfloat16).eval()
    contexts = random_contexts(300)
    assert_last_layer_is_the_models(model, contexts)
    assert_every_layer_is_a_truncated_model(model, contexts, 3)


@pytest.mark.parametrize("family", ["cohere", "granite"])
def test_other_output_scalings(family: str) -> None:
    """Cohere multiplies the logits by logit_scale, Granite divides them by logits_scaling."""
    import transformers

    if family == "cohere":
        model_class, config = transformers.CohereForCausalLM, transformers.CohereConfig(
            **SMALL, num_hidden_layers=2, logit_scale=0.25, bos_token_id=0, eos_token_id=0, pad_token_id=0)
    else:
        model_class, config = transformers.GraniteForCausalLM, transformers.GraniteConfig(
            **SMALL, num_hidden_layers=2, logits_scaling=8.0, embedding_multiplier=12.0, residual_multiplier=0.22)
    torch.manual_seed(0)
    model = uneven_norms(model_class(config)).to(torch.bfloat16).eval()
    with torch.no_grad():
        model.lm_head.weight.mul_(100)
    contexts = random_contexts(300)
    assert_last_layer_is_the_models(model, contexts)
    assert_every_layer_is_a_truncated_model(model, contexts, 2)


# -- a tiny model whose lead changes hands at a known layer ------------------------------------------------------


CORRECT_ID, WRONG_ID = 1, 2


def lead_changing_model(writes: list[dict[int, float]]):
    """Eight tokens; token t is read from direction t, so CORRECT_ID and WRONG_ID are directions 1 and 2."""
    return layer_writing_llama(writes, {t: t for t in range(8)}, 8, bos_token_id=0, eos_token_id=0)


def test_the_lead_changes_hands_at_the_layer_built_for_it() -> None:
    # After layer 1 the correct token leads, layer 2 adds a little to the wrong one, layer 3 overtakes.
    model = lead_changing_model([{CORRECT_ID: 1.0}, {WRONG_ID: 0.5}, {WRONG_ID: 3.0}])
    context = (3, 4, 5)
    read = assert_last_layer_is_the_models(model, [context])[context]
    probs = layer_probabilities(read, [CORRECT_ID, WRONG_ID])
    readings = [(probs[k][CORRECT_ID], probs[k][WRONG_ID]) for k in read.layers]
    assert readings[0][0] == readings[0][1]  # the embeddings: an exact tie
    story = lead(readings, first_layer=read.first_layer)
    assert story.stretches == (Stretch(Leader.TIE, 0, 0), Stretch(Leader.CORRECT, 1, 2), Stretch(Leader.WRONG, 3, 3))
    assert (story.final, story.decided_at, story.changed_hands) == (Leader.WRONG, 3, True)
    assert lead_text(story) == "tied at layer 0, correct ahead at layers 1-2, then wrong from layer 3 of 3"
    # The last layer's probabilities are the softmax score.py takes (in the model's dtype).
    plain = torch.softmax(model_logits(model, [context])[0], dim=-1)
    assert probs[3] == {CORRECT_ID: plain[CORRECT_ID].item(), WRONG_ID: plain[WRONG_ID].item()}
    in_float32 = layer_probabilities(read, [CORRECT_ID], softmax_dtype="float32")
    assert in_float32[3][CORRECT_ID] == torch.softmax(read.logits[-1].float(), dim=-1)[CORRECT_ID].item()


def test_layer_logits_rows_by_layer_number() -> None:
    rows = LayerLogits(first_layer=1, logits=torch.arange(6.0).view(3, 2), exact=True)
    assert (list(rows.layers), rows.last_layer) == ([1, 2, 3], 3)
    assert rows.at(1).tolist() == [0.0, 1.0]
    with pytest.raises(IndexError, match="layer 0 is not among layers 1..3"):
        rows.at(0)
