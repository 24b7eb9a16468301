"""Sessions built by hand for execute.py, and the processes a snippet may leave behind: what the tests of
execute.py and sandbox.py share."""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path

from pytest_gotchas.truth import sandbox
from pytest_gotchas.truth.execute import Limits, Request, run_once
from pytest_gotchas.truth.interpreters import Interpreter


def repl(py: Interpreter, *lines: str, env: tuple[tuple[str, str], ...] = (("PYTHONHASHSEED", "0"),)) -> Request:
    return Request(interpreter=py, repl_input=lines, args=None, shell_text=None, env=env)


def shell(py: Interpreter, text: str, *args: str, env: tuple[tuple[str, str], ...] = ()) -> Request:
    return Request(interpreter=py, repl_input=None, args=args, shell_text=text, env=env)


@functools.cache
def strong() -> sandbox.Isolation:
    """The isolation a run chooses by default (strong, hiding what it hides without a project), probed once per test
    process: a test that does not ask for another kind runs its snippets under it."""
    return sandbox.choose(sandbox.IsolationLevel.STRONG)


def text_of(request: Request, seed: str = "0", limits: Limits = Limits(),
            isolation: sandbox.Isolation | None = None) -> str:
    run = run_once(request, seed, limits, isolation or strong())
    assert (run.returncode, run.timed_out) == (0, False), run
    return run.text


def running(marker: str) -> list[int]:
    """Host PIDs of live processes whose command line contains `marker` (a PID the snippet prints is its own
    namespace's, so processes are found by what they run); a zombie, killed but not yet reaped, is not live."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if marker in entry.joinpath("cmdline").read_bytes().decode(errors="replace") and \
                    entry.joinpath("stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                found.append(int(entry.name))
        except (OSError, ValueError):
            continue
    return found


def assert_none_running(marker: str, within: float = 2.0) -> None:
    deadline = time.monotonic() + within
    while running(marker) and time.monotonic() < deadline:
        time.sleep(0.02)
    left = running(marker)
    for pid in left:  # do not leave them behind when the test fails
        os.kill(pid, 9)
    assert not left, f"processes of the snippet survived it: {left}"
