"""Loading a model in the tests of model/: a spec for the CPU, the one-line error a load gives, the rules of the
tiny model that most of them load, and a script that loads a model from caches in another process (LOAD_SCRIPT)
with what a cache folder holds (`listing`)."""

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

# python -c LOAD_SCRIPT MODEL CACHE...: the model loaded from each cache; prints [cache, weights sha256, tokenizer key].
LOAD_SCRIPT = """
import json, sys
from pathlib import Path
from pytest_gotchas.model.load import ModelSpec, load_model
for cache in sys.argv[2:]:
    loaded = load_model(ModelSpec(name=sys.argv[1], device="cpu"), Path(cache), lazy_tokenizer=True)
    print(json.dumps([cache, loaded.info.weights_sha256, loaded.tokenizer_key[:12]]))
"""


def listing(folder: Path) -> list[tuple[str, int]]:
    """Every file and folder under `folder`, with its mtime: what a read-only load must leave as it was."""
    return sorted((str(p.relative_to(folder)), p.stat().st_mtime_ns) for p in folder.rglob("*"))
