"""One model's place in a run, and the clock of the process: a ModelSlot loads its backend on first use, remembers a
load failure so that it is said once, and releases the model so that the next one loads into the memory it held; a
Clock counts the wall time of every phase and what the forward passes cost, for the JSON report's run section."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..backends.protocol import Backend, ModelLoadError
from ..errors import ModelUnavailable
from ..results.schema import Cost

PHASES = ("collection", "model_load", "tokenizer_load", "cuts", "forward", "layers", "patching", "report")


@dataclass
class Clock(Cost):
    """This process's Cost as it is counted: every phase from zero."""

    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))
    tokenizer_loaded: bool = False  # by a model already released

    @contextmanager
    def phase(self, name: str, exclude: Callable[[], float] = lambda: 0.0) -> Iterator[None]:
        """Add the time spent inside to ``name``, less what ``exclude`` grew by meanwhile (a lazy tokenizer load
        inside a forward phase is its own phase)."""
        started, excluded = time.perf_counter(), exclude()
        try:
            yield
        finally:
            self.seconds[name] += (time.perf_counter() - started) - (exclude() - excluded)


class ModelSlot:
    """One model, loaded on first use and released on request."""

    def __init__(self, load: Callable[[], Backend], clock: Clock) -> None:
        self._load = load
        self._loaded: Backend | None = None
        self._error: str | None = None
        self.clock = clock

    def get(self) -> Backend:
        if self._loaded is None and self._error is None:
            with self.clock.phase("model_load", exclude=self.tokenizer_seconds):
                try:
                    self._loaded = self._load()
                except ModelLoadError as error:
                    self._error = str(error)
        if self._error is not None:
            raise ModelUnavailable(self._error)
        assert self._loaded is not None
        return self._loaded

    def fail(self, message: str) -> ModelUnavailable:
        """A load failure found later (a lazy tokenizer that would not load): remembered like the first."""
        self._error = message
        return ModelUnavailable(message)

    def tokenizer_seconds(self) -> float:
        return self._loaded.tokenizer_seconds if self._loaded is not None else 0.0

    @property
    def loaded(self) -> Backend | None:
        return self._loaded

    def release(self) -> None:
        """Let the model go, so that the next one loads into the memory it held."""
        import gc

        loaded, self._loaded = self._loaded, None
        if loaded is not None:  # its tokenizer's cost stays counted
            self.clock.seconds["tokenizer_load"] += loaded.tokenizer_seconds
            self.clock.tokenizer_loaded |= loaded.tokenizer_loaded
        if loaded is not None:  # an engine (backends/vllm.py) shuts down its workers
            loaded.close()
        del loaded
        gc.collect()
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available():
            torch.cuda.empty_cache()
