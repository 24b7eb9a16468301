"""convert.py: a GGUF file is converted once into the cache and the user's file is left alone; a failed conversion
leaves nothing behind; conversions started at once wait for one."""

from __future__ import annotations

import hashlib
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from helpers.loading import RULES, spec
from helpers.tinymodel import build_tiny_model

from pytest_gotchas.model import convert as convert_module
from pytest_gotchas.model.convert import CONVERSION, ConversionError, RoundTrip, convert_gguf, round_trip, unfaithful
from pytest_gotchas.model.load import load_model


def test_gguf_is_converted_once_into_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gguf = tmp_path / "my-model.gguf"
    gguf.write_bytes(b"GGUF stand-in")
    converted: list[Path] = []

    def fake_dequantize(source: Path, out: Path, shown: str) -> None:
        converted.append(source)
        build_tiny_model(out, RULES)

    monkeypatch.setattr(convert_module, "_dequantize", fake_dequantize)
    cache = tmp_path / "cache"
    lines: list[str] = []
    loaded = load_model(spec(gguf), cache, log=lines.append)
    again = load_model(spec(gguf), cache, log=lines.append)

    out = cache / "models" / f"my-model-{hashlib.sha256(b'GGUF stand-in').hexdigest()[:12]}-c{CONVERSION}"
    assert loaded.info.source == again.info.source == str(out)
    assert loaded.info.name == str(gguf)
    assert converted == [gguf.absolute()]
    assert lines == [f"pytest-gotchas: converting {gguf} into {out} (once; about a minute)"]
    assert sorted(p.name for p in (cache / "models").iterdir()) == [out.name, out.name + ".lock"]
    assert gguf.exists()  # the user's file is never touched


def test_failed_conversion_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(source: Path, out: Path, shown: str) -> None:
        out.mkdir()
        raise ConversionError("cannot convert")

    def assemble(scratch: Path) -> Path:
        path = scratch / "model.gguf"
        path.write_bytes(b"assembled")
        return path

    monkeypatch.setattr(convert_module, "_dequantize", failing)
    out = tmp_path / "models" / "m-123"
    with pytest.raises(ConversionError, match="cannot convert"):
        convert_gguf(assemble, out, "m", lambda line: None)
    assert [p.name for p in (tmp_path / "models").iterdir()] == ["m-123.lock"]


def test_parallel_conversions_wait_for_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[Path] = []

    def slow_dequantize(source: Path, out: Path, shown: str) -> None:
        started.append(source)
        time.sleep(0.3)
        out.mkdir()

    monkeypatch.setattr(convert_module, "_dequantize", slow_dequantize)
    out = tmp_path / "models" / "m-123"
    gguf = tmp_path / "m.gguf"
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(lambda _: convert_gguf(lambda scratch: gguf, out, "m", print), range(3)))
    assert results == [out, out, out]
    assert started == [gguf]


# -- a model cache that cannot be written (hostile input round two) --------------------------------------------------


def test_a_converted_model_is_used_without_the_lock(tmp_path, no_locks) -> None:
    out = tmp_path / "models" / "m-0123456789ab"
    out.mkdir(parents=True)

    def never(scratch: Path) -> Path:
        raise AssertionError("converted again")

    assert convert_gguf(never, out, "m", print) == out


def test_a_conversion_into_a_cache_that_cannot_be_written_is_one_error(tmp_path) -> None:
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "models" / "m-0123456789ab"
    with pytest.raises(ConversionError) as error:
        convert_gguf(lambda scratch: scratch / "m.gguf", out, "m", print)
    assert str(error.value) == (f"cannot convert model 'm': the model cache {out.parent} cannot be written (Not a "
                                "directory); point --gotchas-cache-dir at a folder that can be")


def test_the_conversion_counts_its_tensors_for_a_progress_line() -> None:
    """The GGUF reader's own tqdm bar (silenced: pytest's output is not the place) becomes counted steps for
    whoever asked for them (the plugin's terminal progress line); nobody asked, nothing is said."""
    from transformers import modeling_gguf_pytorch_utils as reader

    with convert_module._parse_gguf_once():
        assert list(reader.tqdm(["a", "b"], desc="tensors")) == ["a", "b"]
    steps: list[tuple[str, int, int]] = []
    token = convert_module.STEPS.set(lambda what, done, total: steps.append((what, done, total)))
    try:
        with convert_module._parse_gguf_once():
            assert list(reader.tqdm(["a", "b"], desc="tensors")) == ["a", "b"]
    finally:
        convert_module.STEPS.reset(token)
    assert steps == [("converting the GGUF file: dequantizing tensor 1 of 2", 0, 0),
                     ("converting the GGUF file: dequantizing tensor 2 of 2", 0, 0)]


class Vocabulary:
    """A tokenizer stand-in: `pieces` are its tokens' texts; tokenizing greedily takes the longest piece first, or,
    when `split`, one character at a time (as an unfaithful rebuild cuts words apart)."""

    all_special_ids = [0]

    def __init__(self, pieces: list[str], split: bool = False) -> None:
        self.pieces, self.split = pieces, split

    def __len__(self) -> int:
        return len(self.pieces)

    def decode(self, ids: list[int]) -> str:
        return "".join(self.pieces[i] for i in ids)

    def __call__(self, text: str | list[str], add_special_tokens: bool) -> dict[str, list[Any]]:
        if isinstance(text, list):  # a batch, as transformers tokenizes one
            return {"input_ids": [self(one, add_special_tokens)["input_ids"] for one in text]}
        ids = []
        while text:
            fits = [i for i, piece in enumerate(self.pieces) if i and piece and text.startswith(piece)
                    and (len(piece) == 1 or not self.split)]
            best = max(fits, key=lambda i: len(self.pieces[i]))
            ids.append(best)
            text = text[len(self.pieces[best]):]
        return {"input_ids": ids}


PIECES = ["<bos>", "", "\ufffd", *"abcdeFlsTru", "False", "True", "ab", "cd"]


def test_a_faithful_tokenizer_gives_its_tokens_back() -> None:
    # the special token, the empty piece and the partial UTF-8 byte are not sampled
    assert round_trip(Vocabulary(PIECES)) == RoundTrip(themselves=15, sampled=15)
    assert RoundTrip(15, 15).faithful and RoundTrip(0, 0).faithful


def test_an_unfaithful_rebuild_is_refused_with_the_numbers() -> None:
    checked = round_trip(Vocabulary(PIECES, split=True))
    assert checked == RoundTrip(themselves=11, sampled=15) and not checked.faithful
    assert unfaithful("gemma-3-270m (embedded)", checked, "5.17.0") == (
        "cannot convert model 'gemma-3-270m (embedded)': transformers 5.17.0 rebuilt its tokenizer from the GGUF file "
        "unfaithfully: only 11 of 15 sampled vocabulary tokens tokenize back to themselves (a faithful tokenizer: "
        "nearly all), so every prompt would be cut into other tokens than the model's own. Install transformers "
        "5.18.0 or later (5.16.1 and 5.17.0 rebuild gemma-3-270m's unfaithfully, 5.18.0 to 5.25.0 faithfully) and "
        "run again; nothing was written to the model cache")


def test_the_sample_strides_over_the_whole_vocabulary() -> None:
    seen: list[int] = []

    class Counting(Vocabulary):
        def decode(self, ids: list[int]) -> str:
            seen.extend(ids)
            return super().decode(ids)

    round_trip(Counting(PIECES * 10), sample=20)
    assert seen == list(range(0, 180, 9))


def test_a_conversion_whose_tokenizer_is_unfaithful_writes_nothing(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import transformers

    saved: list[Path] = []

    class Model:
        def save_pretrained(self, out: Path) -> None:
            saved.append(out)

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", lambda *a, **k: Model())
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda *a, **k: Vocabulary(PIECES, split=True))
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF stand-in")
    out = tmp_path / "models" / "m-0123456789ab"
    with pytest.raises(ConversionError) as error:
        convert_gguf(lambda scratch: gguf, out, "m", lambda line: None)
    assert str(error.value) == unfaithful("m", RoundTrip(11, 15), transformers.__version__)
    assert saved == [] and not out.exists()
    assert sorted(p.name for p in out.parent.iterdir()) == [out.name + ".lock"]  # the scratch folder is gone
