"""What lives as long as the run, put out of the cyclic collector's sight (gc.freeze), shared by every floor.

torch's and transformers' modules and classes, a loaded model, the text reading's vocabulary table (262,144 small
lists on gemma-3-270m) and what collection made all live to the run's end. Left in the collector's generations,
every full collection walks them again: the automatic ones while a run allocates, a released model's, pytest's two
at its end and the interpreter's at exit. With gemma-3-270m loaded a full collection walks 385,000 objects; a warm
`-k sets` run spent 2.1 of its 8 CPU seconds in them (bench/RESULTS.md, #52). A frozen object is still freed by
reference counting; only a reference cycle among frozen objects waits for gc.unfreeze (plugin/frozen.py gives them
back where a process runs pytest again; scoring/slot.py collects a released model a cycle holds).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


_LOCK = threading.Lock()
_OPEN = 0  # frozen() blocks under way, in any thread (a tokenizer loads in a thread beside the weights)
_ENABLED = True  # whether automatic collection was on when the first of them began


@contextmanager
def frozen() -> Iterator[None]:
    """Make what lives on inside without automatic cyclic collections (each would walk the growing heap), then
    collect once and freeze everything alive. The collection before the freeze is needed: importing torch leaves
    cyclic garbage (about 11,500 objects: exceptions whose tracebacks hold the frames above them), which, frozen,
    would hold those frames' locals (a loaded model) for good. Automatic collection is on again once the last of
    the blocks under way in any thread ends."""
    global _OPEN, _ENABLED
    with _LOCK:
        if not _OPEN:
            _ENABLED = gc.isenabled()
            gc.disable()
        _OPEN += 1
    try:
        yield
    finally:
        settle()
        with _LOCK:
            _OPEN -= 1
            if not _OPEN and _ENABLED:
                gc.enable()


def settle() -> None:
    """Collect once, then freeze everything alive."""
    gc.collect()
    gc.freeze()
