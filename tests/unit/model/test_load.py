"""load.py: a tiny model folder loads through the code path a user's model takes, in the dtype asked for; every
way a load fails is one clear line; the tokenizer's checks; the cached weights digest reused; the device each
xdist worker gets and its share of the CPU threads; and importing the plugin imports no torch."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
import torch
import transformers
from helpers.loading import LOAD_SCRIPT, RULES, listing, load_error, spec
from helpers.results import token
from helpers.tinymodel import build_tiny_model, build_unfaithful_model

from pytest_gotchas.backends.transformers import TransformersBackend
from pytest_gotchas.model import hashes as hashes_module
from pytest_gotchas.model import numerics
from pytest_gotchas.model.convert import converted_folder
from pytest_gotchas.model.device import resolve_device, share_cpu_threads
from pytest_gotchas.model.load import ModelLoadError, load_model
from pytest_gotchas.model.tokenizer import check_tokenizer
from pytest_gotchas.scoring.cut import plan_cut
from pytest_gotchas.scoring.readings import score

PROMPT = "1 == 1\n"


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", RULES)


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
    result = score(TransformersBackend(loaded), plan_cut(loaded.tokenizer, PROMPT, "True", "False"))
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


def test_a_folder_saved_without_its_tokenizer_names_the_missing_files(tmp_path: Path) -> None:
    """model.save_pretrained() alone (a common mistake): the load names what is missing, instead of every case
    failing as a cut the tokenizer cannot represent."""
    folder = build_tiny_model(tmp_path / "weights-only", RULES)
    for file in folder.iterdir():
        if file.name.startswith(("tokenizer", "special_tokens")):
            file.unlink()
    assert load_error(folder, tmp_path) == (
        f"cannot load model '{folder}': {folder} has no tokenizer (none of tokenizer.json, tokenizer.model, "
        "vocab.json, vocab.txt, spiece.model, sentencepiece.bpe.model); model.save_pretrained() writes only the "
        "weights and config. Save the tokenizer into the same folder too (tokenizer.save_pretrained(folder)): see "
        "docs/models.md.")


def test_unloadable_model_gives_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "gemma3_text", "vocab_size": 4}))
    (folder / "tokenizer.json").write_text("{}")  # a tokenizer is there: the weights are what fails
    message = load_error(folder, tmp_path)
    assert message.startswith(f"cannot load model '{folder}' from {folder}: ")
    assert message.endswith(". Check that it is a causal language model that transformers can load.")
    assert "\n" not in message


def test_a_model_that_loads_but_cannot_run_is_one_load_error(tiny_folder: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object) -> None:
        raise IndexError("index out of range in self")

    monkeypatch.setattr(numerics, "probe", broken)
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


class FakeTokenizer:
    def __init__(self, is_fast: bool = True, bos: str | None = "<s>", eos: str = "</s>", adds_bos: bool = True):
        self.is_fast, self.bos_token, self.eos_token = is_fast, bos, eos
        self.bos_token_id = None if bos is None else 1
        self.adds_bos = adds_bos

    all_special_ids: list[int] = []

    def __call__(self, text: str) -> dict[str, list[int]]:
        return {"input_ids": ([1] if self.adds_bos else []) + [7]}

    def __len__(self) -> int:
        return 0  # no vocabulary to sample: the round trip passes (tests below take it on real tokenizers)


def test_tokenizer_checks() -> None:
    with pytest.raises(ModelLoadError) as error:
        check_tokenizer(FakeTokenizer(is_fast=False), "m", spec("m"))
    assert str(error.value) == (
        "cannot use model 'm': its tokenizer (FakeTokenizer) is not a fast tokenizer, and character offsets "
        "are needed to check the cut. Save the model with a tokenizer.json."
    )
    # A tokenizer that adds no BOS is its model's own convention (SmolLM2's GGUF metadata says so): not refused;
    # --gotchas-bos overrides it (tests/plugin/test_models.py).
    assert check_tokenizer(FakeTokenizer(adds_bos=False), "m", spec("m")) == []
    assert check_tokenizer(FakeTokenizer(), "m", spec("m")) == []
    assert check_tokenizer(FakeTokenizer(bos=None, adds_bos=False), "m", spec("m")) == []  # no BOS at all (Qwen style)
    gpt2 = FakeTokenizer(bos="<|endoftext|>", eos="<|endoftext|>", adds_bos=False)
    assert check_tokenizer(gpt2, "m", spec("m")) == []  # GPT-2 style


def test_load_reuses_the_cached_digest(tiny_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = load_model(spec(tiny_folder), tmp_path)
    monkeypatch.setattr(hashes_module, "_hash_file", lambda path: pytest.fail(f"hashed {path} again"))
    assert load_model(spec(tiny_folder), tmp_path).info == first.info


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


# -- CPU threads under pytest-xdist (no timing is asserted here) -----------------------------------------------------


@pytest.fixture
def threads(monkeypatch: pytest.MonkeyPatch):
    before = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    torch.set_num_threads(8)
    yield monkeypatch
    torch.set_num_threads(before)


def test_xdist_workers_share_the_cores(threads: pytest.MonkeyPatch) -> None:
    assert share_cpu_threads("cpu", 4) == 2
    assert torch.get_num_threads() == 2


@pytest.mark.parametrize("device, workers, omp", [("cpu", 0, None), ("cpu", 1, None), ("cuda:0", 4, None),
                                                  ("cpu", 4, "8")])
def test_left_alone(threads: pytest.MonkeyPatch, device: str, workers: int, omp: str | None) -> None:
    if omp is not None:
        threads.setenv("OMP_NUM_THREADS", omp)
    assert share_cpu_threads(device, workers) is None
    assert torch.get_num_threads() == 8


# -- a model cache that cannot be written (hostile input round two) --------------------------------------------------


BWRAP = shutil.which("bwrap")


@pytest.mark.skipif(BWRAP is None, reason="bubblewrap is needed to make a folder read-only for root")
def test_a_read_only_cache_with_the_model_converted_loads_it(tmp_path) -> None:
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"a GGUF file, converted before")
    full, bare = tmp_path / "full", tmp_path / "bare"
    for cache in (full, bare):
        build_tiny_model(converted_folder(cache, "tiny", hashlib.sha256(gguf.read_bytes()).hexdigest()),
                         {"[": {"1": 2.0}})
    env = {"PYTHONPATH": str(Path(hashes_module.__file__).parents[2]), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    warm = subprocess.run([sys.executable, "-c", LOAD_SCRIPT, str(gguf), str(full)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert warm.returncode == 0, warm.stderr
    assert (full / hashes_module.SHA256_CACHE).is_file() and not (bare / hashes_module.SHA256_CACHE).exists()
    before = {cache: listing(cache) for cache in (full, bare)}
    read_only = [BWRAP, "--dev-bind", "/", "/", "--ro-bind", str(full), str(full), "--ro-bind", str(bare), str(bare)]
    cold = subprocess.run([*read_only, sys.executable, "-c", LOAD_SCRIPT, str(gguf), str(full), str(bare)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert cold.returncode == 0, cold.stderr
    answers = [json.loads(line) for line in cold.stdout.splitlines()]
    assert [a[1:] for a in answers] == [json.loads(warm.stdout)[1:]] * 2  # the same fingerprints from both caches
    assert {cache: listing(cache) for cache in (full, bare)} == before  # no lock file, no sha256.json written


# -- a tokenizer that fails the converter's round trip (issue 50, item 13) ------------------------------------------

ROUND_TRIP = ("only 96 of 130 sampled vocabulary tokens tokenize back to themselves (a faithful tokenizer: nearly all), "
              "so every prompt would be cut into other tokens than the model's own")


@pytest.fixture(scope="module")
def unfaithful_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_unfaithful_model(tmp_path_factory.mktemp("unfaithful") / "model", RULES)


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_a_folder_whose_tokenizer_fails_the_round_trip_is_refused(unfaithful_folder: Path, tmp_path: Path,
                                                                   lazy: bool) -> None:
    """It loaded without a word, and a case whose prompt it misread was scored."""
    message = (f"cannot use model '{unfaithful_folder}': its tokenizer fails the round trip a converted model's must "
               f"pass: {ROUND_TRIP}. Give the folder the tokenizer the model was trained with; or, to score it as it "
               "is, run with --gotchas-allow-unfaithful-tokenizer (the report names the setting)")
    with pytest.raises(ModelLoadError) as error:
        _ = load_model(spec(unfaithful_folder), tmp_path, lazy_tokenizer=lazy).tokenizer
    assert str(error.value) == message


def test_the_setting_lets_it_through_with_a_note_and_names_it(unfaithful_folder: Path, tiny_folder: Path,
                                                              tmp_path: Path) -> None:
    loaded = load_model(spec(unfaithful_folder, allow_unfaithful_tokenizer=True), tmp_path, lazy_tokenizer=True)
    assert loaded.info.allow_unfaithful_tokenizer and loaded.notes == []
    assert loaded.tokenizer_key is not None and loaded.tokenizer_key.endswith("+unfaithful-allowed")
    assert loaded.tokenizer("ag", add_special_tokens=False)["input_ids"] != [loaded.tokenizer.get_vocab()["ag"]]
    assert loaded.notes == [
        f"model '{unfaithful_folder}': its tokenizer fails the round trip a converted model's must pass (96 of 130 "
        "sampled vocabulary tokens tokenize back to themselves); scored anyway, as "
        "--gotchas-allow-unfaithful-tokenizer asks: its prompts may be cut into other tokens than the model's own"]
    faithful = load_model(spec(tiny_folder, allow_unfaithful_tokenizer=True), tmp_path)
    assert faithful.notes == [] and faithful.info.allow_unfaithful_tokenizer
    assert not load_model(spec(tiny_folder), tmp_path).info.allow_unfaithful_tokenizer


FREED = """
import gc, sys, weakref
from pathlib import Path
from pytest_gotchas.model.load import ModelSpec, load_model
loaded = load_model(ModelSpec(name=sys.argv[1], device="cpu"), Path(sys.argv[2]))
model = weakref.ref(loaded.model)
frozen = not any(o is loaded.model for o in gc.get_objects())  # in no generation the collector walks
del loaded
gc.collect()
print(frozen, model() is None)
"""


def test_a_loaded_model_is_frozen_and_still_freed_when_let_go(tiny_folder: Path, tmp_path: Path) -> None:
    # heap.frozen around model/load.py's imports and weights, in a process whose load imports torch and
    # transformers: what the load made is out of the cyclic collector's sight, and none of the imports' cyclic
    # garbage (exceptions whose tracebacks hold the frames above them) was frozen with it, or it would hold
    # load_model's frame and so the model once let go.
    env = {"PYTHONPATH": str(Path(hashes_module.__file__).parents[2]), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", FREED, str(tiny_folder), str(tmp_path)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]
