"""readings.py, the text reading: the probability that the output, as text, continues with a candidate, summed
over every token and chain of tokens that writes it; checked against a brute-force enumeration on a tiny model
whose vocabulary is small enough to enumerate, and against the write-up's token reading."""

from __future__ import annotations

import pytest
import torch
from helpers.textreading import MERGES, RULES
from helpers.tinymodel import build_tiny_model

from pytest_gotchas.backends.transformers import TransformersBackend
from pytest_gotchas.scoring import readings as score_mod
from pytest_gotchas.scoring.cut import plan_cut
from pytest_gotchas.model.load import LoadedModel, ModelSpec, load_model
from pytest_gotchas.scoring.readings import Cut, score_batch
from pytest_gotchas.scoring.rows import round_to
from pytest_gotchas.scoring.vocab import build


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> LoadedModel:
    folder = build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", RULES, merges=MERGES)
    return load_model(ModelSpec(name=str(folder), device="cpu"), tmp_path_factory.mktemp("cache"))


def brute_force(loaded: LoadedModel, context: tuple[int, ...], text: str, depth: int) -> float:
    """Every token sequence of at most `depth` tokens whose text first reaches past `text`'s start at its last
    token, each weighed by the product of its probabilities: the definition, enumerated over the whole vocabulary
    with the tokenizer's own decode (nothing of vocab.py or score.py)."""
    with torch.inference_mode():
        logits = loaded.model(input_ids=torch.tensor([context]), use_cache=False).logits[0, -1]
        probs = torch.softmax(logits, dim=-1)
    total = 0.0
    for token in range(len(loaded.tokenizer)):
        if token in loaded.tokenizer.all_special_ids:
            continue
        piece = loaded.tokenizer.decode([token])
        if piece.startswith(text):
            total += float(probs[token])
        elif piece and text.startswith(piece) and depth > 1:
            total += float(probs[token]) * brute_force(loaded, context + (token,), text[len(piece):], depth - 1)
    return total


@pytest.mark.parametrize("prompt, correct, wrong", [
    ("(1, [2", ",", "]"),  # plain: a candidate that is a proper prefix of likelier tokens
    ("[(5, 6)", ",", "]"),  # healed: ")" is read again, as a token and as the start of "),"
    ("x:", "True", "False"),  # whole words, written as one token or as chains of shorter ones
])
def test_the_reading_equals_a_brute_force_enumeration(tiny: LoadedModel, monkeypatch: pytest.MonkeyPatch,
                                                      prompt: str, correct: str, wrong: str) -> None:
    monkeypatch.setattr(score_mod, "MIN_BRANCH", 0.0)  # follow every chain, however unlikely
    plan = plan_cut(tiny.tokenizer, prompt, correct, wrong)
    reading = score_batch(TransformersBackend(tiny), [Cut(plan, prompt, correct, wrong)],
                          vocab=lambda: build(tiny.tokenizer), main="text")[0].readings["text"]
    rest = prompt[len(prompt) - plan.backed_off_chars:] if plan.backed_off_chars else ""
    for got, candidate in ((reading.p_correct, correct), (reading.p_wrong, wrong)):
        expected = brute_force(tiny, plan.context_ids, rest + candidate, score_mod.MAX_DEPTH)
        assert got == round_to(expected, "bfloat16"), candidate
    assert reading.neglected == 0.0


def test_an_unlikely_chain_is_left_out_and_its_mass_reported(tiny: LoadedModel) -> None:
    """With the default bound, chains below MIN_BRANCH are not followed: the reading is below the brute force by at
    most what it reports as neglected."""
    prompt, correct, wrong = "x:", "True", "False"
    plan = plan_cut(tiny.tokenizer, prompt, correct, wrong)
    reading = score_batch(TransformersBackend(tiny), [Cut(plan, prompt, correct, wrong)],
                          vocab=lambda: build(tiny.tokenizer), main="text")[0].readings["text"]
    exact = brute_force(tiny, plan.context_ids, "False", score_mod.MAX_DEPTH)
    assert 0 < reading.neglected
    assert exact - reading.neglected <= reading.p_wrong <= exact + 2 ** -8


def test_the_issue_case_is_a_miss_by_text_and_ok_by_token(tiny: LoadedModel) -> None:
    prompt = "(1, [2"
    plan = plan_cut(tiny.tokenizer, prompt, ",", "]")
    assert plan.kind == "plain"
    readings = score_batch(TransformersBackend(tiny), [Cut(plan, prompt, ",", "]")],
                           vocab=lambda: build(tiny.tokenizer), main="text")[0].readings
    assert readings["token"].verdict == "ok" and readings["text"].verdict == "MISS"
    assert readings["text"].p_correct == readings["token"].p_correct  # only the lone "," writes ","
    assert readings["text"].wrong_tokens[:2] == ["'])' 62.50%", "'],' 23.05%"]
