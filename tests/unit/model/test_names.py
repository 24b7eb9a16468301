"""names.py: a short model name that is no embedded model, folder or file is refused by name, with the closest
embedded model; offline, a hub id the hub cache does not hold is refused without asking the hub."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_gotchas.model import names
from pytest_gotchas.model.ref import ModelRef

TAIL = ("The embedded models are gemma-3-270m, smollm2-135m. A model on the Hugging Face hub is named by its owner "
        "too (owner/name, e.g. HuggingFaceTB/SmolLM2-135M-Instruct) and is downloaded once, which needs the network; "
        "a folder or a .gguf file must exist")


def refusal(name: str, flag: str = "--gotchas-", hub_cache: Path | None = None) -> str | None:
    return names.refusal(ModelRef.parse(name), flag, hub_cache)


@pytest.fixture(autouse=True)
def online(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.chdir(tmp_path)


def test_a_mistyped_embedded_name_names_the_closest() -> None:
    assert refusal("gemma-3-27m") == ("--gotchas-model gemma-3-27m: no embedded model, folder or file is named "
                                      "'gemma-3-27m'; did you mean gemma-3-270m? " + TAIL)
    assert refusal("smollm-135m", flag="--") == ("--model smollm-135m: no embedded model, folder or file is named "
                                                 "'smollm-135m'; did you mean smollm2-135m? " + TAIL)


def test_a_name_like_no_embedded_model_names_them_all() -> None:
    assert refusal("llama") == "--gotchas-model llama: no embedded model, folder or file is named 'llama'. " + TAIL
    assert refusal("model.gguf") == ("--gotchas-model model.gguf: no embedded model, folder or file is named "
                                     "'model.gguf'. " + TAIL)


def test_a_backend_prefix_is_looked_through() -> None:
    assert refusal("vllm:gemma-3-27m") == ("--gotchas-model vllm:gemma-3-27m: no embedded model, folder or file is "
                                           "named 'gemma-3-27m'; did you mean gemma-3-270m? " + TAIL)
    assert refusal("vllm:gemma-3-270m") is None and refusal("vllm:") is None


@pytest.mark.parametrize("name", [None, "gemma-3-270m", "smollm2-135m", "google/gemma-3-270m", "./nowhere",
                                  "/no/such/folder", "~/nowhere.gguf", "here", "here.gguf"])
def test_names_that_may_load_are_left_to_the_loader(name: str | None, tmp_path: Path) -> None:
    (tmp_path / "here").mkdir()
    (tmp_path / "here.gguf").write_bytes(b"")
    assert refusal(name) is None


def test_offline_a_hub_id_must_be_in_the_hub_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert refusal("google/gemma-3-270m", hub_cache=cache) == (
        f"--gotchas-model google/gemma-3-270m: HF_HUB_OFFLINE is set, so the hub is not asked, and its cache "
        f"({cache}) holds no copy of google/gemma-3-270m. Run once without HF_HUB_OFFLINE to download it, or name "
        "an embedded model (gemma-3-270m, smollm2-135m), a local folder or a .gguf file")
    snapshot = cache / "models--google--gemma-3-270m" / "snapshots" / "abc"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (cache / "models--google--gemma-3-270m" / "refs").mkdir()
    (cache / "models--google--gemma-3-270m" / "refs" / "main").write_text("abc")
    assert refusal("google/gemma-3-270m", hub_cache=cache) is None
    assert refusal("./a/b/c", hub_cache=cache) is None  # a path, not a hub id: the loader says it does not exist
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    assert refusal("other/model", hub_cache=cache) is None  # online: the hub is asked
