"""The backends that read a model, one module each behind backends/protocol.py's `Backend`, found by name.

`--gotchas-model vllm:NAME` reads NAME (any name the option takes: an embedded model, a hub id, a folder, a .gguf
file) through backends/vllm.py; a name without a prefix is read through backends/transformers.py. A module of this
folder is imported only when a model of the run names it, so a transformers run never imports vLLM.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable, Sequence
from types import ModuleType

from ..model.ref import ModelRef
from .protocol import Asked, ModelLoadError, refusals

NOT_BACKENDS = ("protocol",)


def names() -> list[str]:
    """Every backend of this folder, by name."""
    from pathlib import Path

    return sorted(p.stem for p in Path(__file__).parent.glob("*.py")
                  if not p.stem.startswith("_") and p.stem not in NOT_BACKENDS)


def module(backend: str) -> ModuleType:
    """The module of the backend `backend`; ModelLoadError naming the backends there are when there is none."""
    if backend in NOT_BACKENDS or importlib.util.find_spec(f"{__name__}.{backend}") is None:
        raise ModelLoadError(f"there is no backend named {backend!r} (a model name's prefix before ':' names one): "
                             f"the backends are {', '.join(names())}")
    return importlib.import_module(f"{__name__}.{backend}")


def run_refusals(models: Sequence[ModelRef], asked: Iterable[Asked], flag: str = "--gotchas-") -> list[str]:
    """What the backends of the run's models cannot do of what it asks, one message each; a model prefix that names
    no backend is a message too."""
    wanted = list(asked)
    by_backend: dict[str, list[str]] = {}
    for model in models:
        by_backend.setdefault(model.backend, []).append(model.written)
    out = []
    for backend, named in by_backend.items():
        try:
            capabilities = module(backend).CAPABILITIES
        except ModelLoadError as error:
            out.append(str(error))
            continue
        out.extend(refusals(backend, capabilities, named, wanted, flag))
    return out
