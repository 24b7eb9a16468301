"""The text reading: the probability that the output, as text, continues with a candidate, summed over every token
and chain of tokens that writes it; checked against a brute-force enumeration on tiny models whose vocabularies are
small enough to enumerate, and through the plugin against the write-up's token reading."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from helpers.tinymodel import DEFAULT_MERGES, build_tiny_model

from pytest_gotchas.scoring import readings as score_mod
from pytest_gotchas.scoring.cut import plan_cut
from pytest_gotchas.model.load import LoadedModel, ModelSpec, load_model
from pytest_gotchas.scoring.readings import Cut, round_to, score_batch
from pytest_gotchas.scoring.vocab import Vocab, VocabCache, VocabError, build

MERGES = (*DEFAULT_MERGES, "])", "],", "ru", "Tr", "Tru", "True")
# After "2": the merged "])" and "]," carry most of the mass; the lone "]" almost none (the issue's case).
# After "6" the healed cut: ")," and ")]" as one token, and ")" followed by "," or "]" as a chain.
RULES = {
    "2": {"])": 3.0, "],": 2.0, ",": 1.5, "]": -2.0},
    "6": {"),": 1.0, ")]": 0.5, ")": 1.5},
    ")": {",": 1.0, "]": 2.0},
    ":": {"T": 1.0, "Tr": 0.5, "True": 2.0, "F": 1.0},
    "T": {"r": 1.0, "ru": 0.5},
    "Tr": {"u": 2.0},
    "Tru": {"e": 2.0},
    "r": {"u": 1.0},
    "u": {"e": 3.0},
}


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
    reading = score_batch(tiny, [Cut(plan, prompt, correct, wrong)], vocab=lambda: build(tiny.tokenizer),
                          main="text")[0].readings["text"]
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
    reading = score_batch(tiny, [Cut(plan, prompt, correct, wrong)], vocab=lambda: build(tiny.tokenizer),
                          main="text")[0].readings["text"]
    exact = brute_force(tiny, plan.context_ids, "False", score_mod.MAX_DEPTH)
    assert 0 < reading.neglected
    assert exact - reading.neglected <= reading.p_wrong <= exact + 2 ** -8


def test_the_issue_case_is_a_miss_by_text_and_ok_by_token(tiny: LoadedModel) -> None:
    prompt = "(1, [2"
    plan = plan_cut(tiny.tokenizer, prompt, ",", "]")
    assert plan.kind == "plain"
    readings = score_batch(tiny, [Cut(plan, prompt, ",", "]")], vocab=lambda: build(tiny.tokenizer),
                           main="text")[0].readings
    assert readings["token"].verdict == "ok" and readings["text"].verdict == "MISS"
    assert readings["text"].p_correct == readings["token"].p_correct  # only the lone "," writes ","
    assert readings["text"].wrong_tokens[:2] == ["'])' 62.50%", "'],' 23.05%"]


def test_the_vocabulary_of_a_character_bpe(tiny: LoadedModel) -> None:
    vocab = build(tiny.tokenizer)
    ids = tiny.tokenizer.convert_tokens_to_ids
    assert vocab.texts[ids("])")] == b"])"
    assert vocab.texts[ids("<bos>")] == b""  # special tokens write no text
    assert sorted(vocab.extending(b"]")) == sorted(ids(t) for t in ("]", "])", "],"))
    assert vocab.proper_prefixes(b"True") == [(ids("T"), 1), (ids("Tr"), 2), (ids("Tru"), 3)]


def byte_level_tokenizer():
    """A GPT-2-style byte-level BPE, as SmolLM2's: tokens are written in the byte-to-character table."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from pytest_gotchas.scoring.vocab import _bytes_to_unicode

    table = _bytes_to_unicode()
    vocab = {table[b]: n for n, b in enumerate(range(256))}
    merges = [("Ġ", "["), ("]", ")")]
    for left, right in merges:
        vocab[left + right] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    backend = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.add_special_tokens(["<|endoftext|>"])
    return PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|endoftext|>")


def test_the_vocabulary_of_a_byte_level_bpe() -> None:
    tokenizer = byte_level_tokenizer()
    vocab = build(tokenizer)
    ids = tokenizer.convert_tokens_to_ids
    assert vocab.texts[ids("Ġ[")] == b" ["
    assert vocab.texts[ids("])")] == b"])"
    assert vocab.texts[ids("Ã")] == bytes([0xC3])  # half of a two-byte character: its byte, not a replacement
    assert vocab.texts[ids("<|endoftext|>")] == b""
    assert [(i, n) for i, n in vocab.proper_prefixes(" [x".encode())] == [(ids("Ġ"), 1), (ids("Ġ["), 2)]


def test_a_decoder_it_cannot_read_is_an_error() -> None:
    from tokenizers import decoders

    tokenizer = byte_level_tokenizer()
    tokenizer.backend_tokenizer.decoder = decoders.WordPiece()
    with pytest.raises(VocabError, match=r"cannot read the text of its tokens: its decoder uses \['WordPiece'\]"):
        build(tokenizer)


def test_the_table_is_kept_sealed_on_disk(tiny: LoadedModel, tmp_path: Path) -> None:
    asked = []

    def tokenizer():
        asked.append(1)
        return tiny.tokenizer

    first = VocabCache(tmp_path, "key").get(tokenizer)
    again = VocabCache(tmp_path, "key").get(lambda: pytest.fail("the tokenizer was asked again"))
    assert again.texts == first.texts and asked == [1]
    path = next(tmp_path.glob("vocab-*.json"))
    data = json.loads(path.read_text())
    data["payload"][5] = "AAAA"
    path.write_text(json.dumps(data))
    assert VocabCache(tmp_path, "key").get(tokenizer).texts == first.texts and asked == [1, 1]


def test_vocab_lookups_by_hand() -> None:
    vocab = Vocab([b"", b"a", b"ab", b"abc", b"b", b"ab"])
    assert sorted(vocab.extending(b"ab")) == [2, 3, 5]
    assert vocab.extending(b"z") == []
    assert vocab.proper_prefixes(b"abc") == [(1, 1), (2, 2), (5, 2)]
