"""A third backend in one file, as backends/protocol.py says one is written: it gives whole logits rows by context
(backends/protocol.ContextLogits), as a llama.cpp or other HTTP server would, here computed by a separate full pass
of a transformers model per context (no server to reach in a test). It declares what such a server cannot do.

Installed as the module `pytest_gotchas.backends.rows` (`install()`), `--gotchas-model rows:FOLDER` reads FOLDER
through it: nothing else of the package changes.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from types import ModuleType
from typing import Any, Literal

from pytest_gotchas.backends.protocol import (Capabilities, Context, ContextLogits, Feature, LoadRequest, Role,
                                              Unsupported)
from pytest_gotchas.model.load import load_model

NAME = "rows"
CAPABILITIES = Capabilities(cannot=(
    Unsupported(Feature.LAYERS, "a server returns the last layer's logits only"),
    Unsupported(Feature.PRECISION_CHECK, "a server runs one dtype"),
    Unsupported(Feature.PATCH, "a server does not expose its forward pass"),
    Unsupported(Feature.PATCH_COMPONENTS, "a server does not expose its forward pass"),
    Unsupported(Feature.PATCH_SCREEN, "a server does not expose its forward pass"),
    Unsupported(Feature.ONE_PASS_CHECK, "every context is a prompt of its own already"),
    Unsupported(Feature.KERNELS, "the server runs kernels of its own"),
    Unsupported(Feature.WORKERS, "one server serves the run; run without -n"),
))


class RowsBackend:
    role: Literal[Role.ENGINE] = Role.ENGINE

    def __init__(self, loaded: Any) -> None:
        self._loaded = loaded  # a model/load.LoadedModel: the "server"
        self.info = loaded.info
        self.notes: list[str] = []
        self.tokenizer_key = loaded.tokenizer_key
        self.tokenizer_seconds = 0.0
        self.logits: dict[Context, Any] = {}
        self.fetched: list[list[Context]] = []  # each call's contexts
        self.closed = False

    @property
    def tokenizer(self) -> Any:
        return self._loaded.tokenizer

    @property
    def tokenizer_loaded(self) -> bool:
        return bool(self._loaded.tokenizer_loaded)

    @property
    def dtype(self) -> str:
        return str(self._loaded.model.dtype).removeprefix("torch.")

    @property
    def model_type(self) -> str:
        return str(self._loaded.model.config.model_type)

    @property
    def batch_invariant(self) -> bool:
        return True

    def context_logits(self) -> ContextLogits:
        return self

    def fetch(self, contexts: Iterable[Context]) -> list[Context]:
        import torch

        todo = sorted({tuple(c) for c in contexts} - self.logits.keys())
        for context in todo:
            with torch.inference_mode():
                out = self._loaded.model(input_ids=torch.tensor([context]), logits_to_keep=1, use_cache=False)
            self.logits[context] = out.logits[0, -1].float()  # as a server sends them: float32
        self.fetched.append(todo)
        return todo

    def close(self) -> None:
        self.closed = True


def load(request: LoadRequest) -> RowsBackend:
    return RowsBackend(load_model(request.spec, request.model_cache, log=request.log,
                                  lazy_tokenizer=request.lazy_tokenizer))


def install() -> ModuleType:
    """This file as the backend module `pytest_gotchas.backends.rows` (where a real one would simply lie)."""
    module = sys.modules[__name__]
    sys.modules[f"pytest_gotchas.backends.{NAME}"] = module
    return module
