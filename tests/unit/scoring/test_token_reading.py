"""readings.py, the token reading: the forward pass at the cut, read one token each (with the plain reading beside
a healed or chained one), equal to manual forward passes of a tiny model whose logits are set by hand; exact
ties, the float32 softmax, the top tokens, and the speed-ups (last-position logits, batches) that change no
probability."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
import torch
from helpers.cuts import CHAIN, HEALED, PLAIN, RULES, TIE, ids
from helpers.results import plain, token
from helpers.tinymodel import build_tiny_model

from pytest_gotchas.backends.transformers import TransformersBackend
from pytest_gotchas.model.load import LoadedModel, ModelSpec, load_model
from pytest_gotchas.scoring.cut import CutPlan, plan_cut
from pytest_gotchas.results.schema import TopToken
from pytest_gotchas.scoring.readings import score, score_batch


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> LoadedModel:
    root = tmp_path_factory.mktemp("tiny")
    folder = build_tiny_model(root / "model", RULES)
    return load_model(ModelSpec(name=str(folder), dtype="bfloat16", device="cpu"), root / "cache")


@pytest.fixture(scope="module")
def scrambled(tiny: LoadedModel) -> LoadedModel:
    """The tiny model with random attention and MLP outputs, so that every layer does real arithmetic."""
    model = copy.deepcopy(tiny.model)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for layer in model.model.layers:
            for weight in (layer.self_attn.o_proj.weight, layer.mlp.down_proj.weight):
                weight.copy_(torch.randn(weight.shape, generator=generator).to(weight.dtype))
    return LoadedModel(model=model, tokenizer=tiny.tokenizer, info=tiny.info)


def manual_probs(model, context: tuple[int, ...], dtype: torch.dtype | None = None) -> torch.Tensor:
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([context]), use_cache=False).logits[0, -1]
    return torch.softmax(logits if dtype is None else logits.to(dtype), dim=-1)


def test_plain_score_equals_a_manual_forward_pass(tiny: LoadedModel) -> None:
    plan = plan_cut(tiny.tokenizer, *PLAIN)
    result = score(TransformersBackend(tiny), plan)
    probs = manual_probs(tiny.model, plan.context_ids)
    assert probs.dtype == torch.bfloat16
    assert token(result).p_correct == probs[plan.correct_ids[0]].item()
    assert token(result).p_wrong == probs[plan.wrong_ids[0]].item()
    assert token(result).p_correct > token(result).p_wrong > 0
    assert (token(result).kind, result.forward_passes, token(result).softmax_dtype) == ("plain", 1, "bfloat16")
    assert plain(result) is None
    three = probs[tiny.tokenizer.convert_tokens_to_ids("3")].item()
    assert result.top[:3] == [TopToken("1", token(result).p_correct), TopToken("2", token(result).p_wrong),
                              TopToken("3", three)]
    assert len(result.top) == 5


def test_healed_score_reports_both_readings(tiny: LoadedModel) -> None:
    plan = plan_cut(tiny.tokenizer, *HEALED)
    result = score(TransformersBackend(tiny), plan)
    healed = manual_probs(tiny.model, plan.context_ids)
    naive = manual_probs(tiny.model, plan.prompt_ids)
    assert (token(result).p_correct, token(result).p_wrong) == (healed[plan.correct_ids[0]].item(), healed[plan.wrong_ids[0]].item())
    assert (plain(result).p_correct, plain(result).p_wrong) == (
        naive[plan.plain_correct_id].item(),
        naive[plan.plain_wrong_id].item(),
    )
    assert token(result).p_wrong > token(result).p_correct > 0.2  # healed: a real answer
    assert plain(result).p_correct == plain(result).p_wrong < 0.02  # naive: noise
    assert [top.token for top in result.top[:3]] == [")]", "),", ")"]
    assert result.forward_passes == 2  # the back-off, a context of the token reading, gets a pass of its own


def test_chain_score_is_the_product_of_its_steps(tiny: LoadedModel) -> None:
    plan = plan_cut(tiny.tokenizer, *CHAIN)
    result = score(TransformersBackend(tiny), plan)
    first = manual_probs(tiny.model, plan.context_ids)
    quote, k = plan.correct_ids
    second = manual_probs(tiny.model, plan.context_ids + (quote,))
    assert token(result).p_correct == first[quote].item() * second[k].item()
    assert token(result).p_wrong == first[plan.wrong_ids[0]].item()
    assert (token(result).correct_tokens, token(result).wrong_tokens) == (["'", "k"], ["'."])
    # The chain's second context is the full prompt, where the naive reading is also taken, and its first is the
    # prompt one token shorter, which the token reading never reads from the prompt's pass: two passes.
    assert plan.context_ids + (quote,) == plan.prompt_ids
    assert result.forward_passes == 2
    assert plain(result).p_correct == second[plan.plain_correct_id].item()


def test_exact_tie_stays_a_tie(tiny: LoadedModel) -> None:
    plan = plan_cut(tiny.tokenizer, *TIE)
    assert plan.kind == "plain"
    result = score(TransformersBackend(tiny), plan)
    assert token(result).p_correct == token(result).p_wrong == 0.5
    # Listed by token id ("F" before "T"), not by whichever came first: the list never breaks the tie.
    assert result.top[:2] == [TopToken("F", 0.5), TopToken("T", 0.5)]


def test_float32_softmax(tiny: LoadedModel) -> None:
    plan = plan_cut(tiny.tokenizer, *PLAIN)
    bf16 = score(TransformersBackend(tiny), plan)
    fp32 = score(TransformersBackend(tiny), plan, softmax_dtype="float32")
    probs = manual_probs(tiny.model, plan.context_ids, torch.float32)
    assert token(fp32).softmax_dtype == "float32"
    assert token(fp32).p_correct == probs[plan.correct_ids[0]].item()
    assert token(fp32).p_correct != token(bf16).p_correct
    # The bfloat16 reading is the float32 one rounded to bfloat16.
    assert torch.tensor(token(fp32).p_correct).bfloat16().item() == token(bf16).p_correct
    assert score(TransformersBackend(tiny), plan, softmax_dtype="bfloat16") == bf16
    with pytest.raises(ValueError, match="softmax_dtype"):
        score(TransformersBackend(tiny), plan, softmax_dtype="float64")


def test_top_tokens_are_decoded_text(tiny: LoadedModel) -> None:
    result = score(TransformersBackend(tiny), plan_cut(tiny.tokenizer, "x:", "\n", "1"))
    assert result.top[0].token == "\n"
    assert result.top[1].token == " "
    assert len(score(TransformersBackend(tiny), plan_cut(tiny.tokenizer, *PLAIN), top_k=2).top) == 2


@pytest.mark.parametrize("which", ["tiny", "scrambled"])
def test_last_position_logits_equal_full_logits(which: str, request: pytest.FixtureRequest) -> None:
    model = request.getfixturevalue(which).model
    context = torch.tensor([ids(request.getfixturevalue(which).tokenizer, "(1, 2), (2, 2)")])
    with torch.inference_mode():
        full = model(input_ids=context, use_cache=False).logits[0, -1]
        last = model(input_ids=context, logits_to_keep=1, use_cache=False).logits[0, -1]
    assert torch.equal(full, last)


class CountingModel:
    """Counts forward calls and their batch sizes; everything else is the wrapped model's."""

    def __init__(self, model) -> None:
        self.model = model
        self.batches: list[int] = []

    def __getattr__(self, name: str):
        return getattr(self.model, name)

    def __call__(self, **kwargs):
        self.batches.append(kwargs["input_ids"].shape[0])
        return self.model(**kwargs)


@pytest.mark.parametrize("which", ["tiny", "scrambled"])
def test_batched_scores_are_bit_identical(which: str, request: pytest.FixtureRequest) -> None:
    loaded: LoadedModel = request.getfixturevalue(which)
    tok = loaded.tokenizer
    # Same-length prompts (so that batches form), plus every kind of cut.
    prompts = [("x = ", "1", "2"), ("y = ", "1", "2"), ("z = ", "3", "2"), ("w = ", "2", "1"), TIE, HEALED, CHAIN]
    plans = [plan_cut(tok, *p) for p in prompts]
    counting = CountingModel(loaded.model)
    batched_model = replace_model(loaded, counting)
    one = score_batch(TransformersBackend(loaded), plans)
    batched = score_batch(TransformersBackend(batched_model), plans, batch_size=4)
    assert batched == one
    assert one == [score(TransformersBackend(loaded), plan) for plan in plans]
    assert max(counting.batches) == 4
    # One full pass per prompt, and one per other context of a token reading (the back-off of HEALED and CHAIN):
    # the token reading reads no earlier position of a prompt's pass.
    assert sum(counting.batches) == len({c for plan in plans for c in contexts(plan)}) == len(prompts) + 2


def replace_model(loaded: LoadedModel, model) -> LoadedModel:
    return LoadedModel(model=model, tokenizer=loaded.tokenizer, info=loaded.info)


def contexts(plan: CutPlan) -> set[tuple[int, ...]]:
    found = {plan.context_ids, plan.prompt_ids}
    for chain in (plan.correct_ids, plan.wrong_ids):
        found.update(plan.context_ids + chain[:i] for i in range(1, len(chain)))
    return found


def test_plain_reading_shown_when_the_naive_token_differs(tiny: LoadedModel) -> None:
    # A plain cut whose naive first token differs from the canonical one still reports the naive reading.
    canonical = plan_cut(tiny.tokenizer, *PLAIN)
    plan = replace(canonical, plain_correct_id=canonical.correct_ids[0] + 2)
    result = score(TransformersBackend(tiny), plan)
    assert plain(result).p_correct == manual_probs(tiny.model, plan.prompt_ids)[plan.plain_correct_id].item()
    assert result.forward_passes == 1
