"""sandbox.py: a hostile snippet cannot kill pytest, stall it past the timeout, leave a process behind, write
outside its working directory, read a home directory or reach the network; the isolation is probed once, is strong
(bubblewrap, else namespaces) unless weak is asked for, and is part of the cache key. Every guarantee here holds under
each isolation that works on this machine; tests/unit/truth/test_isolation.py tests the strong ones' confinement.

A test that could kill the process running it (a snippet that signals its parent) runs in a child process.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from helpers import REPO
from helpers.execution import assert_none_running, repl, running, shell, strong, text_of

from pytest_gotchas.truth import memory, sandbox
from pytest_gotchas.truth.execute import Cache, Limits, execute, run_once
from pytest_gotchas.truth.check import check
from pytest_gotchas.truth.interpreters import Interpreter

# What the memory limit covers here (truth/memory.py): per run where a cgroup can be made, else per process.
MEMORY = ("memory limited per run, all its processes together (a cgroup)" if memory.groups() is not None else
          "memory limited per process only (no cgroup can be made here: each process of a run may use the limit)")
ISOLATION = strong()
needs_namespace = pytest.mark.skipif(ISOLATION.kind == sandbox.IsolationKind.PROCESS_GROUP,
                                     reason=ISOLATION.description)

# How each kind is chosen, bubblewrap pretended missing for the namespaces and unshare for the process group.
PROBES = {sandbox.IsolationKind.BUBBLEWRAP: "sandbox.probe()",
          sandbox.IsolationKind.NAMESPACES: 'sandbox.probe(bwrap="")',
          sandbox.IsolationKind.PID_NAMESPACE: 'sandbox.probe("weak")',
          sandbox.IsolationKind.PROCESS_GROUP: 'sandbox.probe("weak", unshare="")'}


def fallbacks() -> dict[str, sandbox.Isolation]:
    """Every isolation that works on this machine, the strong ones hiding what they hide by default."""
    found = {ISOLATION.kind: ISOLATION}
    for probe in PROBES.values():
        try:
            chosen = eval(probe, {"sandbox": sandbox})
        except sandbox.Unavailable:
            continue
        if chosen.level == sandbox.IsolationLevel.STRONG:
            chosen = dataclasses.replace(chosen, hidden=sandbox.hidden_paths())
        found.setdefault(chosen.kind, chosen)
    return found


FALLBACKS = fallbacks()
STRONG = sorted(k for k in FALLBACKS if k in sandbox.STRONG_KINDS)


@pytest.fixture(params=STRONG or [pytest.param(None, marks=pytest.mark.skip(reason="no strong isolation works here"))])
def each_strong(request: pytest.FixtureRequest) -> sandbox.Isolation:
    return FALLBACKS[request.param]


@pytest.fixture(params=sorted(FALLBACKS))
def each_isolation(request: pytest.FixtureRequest) -> sandbox.Isolation:
    return FALLBACKS[request.param]


def marker() -> str:
    """A unique number for `sleep`: its processes are found in the host's /proc by their command line."""
    return f"30.{os.getpid()}{time.monotonic_ns() % 10 ** 6}"


def in_a_child(py: Interpreter, args: tuple[str, ...], limits: str = "Limits(timeout=5)",
               isolation: str = "sandbox.choose()") -> subprocess.CompletedProcess:
    """run_once in a child process, which prints the run: if the snippet killed its parent, only the child dies."""
    code = textwrap.dedent(f"""
        from pytest_gotchas.truth import sandbox
        from pytest_gotchas.truth.execute import Limits, Request, run_once
        from pytest_gotchas.truth.interpreters import Interpreter
        py = Interpreter(version={py.version!r}, path={py.path!r}, implementation="CPython")
        run = run_once(Request(py, None, {args!r}, "python -c ...", ()), "1", {limits}, {isolation})
        print(repr(run))
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)


# -- 1. a snippet cannot kill pytest ----------------------------------------------------------------------------


@needs_namespace
def test_a_snippet_that_kills_its_parent_does_not_kill_pytest(py312) -> None:
    # Its parent is the supervisor, PID 1 of the snippet's namespace: a signal from inside is ignored.
    done = in_a_child(py312, ("-c", "import os; print(os.getppid()); os.kill(os.getppid(), 9); print('after')"))
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert "text='$ python -c ...\\n1\\nafter\\n'" in done.stdout and "returncode=0" in done.stdout


def test_without_a_namespace_killing_the_supervisor_is_a_clear_error(py312) -> None:
    # With only a process group, the snippet can kill its supervisor, never pytest: a per-case error.
    done = in_a_child(py312, ("-c", "import os; os.kill(os.getppid(), 9); import time; time.sleep(1)"),
                      isolation='sandbox.probe("weak", unshare="")')
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert ("error='killed its sandbox: the process that supervises it ended (killed by SIGKILL) before the "
            "snippet did'") in done.stdout


def test_killing_its_sandbox_is_a_per_case_crash_with_a_message() -> None:
    from pytest_gotchas.truth.execute import Execution
    runs = (Execution(text="", seed="2", returncode=-9, timed_out=False,
                error="killed its sandbox: the process that supervises it ended (killed by SIGKILL) before the "
                      "snippet did"),)
    checked = check(">>> 1\n", "1", "2", runs)
    assert (checked.status, checked.message) == (
        "crash", "the snippet killed its sandbox: the process that supervises it ended (killed by SIGKILL) before "
                 "the snippet did (seed 2)")


# -- 2. the timeout holds in wall time, whatever the snippet does with its output -------------------------------


@pytest.mark.parametrize("main", ["while True: pass", "print('main done')"])
def test_a_detached_descendant_holding_the_output_cannot_stall_the_run(py312, main: str) -> None:
    sleeper = marker()
    snippet = f"import subprocess; subprocess.Popen(['sleep', '{sleeper}'], start_new_session=True)\n{main}"
    started = time.monotonic()
    run = run_once(shell(py312, "python -c ...", "-c", snippet), "1", Limits(timeout=1), strong())
    elapsed = time.monotonic() - started
    looping = main.startswith("while")
    assert elapsed < 1 + sandbox.GRACE + 1.5, elapsed
    assert run.timed_out is looping
    assert run.text == "$ python -c ...\n" + ("" if looping else "main done\n")
    if ISOLATION.kind != sandbox.IsolationKind.PROCESS_GROUP:
        assert_none_running(sleeper)


def test_input_the_snippet_never_reads_cannot_stall_the_run(py312) -> None:
    lines = ("import time; time.sleep(60)", *(["x = 1"] * 50000))  # far more than a pipe holds
    started = time.monotonic()
    run = run_once(repl(py312, *lines), "0", Limits(timeout=1), strong())
    assert run.timed_out and time.monotonic() - started < 1 + sandbox.GRACE + 1.5


def test_endless_output_is_cut_at_the_file_size_limit(py312) -> None:
    # Without a limit, pytest would hold everything the snippet printed until the timeout.
    started = time.monotonic()
    run = run_once(shell(py312, "python -c ...", "-c", "while True: print('x' * 65535)"), "1",
                   Limits(timeout=5, file_size=1 << 20), strong())
    assert time.monotonic() - started < 4
    assert run.error == f"printed more than {1 << 20} bytes, the limit of its output (the file size limit): killed there"
    assert len(run.text) == len("$ python -c ...\n") + (1 << 20)
    assert check("$ python -c ...\n", "x", "y", (run,)).status == "crash"


# -- 3. nothing outlives the run --------------------------------------------------------------------------------


@needs_namespace
def test_a_double_forked_daemon_does_not_outlive_the_run(py312) -> None:
    daemon = marker()
    snippet = textwrap.dedent(f"""\
        import os
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 1); os.dup2(null, 2)
                os.execv('/bin/sleep', ['sleep', '{daemon}'])
            os._exit(0)
        os.wait()
        print('parent done')
        """)
    run = run_once(shell(py312, "python -c ...", "-c", snippet), "1", Limits(timeout=5), strong())
    assert (run.text, run.returncode, run.timed_out) == ("$ python -c ...\nparent done\n", 0, False)
    assert_none_running(daemon)


@pytest.mark.parametrize("kind", sorted(k for k in FALLBACKS if k != sandbox.IsolationKind.PROCESS_GROUP))
def test_nothing_outlives_pytest_killed_mid_run(py312, kind: str) -> None:
    daemon = marker()
    whole, part = daemon.split(".")  # joined only in the daemon's command line, not in the processes that start it
    snippet = (f"import subprocess, time; subprocess.Popen(['sleep', '{whole}.' + '{part}'], start_new_session=True);"
               " time.sleep(60)")
    code = textwrap.dedent(f"""
        import sys
        from pytest_gotchas.truth import sandbox
        from pytest_gotchas.truth.execute import Limits, Request, run_once
        from pytest_gotchas.truth.interpreters import Interpreter
        chosen = {PROBES[kind]}
        assert chosen.kind == {str(kind)!r}
        py = Interpreter(version={py312.version!r}, path={py312.path!r}, implementation="CPython")
        run_once(Request(py, None, ("-c", {snippet!r}), "python -c ...", ()), "1", Limits(timeout=50), chosen)
    """)
    child = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        deadline = time.monotonic() + 10
        while not running(daemon) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert running(daemon), "the snippet did not start"
    finally:
        child.kill()  # as an OOM killer or a CI timeout would
        child.wait()
    assert_none_running(daemon)


@needs_namespace
def test_the_snippet_runs_in_its_own_pid_namespace(py312) -> None:
    # The supervisor is PID 1, the snippet PID 2: no other process of the machine is visible or reachable.
    snippet = "import os; print(os.getpid(), os.getppid(), sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))"
    assert text_of(shell(py312, "python -c ...", "-c", snippet)) == "$ python -c ...\n2 1 [1, 2]\n"


# -- 4. confinement of the filesystem and the network (each strong isolation) -------------------------------------


def test_the_project_and_the_root_filesystem_are_read_only(py312, each_strong: sandbox.Isolation) -> None:
    escapes = (REPO / "gotchas-escape-probe", Path("/usr/gotchas-escape-probe"))
    try:
        text = text_of(repl(py312, *(f"open({str(path)!r}, 'w')" for path in escapes)), isolation=each_strong)
        # A checkout under /tmp is not even visible: the sandbox's /tmp is its own.
        hidden = REPO.is_relative_to("/tmp")
        assert text.count("OSError: [Errno 30] Read-only file system") == (1 if hidden else 2), text
        assert text.count("FileNotFoundError: [Errno 2] No such file or directory") == (1 if hidden else 0), text
        assert not any(path.exists() for path in escapes)
    finally:  # unconfined, the snippet would have created them
        for path in escapes:
            path.unlink(missing_ok=True)


def test_tmp_is_private_and_the_working_directory_writable(py312, tmp_path: Path, each_strong: sandbox.Isolation
                                                          ) -> None:
    outside, scratch = tmp_path / "escaped", Path(f"/tmp/gotchas-scratch-{os.getpid()}")
    lines = (f"open({str(outside)!r}, 'w')", f"open({str(scratch)!r}, 'w').write('x')", "open('here', 'w').write('y')",
             "import os; sorted(os.listdir('/tmp')), sorted(os.listdir('.'))")
    try:
        text = text_of(repl(py312, *lines), isolation=each_strong)
        assert f"FileNotFoundError: [Errno 2] No such file or directory: {str(outside)!r}" in text
        in_tmp, in_workdir = ast.literal_eval(text.splitlines()[-1])
        assert len(in_tmp) == 2 and scratch.name in in_tmp  # the scratch file and the working directory, only
        assert in_workdir == [".gotchas_startup.py", "here"]
        assert not outside.exists() and not scratch.exists()
    finally:  # unconfined, the snippet would have created it
        scratch.unlink(missing_ok=True)


def test_home_directories_are_hidden_but_the_interpreters_are_visible(py312, each_strong: sandbox.Isolation
                                                                      ) -> None:
    snippet = ("import os, sys; print(sys.executable)\nfor d in ('/root', '/home'):\n    try: print(os.listdir(d))\n"
               "    except OSError as e: print(e)")
    lines = text_of(shell(py312, "python -c ...", "-c", snippet), isolation=each_strong).splitlines()[1:]
    # the interpreter runs from its folder, bound back; the folders that hold it can be passed, not listed
    assert lines == [py312.path, *(f"[Errno 13] Permission denied: {d!r}" if os.path.isdir(d) else
                                   f"[Errno 2] No such file or directory: {d!r}" for d in ("/root", "/home"))]


def test_no_network_and_no_capabilities(py312, each_strong: sandbox.Isolation) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.setblocking(False)
        port = server.getsockname()[1]
        lines = ("import socket", f"socket.create_connection(('127.0.0.1', {port}), timeout=2)",
                 "[l.split()[1] for l in open('/proc/self/status') if l.startswith('CapEff')]")
        text = text_of(repl(py312, *lines), isolation=each_strong)
        assert "ConnectionRefusedError" in text or "OSError: [Errno 101]" in text, text
        with pytest.raises(BlockingIOError):
            server.accept()
    assert text.endswith("['0000000000000000']\n")


# -- isolation: probed once, fallbacks, cache key -----------------------------------------------------------------


def test_isolation_on_this_machine_is_described() -> None:
    # the default is strong: with neither bubblewrap nor namespaces, choose() raises instead
    assert ISOLATION.kind in sandbox.STRONG_KINDS and ISOLATION.level == sandbox.IsolationLevel.STRONG
    what = ("read-only root; credentials, home folders and the project hidden; private /tmp, /var/tmp, /dev/shm and "
            "working directory; loopback only; no capabilities, no kernel keyrings")
    if ISOLATION.kind == sandbox.IsolationKind.BUBBLEWRAP:
        assert ISOLATION.description == f"strong isolation: bubblewrap (own PID namespace; {what}); {MEMORY}"
    elif os.geteuid() == 0:
        assert ISOLATION.description == ("strong isolation: namespaces by util-linux unshare (mount, network, PID, "
                                         f"IPC, UTS and cgroup namespaces; {what}); {MEMORY}")


def test_each_run_confines_by_its_own_isolation_in_one_process(py312) -> None:
    """No process-wide choice: a weak and a strong cache side by side each run under their own, and choosing one
    changes nothing for the other."""
    if sandbox.IsolationLevel.STRONG not in {i.level for i in FALLBACKS.values()}:
        pytest.skip("no strong isolation works here")
    weak = FALLBACKS[sandbox.IsolationKind.PROCESS_GROUP]
    with tempfile.NamedTemporaryFile(prefix="gotchas-host-", dir="/tmp") as host:
        request = repl(py312, "import os", f"os.path.exists({host.name!r})")
        weakly = Cache(None, weak).get_or_execute(request, 2, Limits())
        sandbox.choose(sandbox.IsolationLevel.WEAK)
        strongly = Cache(None, ISOLATION).get_or_execute(request, 2, Limits())
    assert [run.text.splitlines()[-1] for run in weakly + strongly] == ["True", "True", "False", "False"]


def test_missing_or_forbidden_tools_fall_back_within_their_level() -> None:
    # strong never falls back to weak (tests/unit/truth/test_isolation.py: the message); weak needs nothing
    with pytest.raises(sandbox.Unavailable):
        sandbox.probe(bwrap="", unshare="")
    with pytest.raises(sandbox.Unavailable):
        sandbox.probe(bwrap="/nonexistent/bwrap", unshare="/nonexistent/unshare")
    assert sandbox.probe("weak", unshare="").kind == sandbox.IsolationKind.PROCESS_GROUP
    assert sandbox.probe("weak", unshare="/nonexistent/unshare").kind == sandbox.IsolationKind.PROCESS_GROUP
    if os.geteuid() == 0:  # root may always make namespaces
        forbidden = sandbox.probe(bwrap="/bin/false")  # present but not permitted, as in a locked-down container
        assert forbidden.kind == sandbox.IsolationKind.NAMESPACES
        assert forbidden.launcher[-9:] == ("--mount", "--net", "--pid", "--ipc", "--uts", "--cgroup", "--fork",
                                            "--kill-child", "--")
        weak = sandbox.probe("weak")
        assert weak.kind == sandbox.IsolationKind.PID_NAMESPACE
        assert weak.launcher[-4:] == ("--pid", "--fork", "--kill-child", "--mount-proc")


def test_the_isolation_is_part_of_the_cache_key() -> None:
    py = Interpreter(version="3.12.1", path="/opt/python3.12", implementation="CPython")
    keys = set()
    for chosen in FALLBACKS.values():
        keys.add(repl(py, "1 + 1").key(3, Limits(), chosen))
    keys.add(repl(py, "1 + 1").key(3, Limits(), sandbox.Isolation("other", "something else")))
    assert len(keys) == len(FALLBACKS) + 1


def test_every_isolation_renders_the_same_transcript(py312, each_isolation: sandbox.Isolation) -> None:
    text = text_of(repl(py312, "import sys, os", "for i in range(2):", "    print(i, file=sys.stderr if i else None)",
                        "", "print(1 +)", "sorted(os.environ)"), isolation=each_isolation)
    assert text == (">>> import sys, os\n>>> for i in range(2):\n...     print(i, file=sys.stderr if i else None)\n"
                    "... \n0\n1\n>>> print(1 +)\n"
                    '  File "<stdin>", line 1\n    print(1 +)\n             ^\nSyntaxError: invalid syntax\n'
                    ">>> sorted(os.environ)\n"
                    "['HOME', 'LANG', 'PATH', 'PYTHONHASHSEED', 'PYTHONSTARTUP', 'PYTHON_BASIC_REPL']\n")


def test_every_isolation_keeps_the_limits_and_the_exit_status(py312, each_isolation: sandbox.Isolation) -> None:
    snippet = ("import resource as r, os, sys; print([r.getrlimit(x) for x in (r.RLIMIT_AS, r.RLIMIT_CPU, "
               "r.RLIMIT_FSIZE, r.RLIMIT_CORE)], os.getsid(0) == os.getpid()); sys.exit(3)")
    run = run_once(shell(py312, "python -c ...", "-c", snippet), "1", Limits(timeout=3, file_size=1 << 20),
                   each_isolation)
    assert run.text == f"$ python -c ...\n[({1 << 30}, {1 << 30}), (6, 6), ({1 << 20}, {1 << 20}), (0, 0)] True\n"
    assert (run.returncode, run.timed_out, run.error) == (3, False, None)
    crashed = run_once(shell(py312, "python -c ...", "-c", "import os; os.abort()"), "1", Limits(), each_isolation)
    assert (crashed.returncode, crashed.signal_name) == (-6, "SIGABRT")


def test_every_isolation_enforces_the_timeout(py312, each_isolation: sandbox.Isolation) -> None:
    started = time.monotonic()
    runs = execute(repl(py312, "print('started', flush=True)", "while True: pass", "", env=()), 3,
                   Limits(timeout=0.5), each_isolation)
    assert time.monotonic() - started < 0.5 + sandbox.GRACE + 1.5
    assert [(r.seed, r.timed_out, r.returncode) for r in runs] == [("1", True, -9)]
    assert runs[0].text.startswith(">>> print('started', flush=True)\nstarted\n")


def test_a_sandbox_that_cannot_start_is_a_clear_error(py312) -> None:
    broken = sandbox.Isolation(sandbox.IsolationKind.BUBBLEWRAP, "broken", ("/usr/bin/env", "--no-such-option"))
    run = run_once(repl(py312, "1"), "0", Limits(), broken)
    assert run.error is not None and run.error.startswith("could not be started in its sandbox (bubblewrap exit "
                                                          "status 125): ")
    checked = check(">>> 1\n", "1", "2", (run,))
    assert checked.status == "crash" and checked.message.startswith("the snippet could not be started in its sandbox")
