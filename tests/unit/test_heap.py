"""heap.frozen: no automatic collection inside, everything alive frozen after, and automatic collection on again only
once the last block under way, in any thread, has ended."""

from __future__ import annotations

import gc
import threading
import weakref

from pytest_gotchas import heap


class Cycle:
    def __init__(self) -> None:
        self.me = self


def test_a_block_freezes_what_lives_and_collects_what_does_not() -> None:
    try:
        with heap.frozen():
            assert not gc.isenabled()
            kept, lost = Cycle(), Cycle()
            gone = weakref.ref(lost)
            del lost
        assert gc.isenabled()
        assert not any(o is kept for o in gc.get_objects())  # frozen: in no generation the collector walks
        assert gone() is None  # collected before the freeze
    finally:
        gc.unfreeze()


def test_collection_stays_off_until_the_last_block_of_any_thread_ends() -> None:
    inside, leave = threading.Event(), threading.Event()

    def other() -> None:
        with heap.frozen():
            inside.set()
            leave.wait(10)

    thread = threading.Thread(target=other)
    try:
        with heap.frozen():
            thread.start()
            assert inside.wait(10)
        assert not gc.isenabled()  # the other thread's block is still under way
        leave.set()
        thread.join(10)
        assert gc.isenabled()
    finally:
        leave.set()
        gc.unfreeze()
        gc.enable()
