"""cut.py: tokenization at the cut, on a tiny model whose logits are set by hand: a plain cut, a healed cut backed
off before a merged token, a chain where one side starts with a shorter token, and every cut a tokenizer cannot
represent."""

from __future__ import annotations

import pytest
from helpers.cuts import CHAIN, HEALED, PLAIN, RULES, ids
from helpers.tinymodel import build_tiny_model, build_tokenizer
from tokenizers import normalizers

from pytest_gotchas.model.load import LoadedModel, ModelSpec, load_model
from pytest_gotchas.scoring.cut import CutError, plan_cut


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> LoadedModel:
    root = tmp_path_factory.mktemp("tiny")
    folder = build_tiny_model(root / "model", RULES)
    return load_model(ModelSpec(name=str(folder), dtype="bfloat16", device="cpu"), root / "cache")


def test_plain_cut(tiny: LoadedModel) -> None:
    tok = tiny.tokenizer
    plan = plan_cut(tok, *PLAIN)
    assert plan.kind == "plain"
    assert plan.context_ids == plan.prompt_ids == ids(tok, "x = ")
    assert plan.context_ids[0] == tok.bos_token_id
    assert (plan.correct_tokens, plan.wrong_tokens) == (("1",), ("2",))
    assert plan.backed_off_chars == 0
    assert (plan.plain_correct_id, plan.plain_wrong_id) == (plan.correct_ids[0], plan.wrong_ids[0])


def test_healed_cut_backs_off_before_a_merged_token(tiny: LoadedModel) -> None:
    tok = tiny.tokenizer
    assert tok.convert_ids_to_tokens(list(ids(tok, "(2, 2),")))[-1] == "),"
    plan = plan_cut(tok, *HEALED)
    assert plan.kind == "healed"
    assert plan.context_ids == ids(tok, "(2, 2")
    assert plan.prompt_ids == ids(tok, "(2, 2)")
    assert (plan.correct_tokens, plan.wrong_tokens) == (("),",), (")]",))
    assert plan.backed_off_chars == 1
    assert tok.convert_ids_to_tokens([plan.plain_correct_id, plan.plain_wrong_id]) == [",", "]"]


def test_chain_cut_when_one_side_starts_with_a_shorter_token(tiny: LoadedModel) -> None:
    tok = tiny.tokenizer
    plan = plan_cut(tok, *CHAIN)
    assert plan.kind == "chain"
    assert plan.context_ids == ids(tok, "[{")
    assert (plan.correct_tokens, plan.wrong_tokens) == (("'", "k"), ("'.",))
    assert plan.backed_off_chars == 1
    swapped = plan_cut(tok, "[{'", ".", "k")
    assert (swapped.correct_tokens, swapped.wrong_tokens) == (("'.",), ("'", "k"))


def test_unknown_character_is_untokenizable(tiny: LoadedModel) -> None:
    with pytest.raises(CutError) as error:
        plan_cut(tiny.tokenizer, "x = ", "█", "1")
    assert str(error.value) == (
        "cut not representable by this tokenizer: prompt ends [..., 'x', ' ', '=', ' ']; "
        "correct \"█\" -> ['<unk>']; wrong \"1\" -> ['1']: "
        "the correct side maps '█' to the unknown token '<unk>'"
    )


def test_chain_longer_than_eight_tokens_is_untokenizable() -> None:
    # Merges that need the wrong side's "j" fuse its whole text into one token, so the
    # two sides share only BOS and the correct side needs all ten characters.
    merges = ["ij", "hij", "ghij", "fghij", "efghij", "defghij", "cdefghij", "bcdefghij", "abcdefghij"]
    tok = build_tokenizer(merges)
    with pytest.raises(CutError) as error:
        plan_cut(tok, "abcdefghi", "k", "j")
    assert str(error.value) == (
        "cut not representable by this tokenizer: prompt ends [..., 'f', 'g', 'h', 'i']; "
        "correct \"k\" -> ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'k']; wrong \"j\" -> ['abcdefghij']: "
        "the correct side needs 10 tokens to reach past the cut (at most 8)"
    )


def test_tokenizer_that_drops_text_is_untokenizable() -> None:
    tok = build_tokenizer()
    tok.backend_tokenizer.normalizer = normalizers.Replace(" ", "")
    with pytest.raises(CutError, match=r"the correct side's token offsets do not cover ' 1'$"):
        plan_cut(tok, "x =", " 1", "2")


def test_tokenizer_that_changes_text_is_untokenizable() -> None:
    tok = build_tokenizer()
    tok.backend_tokenizer.normalizer = normalizers.Lowercase()
    with pytest.raises(CutError, match=r"the correct side's tokens decode to 'x = t', which does not end with 'T'$"):
        plan_cut(tok, "x = ", "T", "f")


@pytest.mark.parametrize("correct, wrong", [("", "x"), ("x", ""), ("True", "Tru")])
def test_candidates_must_differ_in_their_first_character(tiny: LoadedModel, correct: str, wrong: str) -> None:
    with pytest.raises(CutError, match="must be non-empty and differ in their first character"):
        plan_cut(tiny.tokenizer, "x = ", correct, wrong)
