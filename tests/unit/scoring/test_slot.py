"""ModelSlot: a model loads once, its failure is remembered, and a released model is freed even where a reference
cycle holds it and the load froze it (model/load.py's _frozen)."""

from __future__ import annotations

import gc
import weakref

from pytest_gotchas.scoring.scorer import Clock, ModelSlot


class Cyclic:
    """A stand-in backend that holds itself, as a model with a reference cycle would."""

    tokenizer_seconds = 0.0
    tokenizer_loaded = False

    def __init__(self) -> None:
        self.me = self

    def close(self) -> None:
        pass


def test_a_released_model_in_a_frozen_cycle_is_freed() -> None:
    slot = ModelSlot(Cyclic, Clock())
    held = weakref.ref(slot.get())
    gc.freeze()  # as the load leaves it
    try:
        slot.release()
        assert held() is None
        assert slot.loaded is None
    finally:
        gc.unfreeze()
