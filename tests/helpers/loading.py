"""Loading a model in the tests of model/: a spec for the CPU, the one-line error a load gives, and the rules of
the tiny model that most of them load."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_gotchas.model.load import ModelLoadError, ModelSpec, load_model

RULES = {"\n": {"T": 1.0, "F": 0.0}}


def spec(name: str | Path | None, **kwargs) -> ModelSpec:
    return ModelSpec(name=None if name is None else str(name), device=kwargs.pop("device", "cpu"), **kwargs)


def load_error(name: str | Path | None, cache: Path, **kwargs) -> str:
    with pytest.raises(ModelLoadError) as error:
        load_model(spec(name, **kwargs), cache)
    return str(error.value)
