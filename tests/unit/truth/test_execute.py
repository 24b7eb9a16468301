"""execute.py: replaying sessions through the target interpreter's own REPL, the sandbox, and the cache."""

from __future__ import annotations

import errno
import json
import os
import pty
import re
import select
import subprocess
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pytest
from helpers.execution import assert_none_running, repl, shell, strong, text_of
from helpers.interpreters import interpreter

from pytest_gotchas.truth import execute as execute_mod, sandbox
from pytest_gotchas.truth.execute import (_MARK1, _MARK2, RENDERER_VERSION, Cache, CacheLost, ExecutionError, Limits,
                                          Request, Execution, execute, render_repl, run_once, seeds)
from pytest_gotchas.truth.interpreters import Interpreter

FAKE = Interpreter(version="3.12.1", path="/opt/python3.12", implementation="CPython")


# -- pure parts ---------------------------------------------------------------------------------------------------


def test_seeds_pinned_and_varied() -> None:
    assert seeds(repl(FAKE, "1"), 3) == ["0", "0", "0"]
    assert seeds(repl(FAKE, "1", env=()), 3) == ["1", "2", "3"]
    assert seeds(repl(FAKE, "1", env=(("FOO", "x"),)), 2) == ["1", "2"]


def test_cache_key_covers_everything_that_changes_the_output() -> None:
    base = repl(FAKE, "1 + 1")
    key = base.key(3, Limits(), strong())
    assert key == repl(FAKE, "1 + 1").key(3, Limits(), strong())
    assert re.fullmatch(r"[0-9a-f]{64}", key)
    different = [
        repl(FAKE, "1 + 2"),
        repl(replace(FAKE, version="3.12.2"), "1 + 1"),
        repl(replace(FAKE, path="/usr/bin/python3.12"), "1 + 1"),
        repl(FAKE, "1 + 1", env=(("PYTHONHASHSEED", "1"),)),
        shell(FAKE, "python -c 1", "-c", "1"),
    ]
    assert len({r.key(3, Limits(), strong()) for r in different} | {key}) == len(different) + 1
    assert base.key(2, Limits(), strong()) != key
    assert base.key(3, Limits(timeout=1), strong()) != key
    assert base.key(3, Limits(memory=1 << 20), strong()) != key


def test_cache_key_includes_the_renderer_version(monkeypatch: pytest.MonkeyPatch) -> None:
    key = repl(FAKE, "1").key(3, Limits(), strong())
    monkeypatch.setattr(execute_mod, "RENDERER_VERSION", RENDERER_VERSION + 1)
    assert repl(FAKE, "1").key(3, Limits(), strong()) != key


@pytest.mark.parametrize("returncode, timed_out, name", [
    (-11, False, "SIGSEGV"), (-6, False, "SIGABRT"), (-9, True, None), (0, False, None), (1, False, None),
    (-200, False, "signal 200"),
])
def test_signal_name(returncode: int, timed_out: bool, name: str | None) -> None:
    assert Execution(text="", seed="1", returncode=returncode, timed_out=timed_out).signal_name == name


def test_render_repl_echoes_each_input_line_after_its_prompt() -> None:
    raw = f"{_MARK1}{_MARK2}{_MARK2}0\n1\n{_MARK1}partial{_MARK1}\n"
    lines = ("for i in range(2):", "    print(i)", "", "print('partial', end='')")
    assert render_repl(raw, lines) == (">>> for i in range(2):\n...     print(i)\n... \n0\n1\n"
                                       ">>> print('partial', end='')\npartial")


def test_render_repl_drops_the_prompt_that_met_end_of_input() -> None:
    assert render_repl(f"{_MARK1}2\n{_MARK1}\n", ("1 + 1",)) == ">>> 1 + 1\n2\n"


def test_render_repl_keeps_output_before_the_first_prompt() -> None:
    assert render_repl(f"startup\n{_MARK1}", ()) == "startup\n"


# -- REPL rendering, against the real interpreters ----------------------------------------------------------------


def test_blank_line_ending_a_block_renders_with_a_trailing_space(py312) -> None:
    text = text_of(repl(py312, "for i in range(2):", "    print(i)", "", "i"))
    assert text == ">>> for i in range(2):\n...     print(i)\n... \n0\n1\n>>> i\n1\n"


def test_traceback_as_python_312_prints_it(py312) -> None:
    text = text_of(repl(py312, "def g():", "    return 1/0", "", "g()"))
    assert text == (">>> def g():\n...     return 1/0\n... \n>>> g()\n"
                    "Traceback (most recent call last):\n"
                    '  File "<stdin>", line 1, in <module>\n'
                    '  File "<stdin>", line 2, in g\n'
                    "ZeroDivisionError: division by zero\n")


def test_traceback_shows_the_source_line_under_313(py313) -> None:
    # InteractiveConsole would lose these lines: only the interpreter's own REPL prints them.
    text = text_of(repl(py313, "def g():", "    return 1/0", "", "g()"))
    assert text == (">>> def g():\n...     return 1/0\n... \n>>> g()\n"
                    "Traceback (most recent call last):\n"
                    '  File "<stdin>", line 1, in <module>\n'
                    "    g()\n"
                    "    ~^^\n"
                    '  File "<stdin>", line 2, in g\n'
                    "    return 1/0\n"
                    "           ~^~\n"
                    "ZeroDivisionError: division by zero\n")


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_syntax_error_caret(version: str) -> None:
    text = text_of(repl(interpreter(version), "print(1 +)", "1"))
    assert text == (">>> print(1 +)\n"
                    '  File "<stdin>", line 1\n'
                    "    print(1 +)\n"
                    "             ^\n"
                    "SyntaxError: invalid syntax\n"
                    ">>> 1\n1\n")


def test_stdout_and_stderr_interleave_as_on_a_terminal(py312) -> None:
    # stdout is line-buffered, as on a terminal: a partial line waits while stderr goes straight out.
    text = text_of(repl(py312, "import sys", "print('a', end=''); print('b', file=sys.stderr); print('c')",
                        "print('x'); print('y', file=sys.stderr); print('z')"))
    assert text == (">>> import sys\n>>> print('a', end=''); print('b', file=sys.stderr); print('c')\nb\nac\n"
                    ">>> print('x'); print('y', file=sys.stderr); print('z')\nx\ny\nz\n")


def _pty_session(py: Interpreter, lines: tuple[str, ...], home: Path) -> str:
    """What a terminal shows for the same session, typed line by line after each prompt."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "TERM": "dumb", "PYTHONHASHSEED": "0",
           "PYTHON_BASIC_REPL": "1"}
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.chdir(home)
        os.execve(py.path, [py.path, "-q", "-i", "-s"], env)
    out = b""

    def read_until(prompts: int) -> None:
        nonlocal out
        deadline = time.monotonic() + 10
        while out.count(b">>> ") + out.count(b"... ") < prompts and time.monotonic() < deadline:
            if select.select([fd], [], [], 0.05)[0]:
                out += os.read(fd, 65536)

    try:
        for n, line in enumerate(lines, start=1):
            read_until(n)
            os.write(fd, line.encode() + b"\n")
        read_until(len(lines) + 1)
        os.write(fd, b"\x04")
    finally:
        out += _drain(pid, fd)
    text = re.sub(r"\x1b\[[?0-9;]*[A-Za-z]", "", out.decode().replace("\r\n", "\n"))
    assert text.endswith(">>> \n"), text
    return text[: -len(">>> \n")]


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_rendering_matches_a_real_terminal(version: str, tmp_path: Path) -> None:
    py = interpreter(version)
    lines = ("import sys", "print('a', end=''); print('b', file=sys.stderr); print('c')",
             "for i in range(2):", "    print(i)", "", "1/0", "print(1 +)", "{1024, 1022, 1023}")
    assert text_of(repl(py, *lines)) == _pty_session(py, lines, tmp_path)


# -- shell commands -----------------------------------------------------------------------------------------------


def test_shell_command_is_echoed_then_its_output(py312) -> None:
    command = 'python -c "import sys\nprint(1)\nprint(2, file=sys.stderr)"'
    text = text_of(shell(py312, command, "-c", "import sys\nprint(1)\nprint(2, file=sys.stderr)"))
    assert text == f"$ {command}\n1\n2\n"


def test_shell_stdout_is_line_buffered_as_on_a_terminal(py312) -> None:
    snippet = "import sys\nprint('a', end='')\nprint('b', file=sys.stderr)\nprint('c')\nprint('d', file=sys.stderr)"
    assert text_of(shell(py312, "python -c ...", "-c", snippet)) == "$ python -c ...\nb\nac\nd\n"


def _pty_command(argv: list[str], home: Path) -> str:
    """What a terminal shows for one command's output."""
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.chdir(home)
        os.execve(argv[0], argv, {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "TERM": "dumb",
                                  "PYTHONHASHSEED": "0"})
    return _drain(pid, fd).decode().replace("\r\n", "\n")


def _drain(pid: int, fd: int) -> bytes:
    """Everything the pty still has to say until the child exits, then reap it."""
    out = b""
    try:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.waitpid(pid, 0)
        os.close(fd)
    return out


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_shell_rendering_matches_a_real_terminal(version: str, tmp_path: Path) -> None:
    py = interpreter(version)
    snippet = ("import sys\nprint('a', end='')\nprint('b', file=sys.stderr)\nprint('c')\n"
               "print('d', file=sys.stderr)\nprint(sys.stdout.isatty())\n1/0")
    expected = _pty_command([py.path, "-s", "-c", snippet], tmp_path)
    assert expected.startswith("b\nac\nd\nTrue\nTraceback")
    run = run_once(shell(py, "python -c ...", "-c", snippet), "0", Limits(), strong())
    # the one difference a pipe cannot hide: isatty() is False
    assert run.text == "$ python -c ...\n" + expected.replace("True\n", "False\n", 1)


def test_shell_command_keeps_its_own_pythonpath(py312) -> None:
    text = text_of(shell(py312, "PYTHONPATH=/opt/lib python -c ...", "-c", "import os; print(os.environ['PYTHONPATH'])",
                         env=(("PYTHONPATH", "/opt/lib"),)))
    assert text.splitlines()[1].endswith(":/opt/lib")


def test_hash_seed_is_honoured(py312) -> None:
    def hashed(seed: str) -> str:
        return text_of(shell(py312, "python -c ...", "-c", "print(hash('a'))"), seed).split("\n")[1]

    direct = subprocess.run([py312.path, "-c", "print(hash('a'))"], capture_output=True, text=True,
                            env={"PYTHONHASHSEED": "1"}).stdout.strip()
    assert hashed("1") == hashed("1") == direct
    assert hashed("1") != hashed("2")


# -- the sandbox --------------------------------------------------------------------------------------------------


def test_environment_is_explicit(py312, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONUNBUFFERED", "1")  # this machine exports it; it changes the interleaving
    monkeypatch.setenv("GOTCHAS_LEAK", "1")
    text = text_of(shell(py312, "python -c ...", "-c", "import os; print(sorted(os.environ))",
                         env=(("FOO", "bar"),)))
    assert text.splitlines()[1] == "['FOO', 'HOME', 'LANG', 'PATH', 'PYTHONHASHSEED', 'PYTHONPATH']"
    text = text_of(repl(py312, "import os", "sorted(os.environ)"))
    assert text.splitlines()[-1] == "['HOME', 'LANG', 'PATH', 'PYTHONHASHSEED', 'PYTHONSTARTUP', 'PYTHON_BASIC_REPL']"


def test_runs_in_a_fresh_temporary_directory_and_session(py312) -> None:
    snippet = "import os; print(os.getcwd()); print(os.getcwd() == os.environ['HOME'], os.getsid(0) == os.getpid())"
    lines = text_of(shell(py312, "python -c ...", "-c", snippet)).splitlines()
    assert lines[2] == "True True"
    assert Path(lines[1]).name.startswith("gotchas-")
    assert not Path(lines[1]).exists()  # removed after the run


def test_resource_limits(py312) -> None:
    snippet = ("import resource as r; print([r.getrlimit(x) for x in "
               "(r.RLIMIT_AS, r.RLIMIT_CPU, r.RLIMIT_FSIZE, r.RLIMIT_CORE)])")
    limits = Limits(timeout=3, memory=1 << 30, file_size=1 << 20)
    text = text_of(shell(py312, "python -c ...", "-c", snippet), limits=limits)
    assert text.splitlines()[1] == f"[({1 << 30}, {1 << 30}), (6, 6), ({1 << 20}, {1 << 20}), (0, 0)]"


def test_memory_limit(py312) -> None:
    text = text_of(repl(py312, "b = bytearray(2 << 30)", "'still here'"), limits=Limits(memory=1 << 30))
    assert text.endswith("MemoryError\n>>> 'still here'\n'still here'\n")


def test_file_size_limit(py312) -> None:
    text = text_of(repl(py312, "f = open('big', 'w'); f.write('x' * 4096); f.flush()"),
                   limits=Limits(file_size=1024))
    assert text.endswith("OSError: [Errno 27] File too large\n")


def test_crash_returns_the_signal(py312) -> None:
    command = 'python -c "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"'
    run = run_once(shell(py312, command, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"), "1",
                   Limits(), strong())
    assert (run.returncode, run.signal_name, run.timed_out, run.text) == (-11, "SIGSEGV", False, f"$ {command}\n")


def test_timeout_kills_the_whole_process_group(py312) -> None:
    marker = f"30.{os.getpid()}{time.monotonic_ns() % 100000}"  # `sleep 30.<unique>`: findable in /proc
    snippet = (f"import subprocess; p = subprocess.Popen(['sleep', '{marker}']); print(p.pid, flush=True)\n"
               "while True: pass")
    started = time.monotonic()
    run = run_once(shell(py312, "python -c ...", "-c", snippet), "1", Limits(timeout=1), strong())
    assert time.monotonic() - started < 10
    assert run.timed_out and run.returncode == -9 and run.signal_name is None
    assert int(run.text.splitlines()[1]) > 0  # the child had started
    assert_none_running(marker)


def test_runaway_is_run_once_not_once_per_seed(py312) -> None:
    runs = execute(repl(py312, "while True: pass", "", env=()), 3, Limits(timeout=0.5), strong())
    assert [(r.seed, r.timed_out) for r in runs] == [("1", True)]


def test_execute_runs_under_each_seed(py312) -> None:
    runs = execute(repl(py312, "import os", "os.environ['PYTHONHASHSEED']", env=()), 3, Limits(), strong())
    assert [r.seed for r in runs] == ["1", "2", "3"]
    assert [r.text.splitlines()[-1] for r in runs] == ["'1'", "'2'", "'3'"]


# -- the cache ----------------------------------------------------------------------------------------------------


class FakeExecute:
    def __init__(self) -> None:
        self.calls: list[Request] = []

    def __call__(self, request: Request, runs: int, limits: Limits,
                 isolation: sandbox.Isolation) -> tuple[Execution, ...]:
        self.calls.append(request)
        return tuple(Execution(text=f"{request.repl_input}", seed=s, returncode=0, timed_out=False)
                     for s in seeds(request, runs))


@pytest.fixture
def fake_execute(monkeypatch: pytest.MonkeyPatch) -> FakeExecute:
    fake = FakeExecute()
    monkeypatch.setattr(execute_mod, "execute", fake)
    return fake


def test_cache_miss_then_hit(tmp_path: Path, fake_execute: FakeExecute) -> None:
    cache = Cache(tmp_path / "t", strong())
    request = repl(FAKE, "1 + 1")
    first = cache.get_or_execute(request, 3, Limits())
    second = Cache(tmp_path / "t", strong()).get_or_execute(request, 3, Limits())
    assert first == second and len(fake_execute.calls) == 1
    assert (cache.hits, cache.misses) == (0, 1)
    stored = tmp_path / "t" / f"{request.key(3, Limits(), strong())}.json"
    assert json.loads(stored.read_text())["payload"] == [
        {"text": "('1 + 1',)", "seed": "0", "returncode": 0, "timed_out": False, "error": None}] * 3
    again = Cache(tmp_path / "t", strong())
    again.get_or_execute(request, 3, Limits())
    assert (again.hits, again.misses) == (1, 0)


def test_cache_distinguishes_runs_and_limits(tmp_path: Path, fake_execute: FakeExecute) -> None:
    cache = Cache(tmp_path, strong())
    request = repl(FAKE, "1 + 1")
    cache.get_or_execute(request, 3, Limits())
    cache.get_or_execute(request, 2, Limits())
    cache.get_or_execute(request, 3, Limits(timeout=1))
    assert (cache.hits, cache.misses) == (0, 3)
    assert len(list(tmp_path.glob("*.json"))) == 3


def test_corrupt_cache_entry_is_executed_again(tmp_path: Path, fake_execute: FakeExecute) -> None:
    request = repl(FAKE, "1 + 1")
    path = tmp_path / f"{request.key(3, Limits(), strong())}.json"
    path.write_text("{not json")
    cache = Cache(tmp_path, strong())
    cache.get_or_execute(request, 3, Limits())
    assert cache.misses == 1 and json.loads(path.read_text())["payload"][0]["seed"] == "0"


@pytest.mark.parametrize("edit", [
    lambda data: data["payload"].__setitem__(0, ["not", "a", "run"]),  # another shape: was an IndexError every run
    lambda data: data["payload"][0].__setitem__("text", ">>> 1 + 1\n3\n"),  # edited: collection blamed the YAML
    lambda data: data.__setitem__("payload", []),
])
def test_an_entry_of_another_shape_or_edited_is_executed_again(tmp_path: Path, fake_execute: FakeExecute,
                                                               edit) -> None:
    request = repl(FAKE, "1 + 1")
    first = Cache(tmp_path, strong()).get_or_execute(request, 3, Limits())
    path = tmp_path / f"{request.key(3, Limits(), strong())}.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    cache = Cache(tmp_path, strong())
    assert cache.get_or_execute(request, 3, Limits()) == first
    assert (cache.hits, cache.misses, len(fake_execute.calls)) == (0, 1, 2)
    assert Cache(tmp_path, strong()).get_or_execute(request, 3, Limits()) == first  # rewritten: trusted again
    assert len(fake_execute.calls) == 2


def test_no_cache_directory_always_executes(fake_execute: FakeExecute) -> None:
    cache = Cache(None, strong())
    for _ in range(2):
        cache.get_or_execute(repl(FAKE, "1"), 3, Limits())
    assert (cache.hits, cache.misses, len(fake_execute.calls)) == (0, 2, 2)


def test_execute_all_runs_each_request_once_and_keeps_order(tmp_path: Path, fake_execute: FakeExecute) -> None:
    a, b = repl(FAKE, "a"), repl(FAKE, "b")
    results = Cache(tmp_path, strong()).execute_all([a, b, a], 2, Limits())
    assert [r[0].text for r in results] == ["('a',)", "('b',)", "('a',)"]
    assert sorted(r.repl_input for r in fake_execute.calls) == [("a",), ("b",)]


def test_no_temporary_files_are_left(tmp_path: Path, fake_execute: FakeExecute) -> None:
    Cache(tmp_path, strong()).execute_all([repl(FAKE, "a"), repl(FAKE, "b")], 2, Limits())
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".json", ".json", ".lock", ".lock"]


def test_cached_runs_equal_fresh_ones(tmp_path: Path, py312) -> None:
    request = repl(py312, "for i in range(2):", "    print(i)", "")
    fresh = Cache(tmp_path, strong()).get_or_execute(request, 2, Limits())
    cached = Cache(tmp_path, strong()).get_or_execute(request, 2, Limits())
    assert fresh == cached
    assert fresh[0].text == ">>> for i in range(2):\n...     print(i)\n... \n0\n1\n"


# -- a full disk, a folder that cannot be written (hostile input round two) ------------------------------------------


# A disk that fills up (or a folder that cannot be written) while ground truth is executed; a full disk is simulated
# at the writing seams (OSError ENOSPC), as no small filesystem can be mounted here unprivileged.
REQUEST = Request(interpreter=Interpreter("3.11.7", "/usr/bin/python3", "CPython"), repl_input=("1 + 1",), args=None,
                  shell_text=None, env=())


RUNS = (Execution(text=">>> 1 + 1\n2\n", seed="1", returncode=0, timed_out=False),)


FULL = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.fixture
def executed(monkeypatch) -> list[Request]:
    """execute() without subprocesses: what it was asked to run."""
    asked: list[Request] = []

    def fake(request: Request, runs: int, limits: Limits, isolation: sandbox.Isolation) -> tuple[Execution, ...]:
        asked.append(request)
        return RUNS

    monkeypatch.setattr(execute_mod, "execute", fake)
    return asked


def test_a_full_disk_under_the_cache_gives_it_up_once_naming_the_folder(tmp_path, monkeypatch, executed) -> None:
    def full(*args: object) -> None:
        raise FULL

    monkeypatch.setattr(execute_mod, "write_sealed", full)
    cache = Cache(tmp_path / "transcripts", strong())
    assert cache.get_or_execute(REQUEST, 1, Limits()) == RUNS  # what was executed is used
    assert cache.take_lost() == CacheLost(str(tmp_path / "transcripts"), "No space left on device")
    assert cache.take_lost() is None  # said once
    assert cache.get_or_execute(REQUEST, 1, Limits()) == RUNS and len(executed) == 2  # no cache now, no lock
    assert cache.directory is None and (cache.hits, cache.misses) == (0, 2)


def test_a_cache_folder_that_cannot_be_made_is_given_up_the_same_way(tmp_path, executed) -> None:
    (tmp_path / "file").write_text("")
    cache = Cache(tmp_path / "file" / "transcripts", strong())  # a folder inside a file: even root cannot make it
    assert cache.execute_all([REQUEST, REQUEST], 1, Limits()) == [RUNS, RUNS]
    assert cache.take_lost() == CacheLost(str(tmp_path / "file" / "transcripts"), "Not a directory")


def test_no_room_for_a_snippets_temporary_folder_is_one_error_naming_it(monkeypatch) -> None:
    def full(*args: object, **kwargs: object) -> None:
        raise FULL

    monkeypatch.setattr(execute_mod.tempfile, "TemporaryDirectory", full)
    with pytest.raises(ExecutionError) as error:
        execute_mod.run_once(REQUEST, "1", Limits(), strong())
    assert str(error.value) == (
        f"cannot execute the snippets: their temporary folder in {tempfile.gettempdir()} cannot be written (No space "
        "left on device); free space there, or point TMPDIR at a folder with room")


def test_a_disk_that_fills_while_the_startup_file_is_written_is_the_same_error(monkeypatch) -> None:
    written = Path.write_text

    def full(self: Path, *args: object, **kwargs: object) -> int:
        if self.name == ".gotchas_startup.py":
            raise FULL
        return written(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(ExecutionError, match=r"^cannot execute the snippets: their temporary folder in .* cannot be "
                                             r"written \(No space left on device\)"):
        execute_mod.run_once(REQUEST, "1", Limits(), strong())
