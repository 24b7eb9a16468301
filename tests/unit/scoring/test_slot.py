"""ModelSlot: a released model is freed even where a reference cycle holds it and the load froze it (heap.py); a
model loaded ahead (scoring/ahead.py) is the slot's model, or fails where the model is needed, as a load
there would; the thread count it leaves is the waiting thread's."""

from __future__ import annotations

import gc
import time
import weakref

import pytest

from pytest_gotchas.model.load import ModelLoadError
from pytest_gotchas.scoring.scorer import Clock, ModelSlot, ModelUnavailable


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


# -- a load ahead (scoring/ahead.py) ---------------------------------------------------------------------------------


class Loaded(Cyclic):
    """A stand-in loaded model, without a cycle."""

    def __init__(self) -> None:
        pass


def test_a_load_ahead_is_the_model_the_slot_gives_and_its_seconds_ran_ahead() -> None:
    loaded = Loaded()
    ready: list[object] = []

    def load() -> Loaded:
        time.sleep(0.05)
        return loaded

    clock = Clock()
    slot = ModelSlot(lambda: pytest.fail("the load ahead was not taken"), clock, ahead=load)
    assert slot.load_ahead(ready.append)
    assert not slot.load_ahead(ready.append)  # one at a time
    time.sleep(0.2)  # collection goes on meanwhile
    assert slot.get() is loaded and ready == [loaded]
    assert clock.seconds["model_load"] >= 0.05 and clock.seconds["ahead"] >= clock.seconds["model_load"]
    assert not slot.load_ahead(ready.append)  # loaded already


def test_a_slot_without_a_quiet_load_loads_nothing_ahead() -> None:
    slot = ModelSlot(Loaded, Clock())
    assert not slot.load_ahead(lambda loaded: None)
    assert isinstance(slot.get(), Loaded)


def test_a_load_ahead_that_fails_fails_where_the_model_is_needed_with_the_serial_message() -> None:
    def fails() -> Loaded:
        raise ModelLoadError("cannot load model 'm': no such folder")

    serial = ModelSlot(fails, Clock())
    with pytest.raises(ModelUnavailable) as alone:
        serial.get()
    ahead = ModelSlot(lambda: pytest.fail("loaded twice"), Clock(), ahead=fails)
    assert ahead.load_ahead(lambda loaded: None)
    ahead.settle()  # the loop's start: nothing is raised there
    for _ in range(2):  # remembered, as a failed load is
        with pytest.raises(ModelUnavailable) as error:
            ahead.get()
        assert str(error.value) == str(alone.value) == "cannot load model 'm': no such folder"


def test_what_else_a_load_ahead_raises_is_raised_once_and_the_next_use_loads_again() -> None:
    def broken() -> Loaded:
        raise RuntimeError("a bug")

    slot = ModelSlot(Loaded, Clock(), ahead=broken)
    assert slot.load_ahead(lambda loaded: None)
    with pytest.raises(RuntimeError, match="a bug"):
        slot.get()
    assert isinstance(slot.get(), Loaded)  # as a load that raised in the main thread is tried again


def test_what_ready_raises_is_left_for_the_first_case_to_meet() -> None:
    def ready(loaded: object) -> None:
        raise ValueError("the vocabulary table cannot be read")

    slot = ModelSlot(lambda: pytest.fail("loaded twice"), Clock(), ahead=Loaded)
    assert slot.load_ahead(ready)
    assert isinstance(slot.get(), Loaded)


def test_the_thread_count_the_load_left_is_the_waiting_threads() -> None:
    # OpenMP's thread count is per thread: a load that sets it (model/facts.py) in its own thread must leave it set
    # where the passes run, as a load there would.
    import torch

    before = torch.get_num_threads()
    wanted = 1 if before > 1 else 2

    def load() -> Loaded:
        torch.set_num_threads(wanted)
        return Loaded()

    slot = ModelSlot(lambda: pytest.fail("loaded twice"), Clock(), ahead=load)
    try:
        assert slot.load_ahead(lambda loaded: None)
        slot.settle()
        assert torch.get_num_threads() == wanted
    finally:
        torch.set_num_threads(before)
