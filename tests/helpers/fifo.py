"""Named pipes as hostile input: reading one that no process writes blocks for ever, so a test of it runs the code
under a deadline (`within`) and, should it block, writes to the pipe to set the reader free before failing."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
DEADLINE = 10.0  # seconds: refusing a FIFO takes a few milliseconds; blocking on one takes for ever


def fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def within(call: Callable[[], T], pipe: Path, seconds: float = DEADLINE) -> T:
    """What `call` returns (or raises), failing the test if it is still running after `seconds`: then it is
    blocked on `pipe`, which is opened for writing and closed so that the blocked read ends (at EOF)."""
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as error:  # handed to the test's thread, as the call's own outcome
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        try:
            os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
        thread.join(seconds)
        raise AssertionError(f"blocked for more than {seconds} s on the named pipe {pipe}")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]
