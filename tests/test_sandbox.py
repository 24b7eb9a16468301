"""sandbox.py: a hostile snippet cannot kill pytest, stall it past the timeout, leave a process behind, write
outside its working directory, read a home directory or reach the network; the isolation is probed once, falls
back where bubblewrap is missing, and is part of the cache key.

A test that could kill the process running it (a snippet that signals its parent) runs in a child process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest
from helpers import REPO

from pytest_gotchas.truth import sandbox
from pytest_gotchas.truth.interpreters import Interpreter

ISOLATION = sandbox.isolation()
needs_bubblewrap = pytest.mark.skipif(ISOLATION.kind != sandbox.BUBBLEWRAP,
                                      reason=f"bubblewrap does not work here: {ISOLATION.description}")
needs_namespace = pytest.mark.skipif(ISOLATION.kind == sandbox.PROCESS_GROUP, reason=ISOLATION.description)


def fallbacks() -> dict[str, sandbox.Isolation]:
    """Every isolation that works on this machine, bubblewrap pretended missing for the weaker ones."""
    found = {ISOLATION.kind: ISOLATION}
    for chosen in (sandbox.probe(bwrap=""), sandbox.probe(bwrap="", unshare="")):
        found.setdefault(chosen.kind, chosen)
    return found


FALLBACKS = fallbacks()


@pytest.fixture(params=sorted(FALLBACKS))
def each_isolation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> sandbox.Isolation:
    monkeypatch.setattr(sandbox, "_chosen", FALLBACKS[request.param])
    return FALLBACKS[request.param]


def marker() -> str:
    """A unique number for `sleep`: its processes are found in the host's /proc by their command line."""
    return f"30.{os.getpid()}{time.monotonic_ns() % 10 ** 6}"


def in_a_child(py: Interpreter, args: tuple[str, ...], limits: str = "Limits(timeout=5)",
               isolation: str = "") -> subprocess.CompletedProcess:
    """run_once in a child process, which prints the run: if the snippet killed its parent, only the child dies."""
    code = textwrap.dedent(f"""
        from pytest_gotchas.truth import sandbox
        from pytest_gotchas.truth.execute import Limits, Request, run_once
        from pytest_gotchas.truth.interpreters import Interpreter
        {isolation}
        py = Interpreter(version={py.version!r}, path={py.path!r}, implementation="CPython")
        run = run_once(Request(py, None, {args!r}, "python -c ...", ()), "1", {limits})
        print(repr(run))
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.parametrize("kind, args", [
    (ISOLATION.kind, ()),
    (ISOLATION.kind, ("-n", "2")),  # under xdist the workers collect, and died
    (sandbox.PROCESS_GROUP, ()),  # no namespace: the snippet kills its supervisor, the case says so
])
def test_collection_survives_a_snippet_that_kills_its_parent(pytester: pytest.Pytester, kind: str,
                                                             args: tuple[str, ...]) -> None:
    if args:
        pytest.importorskip("xdist")
    if kind == sandbox.PROCESS_GROUP:
        pytester.makeconftest("from pytest_gotchas import sandbox\n"
                              "sandbox._chosen = sandbox.probe(bwrap='', unshare='')\n")
    pytester.makefile(".yaml", killer=textwrap.dedent("""\
        chapter: killer
        title: hostile snippets
        interpreter: "3.12"
        cases:
          - id: kill-parent
            transcript: |-
              >>> import os; os.kill(os.getppid(), 9)
              >>> 1 + 1
              █
            correct: "2"
            wrong: "3"
          - id: after
            transcript: |-
              >>> 2 + 2
              █
            correct: "4"
            wrong: "5"
        """))
    result = pytester.runpytest_subprocess("--gotchas", "--collect-only", "-q", "-p", "no:cacheprovider", *args)
    assert result.ret == 0, result.outlines + result.errlines
    if not args:
        result.stdout.fnmatch_lines(["killer.yaml::kill-parent", "killer.yaml::after", "*2 tests collected*"])
    if kind == sandbox.PROCESS_GROUP:  # collected as a crash, whose message says what the snippet did
        result = pytester.runpytest_subprocess("--gotchas", "-p", "no:cacheprovider", "-rs", "--gotchas-model",
                                               "/nonexistent")
        assert "the snippet killed its sandbox: the process that supervises it ended (killed by SIGKILL)" in \
            result.stdout.str()
