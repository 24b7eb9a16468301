"""guard.py, through the scorer: a model's numbers that no verdict may come from: a prompt longer than the model's
positions, and non-finite logits or probabilities at the cut. Each is an error for its case, naming the model and the
case, raised before (or instead of) a verdict; a tiny model (helpers/tinymodel.py) with 1,024 positions and hand-set
logits shows each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from helpers.chapters import chapter_text
from helpers.tinymodel import build_tiny_model

from pytest_gotchas.backends.transformers import TransformersBackend
from pytest_gotchas.cases.chapter import load_chapter
from pytest_gotchas.model.load import LoadedModel, ModelSpec, load_model
from pytest_gotchas.results.verdict import Status
from pytest_gotchas.scoring.guard import TooLong
from pytest_gotchas.errors import GotchasError
from pytest_gotchas.scoring.scorer import Scorer, ScoringConfig
from pytest_gotchas.scoring.slot import Clock, ModelSlot
from pytest_gotchas.truth.collect import Planned, chapter_info

RULES = {"[": {"1": 2.0, "2": 1.0}}
POSITIONS = 1024  # the tiny model's max_position_embeddings


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[LoadedModel, str]:
    root = tmp_path_factory.mktemp("tiny")
    path = build_tiny_model(root / "tiny", RULES)
    return load_model(ModelSpec(name=str(path), device="cpu"), root / "cache"), str(path)


def planned(tmp_path: Path, transcript: str, correct: str = "1", wrong: str = "2") -> Planned:
    """One scored case, planned as collection plans it (its ground truth is not needed to score it)."""
    text = chapter_text(f"""
    - id: one
      transcript: {json.dumps(transcript, ensure_ascii=False)}
      correct: "{correct}"
      wrong: "{wrong}"
    """)
    path = tmp_path / "a.yaml"
    path.write_text(text, encoding="utf-8")
    chapter = load_chapter(path, "a.yaml")
    case = chapter.cases[0]
    return Planned(case, chapter, chapter_info(chapter, "a.yaml"), chapter.prompts(case), Status.SCORED)


def scorer(loaded: LoadedModel) -> Scorer:
    return Scorer(model_id="tiny", slot=ModelSlot(lambda: TransformersBackend(loaded), Clock()), config=ScoringConfig())


def test_a_case_of_the_tiny_model_scores(tiny, tmp_path) -> None:
    result = scorer(tiny[0]).score(planned(tmp_path, ">>> [1, 2]\n[█"))
    assert result.verdict == "ok"


# -- positions ------------------------------------------------------------------------------------------------------


def test_a_prompt_longer_than_the_positions_is_an_error_before_any_forward_pass(tiny, tmp_path) -> None:
    loaded, name = tiny
    score = scorer(loaded)
    plan = planned(tmp_path, ">>> print('a' * 1100 + '[1')\n" + "a" * 1100 + "[█")
    with pytest.raises(GotchasError) as error:
        score.score(plan)
    tokens = len(loaded.tokenizer(plan.prompts[0].transcript.prompt)["input_ids"])
    assert tokens > POSITIONS
    assert str(error.value) == (
        f"a.yaml:5: case 'one': the prompt is {tokens} tokens, more than the {POSITIONS} positions of model "
        f"{name!r} (max_position_embeddings in its config): no forward pass is run and the case has no verdict; "
        "shorten its transcript (the chapter's primer and prelude count too)")
    assert score.clock.forward_passes == 0 and score.clock.seconds["forward"] == 0.0


def test_a_prompt_that_fits_but_whose_reading_would_not_is_an_error(tiny, tmp_path) -> None:
    """The text reading may follow a candidate through shorter tokens: every context it can pass must fit."""
    loaded, name = tiny
    filler = "a" * ((POSITIONS - 26) // 2)  # twice in the prompt: the input line and its output
    plan = planned(tmp_path, f">>> print('{filler}[1234567')\n{filler}[█", correct="1234567", wrong="2345678")
    tokens = len(loaded.tokenizer(plan.prompts[0].transcript.prompt)["input_ids"])
    assert tokens <= POSITIONS < tokens + 6  # the text reading may pass the prompt and 6 tokens of "1234567"
    with pytest.raises(GotchasError) as error:
        scorer(loaded).score(plan)
    assert str(error.value) == (
        f"a.yaml:5: case 'one': the prompt is {tokens} tokens and reading it needs contexts of up to {tokens + 6}, "
        f"more than the {POSITIONS} positions of model {name!r} (max_position_embeddings in its config): no forward "
        "pass is run and the case has no verdict; shorten its transcript (the chapter's primer and prelude count "
        "too)")


def test_the_guard_stops_a_pass_that_would_run_past_the_positions(tiny) -> None:
    loaded, _ = tiny
    scorer(loaded)._guarded(TransformersBackend(loaded))
    with pytest.raises(TooLong, match="^1025 tokens for 1024 positions$"):
        loaded.model(input_ids=torch.zeros((1, POSITIONS + 1), dtype=torch.long), logits_to_keep=1, use_cache=False)


# -- non-finite numbers ---------------------------------------------------------------------------------------------


@pytest.fixture
def poisoned(tiny):
    """The tiny model with one weight of its lm_head set to `value` (restored afterwards)."""
    loaded, _ = tiny
    head = loaded.model.lm_head.weight
    token, last = loaded.tokenizer.convert_tokens_to_ids(["2", "["])
    saved = head[token, last].item()

    def poison(value: float) -> None:
        with torch.no_grad():
            head[token, last] = value

    yield poison
    with torch.no_grad():
        head[token, last] = saved


@pytest.mark.parametrize("value, found", [
    (float("nan"), " (P(correct) nan, P(wrong) nan)"),
    (float("inf"), " (P(correct) nan, P(wrong) nan)"),
    (float("-inf"), " (NaN or infinity)"),
])
def test_non_finite_logits_are_an_error_naming_model_and_case(tiny, poisoned, tmp_path, value: float,
                                                              found: str) -> None:
    """NaN or +inf in the head makes every probability NaN; -inf leaves finite probabilities (the candidate's is 0)
    from a logit no finite model gives. Either way: an error, never a verdict."""
    poisoned(value)
    with pytest.raises(GotchasError) as error:
        scorer(tiny[0]).score(planned(tmp_path, ">>> [1, 2]\n[█"))
    assert str(error.value) == (
        f"a.yaml:5: case 'one': model {tiny[1]!r} gave non-finite logits at the cut{found}: no verdict can come "
        "from them, so the case has none and nothing of it is recorded. Check the model's weights, or its dtype "
        "(float16 overflows past 65504: try --gotchas-dtype bfloat16 or float32)")
