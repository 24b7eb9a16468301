"""embedded.py: the models that ship as PyPI packages, by short name (unique within a run), and the one error a
missing package gives."""

from __future__ import annotations

import pytest

from pytest_gotchas.model.embedded import short_name, short_names


@pytest.mark.parametrize("model, slug", [
    (None, "gemma-3-270m"), ("google/gemma-2-2b", "gemma-2-2b"), ("/models/My Model/", "My-Model"),
    ("~/w/gemma-3-270m-Q4_K_M.gguf", "gemma-3-270m-Q4_K_M"), ("C:\\m\\llama", "llama"), ("///", "model"),
])
def test_short_name(model: str | None, slug: str) -> None:
    assert short_name(model) == slug


def test_short_names_of_a_run_are_unique() -> None:
    assert short_names(["a/m", "b/m", None, "smollm2-135m"]) == ["m", "m-2", "gemma-3-270m", "smollm2-135m"]
