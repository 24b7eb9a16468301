"""A model's slot and the process's clock (scorer.py publishes both): the slot loads its model on first use, or takes
the one loaded ahead (ahead.py), remembers a failure so that it is said once, and lets the model go; the clock keeps
the wall time of every phase and what the passes cost, for the JSON report's run section."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..backends.protocol import Backend, ModelLoadError
from ..errors import ModelUnavailable
from ..results.schema import Cost

# `ahead`: the seconds of the other phases that ran beside collection, in a load ahead (ahead.py); a phase's seconds
# less them are what the run waited for.
PHASES = ("collection", "model_load", "tokenizer_load", "cuts", "forward", "layers", "patching", "report", "ahead")


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

    def __init__(self, load: Callable[[], Backend], clock: Clock, ahead: Callable[[], Backend] | None = None) -> None:
        self._load = load
        self._loaded: Backend | None = None
        self._error: str | None = None
        self.clock = clock
        self._quiet = ahead  # the same load, saying nothing, for a load ahead (None: never loaded ahead)
        self._ahead: Any = None  # a load ahead under way (ahead.py)
        self._raise: BaseException | None = None  # what the load ahead raised, for get to raise once

    def load_ahead(self, ready: Callable[[Backend], None], then: Callable[[Backend], None] | None = None) -> bool:
        """Start loading in a thread of its own (ahead.py), `ready` run on the model once loaded (timed as a forward
        phase), then `then` (which times its own); False where nothing is loaded ahead (a slot that cannot, or a
        model loaded, failed or under way already)."""
        if self._quiet is None or self._loaded is not None or self._error is not None or self._ahead is not None:
            return False
        from .ahead import Ahead

        self._ahead = Ahead(self._quiet, ready, self.clock, then)
        return True

    def settle(self) -> None:
        """Wait for a load ahead, and take its model or its error as a load here would have ended."""
        ahead, self._ahead = self._ahead, None
        if ahead is None:
            return
        ahead.take(self.clock)
        if isinstance(ahead.error, ModelLoadError):
            self._error = str(ahead.error)
        elif ahead.error is not None:
            self._raise = ahead.error
        else:
            self._loaded = ahead.value

    def get(self) -> Backend:
        self.settle()
        if self._raise is not None:  # not a load error: raised once, and the next use loads again, as without it
            error, self._raise = self._raise, None
            raise error
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
        import weakref

        self.settle()
        loaded, self._loaded = self._loaded, None
        if loaded is not None:  # its tokenizer's cost stays counted
            self.clock.seconds["tokenizer_load"] += loaded.tokenizer_seconds
            self.clock.tokenizer_loaded |= loaded.tokenizer_loaded
        if loaded is not None:  # an engine (backends/vllm.py) shuts down its workers
            loaded.close()
        held = weakref.ref(loaded) if loaded is not None else None
        del loaded
        gc.collect()
        if held is not None and held() is not None:  # a reference cycle the load froze (heap.py)
            gc.unfreeze()
            gc.collect()
            gc.freeze()
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available():
            torch.cuda.empty_cache()
