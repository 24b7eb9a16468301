"""vocab.py: what each token of a vocabulary writes, as bytes, for a character BPE and a byte-level BPE (as
SmolLM2's); a decoder it cannot read is an error; the table is kept sealed on disk; the lookups the text reading
needs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.textreading import MERGES, RULES
from helpers.tinymodel import build_tiny_model

from pytest_gotchas.model.load import LoadedModel, ModelSpec, load_model
from pytest_gotchas.scoring.vocab import Vocab, VocabCache, VocabError, build


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> LoadedModel:
    folder = build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", RULES, merges=MERGES)
    return load_model(ModelSpec(name=str(folder), device="cpu"), tmp_path_factory.mktemp("cache"))


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
