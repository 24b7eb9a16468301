"""convert.py: a GGUF file is converted once into the cache and the user's file is left alone; a failed conversion
leaves nothing behind; conversions started at once wait for one."""

from __future__ import annotations

import hashlib
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers.loading import RULES, spec
from helpers.tinymodel import build_tiny_model

from pytest_gotchas.model import convert as convert_module
from pytest_gotchas.model.convert import ConversionError, convert_gguf
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

    out = cache / "models" / f"my-model-{hashlib.sha256(b'GGUF stand-in').hexdigest()[:12]}"
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
