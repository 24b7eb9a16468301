"""A model name that cannot load is one usage error before anything is collected or executed: a short name that is
no embedded model, folder or file names the closest embedded model; offline, a hub id the hub cache lacks is
refused without a request (a minute of retries and a failed case, before)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from helpers.chapters import PAIR_CHAPTER

TAIL = ("The embedded models are gemma-3-270m, smollm2-135m. A model on the Hugging Face hub is named by its owner "
        "too (owner/name, e.g. HuggingFaceTB/SmolLM2-135M-Instruct) and is downloaded once, which needs the network; "
        "a folder or a .gguf file must exist")


@pytest.fixture
def chapter(pytester: pytest.Pytester) -> Path:
    path = pytester.path / "demo.yaml"
    path.write_text(PAIR_CHAPTER)
    return path


@pytest.mark.parametrize("model", ["gemma-3-27m", "vllm:gemma-3-27m"])
def test_a_mistyped_model_is_one_usage_error_at_the_start(pytester: pytest.Pytester, chapter: Path,
                                                          model: str) -> None:
    result = pytester.runpytest_subprocess("--gotchas", "--gotchas-model", model, "--gotchas-model", "smollm2-135m")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert [line for line in result.errlines if line] == [f"ERROR: --gotchas-model {model}: no embedded model, folder or file is named "
                               f"'gemma-3-27m'; did you mean gemma-3-270m? {TAIL}"]
    assert "collected" not in result.stdout.str()  # refused before collection executes any snippet


def test_offline_a_hub_id_out_of_the_cache_is_refused_without_asking(pytester: pytest.Pytester, chapter: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    hub = pytester.path / "hub"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    started = time.monotonic()
    result = pytester.runpytest_subprocess("--gotchas", "--gotchas-model", "nobody/no-such-model")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert [line for line in result.errlines if line] == [
        f"ERROR: --gotchas-model nobody/no-such-model: HF_HUB_OFFLINE is set, so the hub is not asked, and its cache "
        f"({hub}) holds no copy of nobody/no-such-model. Run once without HF_HUB_OFFLINE to download it, or name an "
        "embedded model (gemma-3-270m, smollm2-135m), a local folder or a .gguf file"]
    assert time.monotonic() - started < 30  # no retries (a subprocess's start is the time)
