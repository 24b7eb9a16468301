"""The transformers backend: a model loaded in this process by model/load.py, whose forward passes scoring runs
itself (one pass per prompt, KV-cached steps, the guard's hooks, the logit lens, patching, the float32 twin)."""

from __future__ import annotations

from typing import Any, Literal

from ..model.load import LoadedModel, load_model
from ..results.schema import ModelInfo
from .protocol import Capabilities, LoadRequest, ModuleBackend, Role

CAPABILITIES = Capabilities()  # every option the plugin declares reads a transformers model


class TransformersBackend:
    """A LoadedModel (its model, tokenizer and load notes) as scoring reads it: a torch module scoring runs."""

    role: Literal[Role.MODULE] = Role.MODULE

    def __init__(self, loaded: LoadedModel) -> None:
        self.loaded = loaded

    @property
    def info(self) -> ModelInfo | None:
        return self.loaded.info

    @property
    def notes(self) -> list[str]:
        return self.loaded.notes

    @property
    def tokenizer_key(self) -> str | None:
        return self.loaded.tokenizer_key

    @property
    def tokenizer_seconds(self) -> float:
        return self.loaded.tokenizer_seconds

    @property
    def tokenizer(self) -> Any:
        return self.loaded.tokenizer

    @property
    def tokenizer_loaded(self) -> bool:
        return self.loaded.tokenizer_loaded

    @property
    def model(self) -> Any:
        return self.loaded.model

    @property
    def dtype(self) -> str:
        return str(self.loaded.model.dtype).removeprefix("torch.")

    @property
    def model_type(self) -> str:
        return str(getattr(getattr(self.loaded.model, "config", None), "model_type", ""))

    @property
    def batch_invariant(self) -> bool:
        return self.loaded.invariance.batch

    @property
    def shared_head(self) -> bool:
        return self.loaded.shared_head

    def float32(self) -> Any:
        return self.loaded.float32()

    def close(self) -> None:
        """Nothing to shut down: the slot drops its reference and collects."""


def load(request: LoadRequest) -> ModuleBackend:  # mypy checks here that the class satisfies it
    """model/load.load_model (a GGUF conversion shows its steps where the caller set model/convert.STEPS)."""
    return TransformersBackend(load_model(request.spec, request.model_cache, log=request.log,
                                          lazy_tokenizer=request.lazy_tokenizer, prefetch=request.prefetch))
