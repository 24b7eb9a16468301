"""A model loaded ahead (#52): its load, and what scoring needs before the first pass (the text reading's vocabulary
table), in a thread of its own while collection executes the snippets, so that a first run costs about the larger
of the two instead of their sum. The plugin starts it (plugin/ahead.py) and waits for it before its first test.

What makes it safe beside the main thread, which only executes snippets (subprocesses) meanwhile:
- One load at a time: only one model of a run is loaded ahead, and the main thread waits for it (ModelSlot.settle)
  before any test runs and before it loads any model itself. transformers' from_pretrained sets torch's default
  dtype, which is process-wide, for the duration of a load: two loads side by side once made a forward pass mix
  bfloat16 and float32 ("expected m1 and m2 to have the same dtype").
- torch's thread count is the calling thread's (OpenMP's setting is per thread): the count the load left in its
  thread (model/facts.py sets it) is set again in the thread that waits for it, as a load there would have left it.
- Its result is what a load in the main thread gives: its model, or its error raised where the model is first
  needed (ModelSlot.get), with the same message; the vocabulary table's errors are met again where a case needs it.
- It says nothing: no progress line, no terminal (pytest's capture is not for threads).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..backends.protocol import Backend


class Clock(Protocol):
    """What a load ahead counts its seconds in: slot.Clock (which imports this module)."""

    seconds: dict[str, float]

    def phase(self, name: str, exclude: Callable[[], float] = ...) -> AbstractContextManager[None]: ...


class Ahead:
    """One load running in a thread of its own; `take` waits for it."""

    def __init__(self, load: Callable[[], Backend], ready: Callable[[Backend], None], clock: Clock,
                 then: Callable[[Backend], None] | None = None) -> None:
        self.value: Backend | None = None
        self.error: BaseException | None = None
        self.threads: int | None = None  # torch's thread count where the load ended
        self._started = time.perf_counter()
        self._ended = self._started
        self._thread = threading.Thread(target=self._run, args=(load, ready, clock, then), name="gotchas-load-ahead",
                                        daemon=True)
        self._thread.start()

    def _tokenizer_seconds(self) -> float:
        return self.value.tokenizer_seconds if self.value is not None else 0.0

    def _run(self, load: Callable[[], Backend], ready: Callable[[Backend], None], clock: Clock,
             then: Callable[[Backend], None] | None) -> None:
        try:
            with clock.phase("model_load", exclude=self._tokenizer_seconds):  # as ModelSlot.get counts a load
                self.value = load()
        except BaseException as error:  # raised where the model is first needed, as a load there would raise it
            self.error = error
        else:
            try:
                with clock.phase("forward", exclude=self._tokenizer_seconds):  # where the first pass builds it
                    ready(self.value)
                if then is not None:  # times its own phases
                    then(self.value)
            except Exception:  # noqa: S110  (met again, and said, where a case first needs it)
                pass
        finally:
            torch = sys.modules.get("torch")
            self.threads = torch.get_num_threads() if torch is not None else None
            self._ended = time.perf_counter()

    def take(self, clock: Clock) -> None:
        """Wait for the load. Its phases are counted already; what ran before this wait ran beside collection, and
        is counted as `ahead` too (so that a phase's seconds less `ahead` are what the run waited for)."""
        waiting = time.perf_counter()
        self._thread.join()
        clock.seconds["ahead"] += max(0.0, min(waiting, self._ended) - self._started)
        torch = sys.modules.get("torch")
        if torch is not None and self.threads is not None and torch.get_num_threads() != self.threads:
            torch.set_num_threads(self.threads)
