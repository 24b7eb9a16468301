"""What scoring needs from a reading backend, and what a backend declares it cannot do. Pure: no torch, no pytest.

A backend reads a model's next-token distributions for the contexts scoring asks for (token ids, decided by
scoring/cut.py with the model's own transformers tokenizer, so that every backend reads the same contexts). It gives
scoring one of two things, its `role`:

- a torch module (`ModuleBackend`, role "module", `model`): scoring runs the forward passes itself (one pass per
  prompt, KV-cached steps; the guard of scoring/guard.py hooks it; the logit lens, patching and a float32 twin,
  `float32()`, read it). backends/transformers.py;
- whole logits rows per context (`EngineBackend`, role "engine", `context_logits()`): an engine or a server computes
  each context as a prompt of its own, and scoring/engine_rows.py puts each row through scoring's own softmax; every
  context a run needs is asked for in as few calls as the readings allow (the prefetch). backends/vllm.py.

`Backend` is either; scoring tells them apart by `role`, so the type checker knows which one it holds.

**Adding a backend is one new file** in this folder, `backends/NAME.py`, which `--gotchas-model NAME:MODEL` chooses
(backends/__init__.py finds it by that name; the model's short name becomes `NAME-MODEL`, so it has its own items,
results and baseline). The file defines:

- `CAPABILITIES`: a `Capabilities` naming each `Feature` it cannot honour and why (the run refuses those options
  with one message naming the flag and the backend, before anything loads), and the `--gotchas-device` values it
  takes;
- `load(request: LoadRequest) -> Backend`: the model loaded (raising `ModelLoadError`, published here, with one
  message for the user), with `info` (results.schema.ModelInfo, its `backend` a BackendInfo naming the engine) and the
  transformers tokenizer of the same model (model/tokenizer.py: load_tokenizer and check_tokenizer);
- the class `load` returns, which satisfies `ModuleBackend` or `EngineBackend` below. A llama.cpp or other HTTP
  server is an engine: its `context_logits()` returns a `ContextLogits` whose `fetch` posts the contexts' token ids
  and keeps each whole logits row (a float32 tensor of the vocabulary's width) in `logits`; `close()` ends the
  session. Declaring every `Feature` but the ones it can do (a server reads no residual stream, has no float32
  twin) keeps the refusals honest.

tests/unit/backends/test_protocol.py checks both shipped backends against this contract, and runs the scorer with a
backend defined in the test file alone.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from ..model.ref import TRANSFORMERS as TRANSFORMERS  # a name without a NAME: prefix
from ..model.spec import ModelLoadError as ModelLoadError  # the error every backend's load raises
from ..model.spec import ModelSpec as ModelSpec  # what a load is asked for
from ..results.schema import ModelInfo

Context = tuple[int, ...]
__all__ = ["TRANSFORMERS", "Asked", "Backend", "Capabilities", "Context", "ContextLogits", "EngineBackend", "EngineOptions",
           "Feature", "LoadRequest", "Loaded", "ModelLoadError", "ModelSpec", "ModuleBackend", "Role", "Unsupported",
           "refusals"]


class Feature(enum.Enum):
    """What a run may ask of a backend beyond reading next-token distributions."""

    LAYERS = "layers"  # the logit lens: the residual stream after every layer
    PRECISION_CHECK = "precision-check"  # a float32 twin of the weights beside the model
    PATCH = "patch"  # replacing a layer's residual stream inside the forward pass
    PATCH_COMPONENTS = "patch-components"  # replacing attention and MLP outputs inside the forward pass
    PATCH_SCREEN = "patch-screen"  # gradients of the metric at attention and MLP outputs, then replacing the top-k
    PATCH_EDGES = "patch-edges"  # gradients at every head's and MLP's inputs, and each input's stream rewritten
    ONE_PASS_CHECK = "one-pass-check"  # separate full passes beside the one-pass path
    KERNELS = "kernels"  # a kernel path replacing transformers' linear layers (model/kernels.py)
    DEVICE = "device"  # a --gotchas-device outside Capabilities.devices
    WORKERS = "workers"  # pytest-xdist workers (-n), each loading the model


@dataclass(frozen=True)
class Unsupported:
    feature: Feature
    why: str  # after "cannot be used with the NAME backend (MODELS): "; "{flag}" is how options are spelled


@dataclass(frozen=True)
class Capabilities:
    """What a backend declares: the features it cannot honour, and the devices it places a model on itself."""

    cannot: tuple[Unsupported, ...] = ()
    devices: tuple[str, ...] | None = None  # the --gotchas-device values it takes (None or any of these); None: all

    def refuses(self, asked: Asked) -> Unsupported | None:
        if asked.feature is Feature.DEVICE and (self.devices is None or asked.value in self.devices):
            return None
        return next((item for item in self.cannot if item.feature is asked.feature), None)


@dataclass(frozen=True)
class Asked:
    """One feature a run asks for, as the user spelled it ("--gotchas-layers", "--gotchas-kernels float32-matmul",
    "-n 2"); `value` is the device asked for (Feature.DEVICE)."""

    feature: Feature
    shown: str
    value: str | None = None


def refusals(backend: str, capabilities: Capabilities, models: Sequence[str | None], asked: Iterable[Asked],
             flag: str = "--gotchas-") -> list[str]:
    """One message per feature asked for that the backend of `models` cannot honour, in the order asked."""
    if not models:
        return []
    shown = ", ".join(str(model) for model in models)
    refused = [(item, capabilities.refuses(item)) for item in asked]
    return [f"{item.shown} cannot be used with the {backend} backend ({shown}): {why.why.format(flag=flag)}"
            for item, why in refused if why is not None]


@dataclass(frozen=True)
class EngineOptions:
    """How a backend that runs an engine of its own starts it (the --gotchas-vllm-* options)."""

    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    executor: str | None = None  # None: the engine's choice
    memory: float | None = None  # the fraction of accelerator memory it may take; None: the engine's default
    batch_invariant: str = "auto"  # auto | on | off


@dataclass(frozen=True)
class LoadRequest:
    """Everything a backend's `load` is given."""

    spec: ModelSpec  # the model's own name (its NAME: prefix removed), dtype, device, the flag spelling
    model_cache: Path  # converted models, hashes, facts (settings.model_cache; not pytest's cache)
    log: Callable[[str], None] | None = None  # a line before slow one-time work
    lazy_tokenizer: bool = False  # load the tokenizer on first use (a warm run may never need it)
    prefetch: Callable[[str], bool] | None = None  # given the tokenizer's key: whether to load it beside the weights
    engine: EngineOptions = EngineOptions()


class ContextLogits(Protocol):
    """Whole logits rows by context, from a backend that computes each context as a prompt of its own."""

    @property
    def logits(self) -> Mapping[Context, Any]:
        """Every context fetched so far: its next token's logits over the whole vocabulary (a 1-d tensor)."""

    def fetch(self, contexts: Iterable[Context]) -> list[Context]:
        """Compute the contexts not fetched yet, in one call; returns those. Raises ModelLoadError."""


class Role(enum.StrEnum):
    """Which of the two things a backend gives scoring; scoring narrows a `Backend` on it."""

    MODULE = "module"  # a torch module that scoring runs itself (ModuleBackend)
    ENGINE = "engine"  # whole logits rows by context, computed elsewhere (EngineBackend)


class Loaded(Protocol):
    """What every backend gives scoring, whichever its role (scoring/scorer.py calls nothing else)."""

    # Read-only to scoring: a plain attribute or a property satisfies each.
    @property
    def info(self) -> ModelInfo | None:
        """What the report says of the model (set once it loaded)."""

    @property
    def notes(self) -> list[str]:
        """Said once per run: how the load went against the defaults."""

    @property
    def tokenizer_key(self) -> str | None:
        """A fingerprint of the tokenizer's files, for the caches of cuts and token texts (a lazy tokenizer)."""

    @property
    def tokenizer_seconds(self) -> float:
        """What loading the tokenizer took (lazily, or at load)."""

    @property
    def tokenizer(self) -> Any:
        """The transformers fast tokenizer of the same model (scoring/cut.py), loaded on first use."""

    @property
    def tokenizer_loaded(self) -> bool: ...

    @property
    def dtype(self) -> str:
        """The dtype the logits are computed in: "bfloat16", "float16" or "float32"."""

    @property
    def model_type(self) -> str:
        """The config's model_type ("gemma3_text"), for the conventions scoring checks (Gemma's BOS)."""

    @property
    def batch_invariant(self) -> bool:
        """Whether a batch of prompts computes each prompt's bits as it alone would (model/invariance.py)."""

    def close(self) -> None:
        """Give back what the model holds (an engine's workers, threads it took); the object is not used again."""


class ModuleBackend(Loaded, Protocol):
    """A backend whose torch module scoring runs itself: one pass per prompt, KV-cached steps, the guard's hooks, the
    logit lens, patching and the float32 twin (backends/transformers.py)."""

    @property
    def role(self) -> Literal[Role.MODULE]: ...

    @property
    def model(self) -> Any:
        """The torch module scoring runs and the guard hooks."""

    def float32(self) -> Any:
        """A float32 twin of `model` for --gotchas-precision-check (the model itself when it runs in float32)."""

    @property
    def shared_head(self) -> bool:
        """Whether the text reading's trees can leave their head to one product with other cases' trees (measured
        at load: model/paths.apart), so that the head's weights are read once for many trees (scoring/heads.py)."""


class EngineBackend(Loaded, Protocol):
    """A backend that gives whole logits rows by context, each context computed as a prompt of its own by an engine
    or a server (backends/vllm.py). What it cannot do of a module's (a float32 twin, the residual stream) it
    declares in its module's CAPABILITIES, and the run refuses before anything loads."""

    @property
    def role(self) -> Literal[Role.ENGINE]: ...

    def context_logits(self) -> ContextLogits:
        """The rows by context."""


# A loaded model as scoring reads it: `backend.role is Role.MODULE` tells the type checker which of the two it is.
Backend = ModuleBackend | EngineBackend
