"""Execute a session under its interpreter and render exactly what a terminal would show.

REPL sessions are replayed through the interpreter's own REPL (`python -q -i -s`, input on stdin), not emulated
with `code.InteractiveConsole`, which loses the SyntaxError caret and 3.13's traceback source lines. A
PYTHONSTARTUP file swaps the prompts for unique markers and line-buffers stdout, as on a terminal; each marker is
then rendered as `>>> ` / `... ` plus the echoed input line.

Snippets are code from a file, possibly hostile: sandbox.py confines each run (strong isolation unless weak is asked
for: bubblewrap, else namespaces made with util-linux unshare; read-only root, credentials, home folders and the
project hidden, private /tmp and working directory, no network, its own PID namespace), gives it a temporary working
directory that is also its HOME, a session of its own, limits on memory, CPU time, file size and core dumps, and
a wall-time timeout that kills the whole sandbox. The environment is fully explicit: nothing of the parent's leaks
in (this machine exports PYTHONUNBUFFERED=1, which changes how stdout and stderr interleave).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import signal
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from filelock import FileLock

from . import sandbox
from .sandbox import Isolation
from ..files import read_sealed, seal_key, write_sealed
from .interpreters import Interpreter
from ..cases.transcript import PS1, PS2

RENDERER_VERSION = 3  # part of every cache key: bump it when rendering changes
_MARK1, _MARK2 = "\x1eGOTCHAS-PS1\x1e", "\x1eGOTCHAS-PS2\x1e"
_MARKER = re.compile("(" + re.escape(_MARK1) + "|" + re.escape(_MARK2) + ")")
_STARTUP = f"""import sys
sys.ps1 = {_MARK1!r}
sys.ps2 = {_MARK2!r}
sys.stdout.reconfigure(line_buffering=True)
"""


class ExecutionError(Exception):
    """The machine cannot execute snippets (no room for a snippet's temporary folder): one message naming the
    folder, for the whole run."""


_FULL = (errno.ENOSPC, errno.EDQUOT)


def _no_room(folder: str, error: OSError) -> ExecutionError:
    return ExecutionError(f"cannot execute the snippets: their temporary folder in {folder} cannot be "
                          f"written ({error.strerror or error}); free space there, or point TMPDIR at a folder with "
                          "room")


@dataclass(frozen=True)
class Limits:
    timeout: float = 10.0  # seconds of wall time for one run
    memory: int = 1 << 30  # bytes of address space
    file_size: int = 16 << 20  # bytes


@dataclass(frozen=True)
class Request:
    """One session to execute: everything that can change what it prints is in here."""

    interpreter: Interpreter
    repl_input: tuple[str, ...] | None  # REPL: the input lines
    args: tuple[str, ...] | None  # shell: arguments after the interpreter
    shell_text: str | None  # shell: the command as written, echoed before its output
    env: tuple[tuple[str, str], ...]  # the session's own variables (PYTHONHASHSEED=0 ...), sorted

    def key(self, runs: int, limits: Limits, isolation: Isolation) -> str:
        """A result obtained under weaker confinement is another observation: the isolation is part of the key."""
        payload = json.dumps([RENDERER_VERSION, asdict(self), runs, asdict(limits), isolation.description],
                             sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()

    @property
    def pinned_seed(self) -> str | None:
        return dict(self.env).get("PYTHONHASHSEED")


@dataclass(frozen=True)
class Execution:
    text: str  # the rendered transcript
    seed: str  # the PYTHONHASHSEED it ran under
    returncode: int  # negative: killed by that signal
    timed_out: bool
    error: str | None = None  # what the snippet did to its sandbox, when it broke it ("killed its sandbox: ...")

    @property
    def signal_name(self) -> str | None:
        if self.returncode >= 0 or self.timed_out or self.error:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"


def seeds(request: Request, runs: int) -> list[str]:
    """A pinned PYTHONHASHSEED is used for every run; otherwise each run gets a different seed, so that an answer
    that depends on the hash seed is caught as nondeterministic."""
    pinned = request.pinned_seed
    return [pinned] * runs if pinned is not None else [str(n) for n in range(1, runs + 1)]


def render_repl(raw: str, lines: tuple[str, ...]) -> str:
    """Replace each prompt marker with the prompt and the input line it read, as a terminal echoes it."""
    parts = _MARKER.split(raw)
    out = [parts[0]]
    pending = list(lines)
    for marker, text in zip(parts[1::2], parts[2::2]):
        if not pending:  # the prompt that met end of input: what follows is the REPL's goodbye newline
            break
        out.append((PS1 if marker == _MARK1 else PS2) + pending.pop(0) + "\n" + text)
    return "".join(out)


def run_once(request: Request, seed: str, limits: Limits, isolation: Isolation) -> Execution:
    """One run of `request` under the run's `isolation`."""
    try:
        folder = tempfile.TemporaryDirectory(prefix="gotchas-")
    except OSError as error:
        raise _no_room(tempfile.gettempdir(), error) from None
    try:
        with folder as tmp:
            return _run_in(request, seed, limits, isolation, tmp)
    except OSError as error:
        if error.errno in (*_FULL, errno.EROFS):  # writing the startup files: the folder filled up
            raise _no_room(tempfile.gettempdir(), error) from None
        raise


def _run_in(request: Request, seed: str, limits: Limits, isolation: Isolation, tmp: str) -> Execution:
    """One run inside the snippet's temporary folder `tmp`."""
    env = {"PATH": f"{Path(request.interpreter.path).parent}:/usr/bin:/bin", "HOME": tmp, "LANG": "C.UTF-8",
           "PYTHONHASHSEED": seed, **dict(request.env)}
    env["PYTHONHASHSEED"] = seed
    if request.repl_input is not None:
        startup = Path(tmp, ".gotchas_startup.py")
        startup.write_text(_STARTUP)
        env.update(PYTHONSTARTUP=str(startup), PYTHON_BASIC_REPL="1")
        argv = [request.interpreter.path, "-q", "-i", "-s"]
        stdin = "".join(line + "\n" for line in request.repl_input)
    else:
        # A terminal line-buffers stdout, a pipe does not: without this, a program's stderr overtakes its
        # stdout. sitecustomize (which -s does not skip) does what the REPL's startup file does.
        startup = Path(tmp, ".gotchas")
        startup.mkdir()
        startup.joinpath("sitecustomize.py").write_text("import sys\nsys.stdout.reconfigure(line_buffering=True)\n")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(startup), env.get("PYTHONPATH")) if p)
        argv = [request.interpreter.path, "-s", *(request.args or ())]
        stdin = ""
    outcome = sandbox.run(argv, env, stdin.encode(), tmp, under=isolation, timeout=limits.timeout, memory=limits.memory,
                          cpu=max(1, int(limits.timeout) * 2), file_size=limits.file_size,
                          support=[str(startup)],
                          readable=[request.interpreter.path, *_folders(request.interpreter.path)])
    # A byte that is not UTF-8 stays one character that no chapter can hold (a lone surrogate), never the text
    # `\xff`, so that no prompt can be cut inside what would only be its escape.
    output = outcome.output.decode("utf-8", errors="surrogateescape")
    if request.repl_input is not None:
        text = render_repl(output, request.repl_input)
    else:
        text = f"$ {request.shell_text}\n{output}"
    return Execution(text=text, seed=seed, returncode=outcome.returncode, timed_out=outcome.timed_out,
                     error=outcome.error)


def _folders(interpreter: str) -> list[str]:
    """The installation an interpreter needs: the folder above its bin/, as named and after symlinks (a venv and
    the Python it was made from)."""
    return sorted({str(Path(interpreter).parent.parent), str(Path(os.path.realpath(interpreter)).parent.parent)})


def execute(request: Request, runs: int, limits: Limits, isolation: Isolation) -> tuple[Execution, ...]:
    """The runs in seed order, up to the first that timed out or broke its sandbox: running it again would only
    cost another timeout. The first run goes alone, to find such a snippet before it is started N times; the
    others run side by side (each is a subprocess: `gotchas new` makes 20 of them)."""
    wanted = seeds(request, runs)
    done = [run_once(request, wanted[0], limits, isolation)]
    if len(wanted) > 1 and not _stops(done[0]):
        with ThreadPoolExecutor(max_workers=min(len(wanted) - 1, os.cpu_count() or 2)) as pool:
            for run in pool.map(lambda seed: run_once(request, seed, limits, isolation), wanted[1:]):
                done.append(run)
                if _stops(run):
                    break
    return tuple(done)


def _stops(run: Execution) -> bool:
    return run.timed_out or run.error is not None


@dataclass(frozen=True)
class CacheLost:
    """The transcript cache was given up: its folder could not be written, for `reason` (the OSError's words)."""

    directory: str
    reason: str


class Cache:
    """Executed transcripts on disk, one JSON file per key; a per-key file lock makes concurrent processes
    (xdist workers) wait for the one that executes instead of executing again.

    A folder that cannot be written (read-only, or a full disk) costs only the cache: what was executed is used, the
    cache is given up for the rest of the run, and `lost` says which folder and why (take_lost, once; the plugin
    words it, report/wording.py)."""

    def __init__(self, directory: Path | None, isolation: Isolation) -> None:
        self.directory = directory
        self.isolation = isolation  # the run's: every snippet it executes is confined by it
        self.hits = self.misses = 0
        self.lost: CacheLost | None = None
        self._told = False
        if directory is not None:
            try:  # made before any snippet runs, so that its folder is there to be hidden from every one
                seal_key()
            except OSError as error:
                self._give_up(directory, error)

    def take_lost(self) -> CacheLost | None:
        """Why the cache was given up, the first time it is asked; None otherwise."""
        if self.lost is None or self._told:
            return None
        self._told = True
        return self.lost

    def _give_up(self, directory: Path, error: OSError) -> None:
        if self.lost is None:
            self.lost = CacheLost(str(directory), error.strerror or str(error))
        self.directory = None

    def get_or_execute(self, request: Request, runs: int, limits: Limits) -> tuple[Execution, ...]:
        directory = self.directory
        if directory is None:
            self.misses += 1
            return execute(request, runs, limits, self.isolation)
        key = request.key(runs, limits, self.isolation)
        path = directory / f"{key}.json"
        stored = _read(path, key)
        if stored is not None:
            self.hits += 1
            return stored
        lock = FileLock(str(path) + ".lock")
        try:
            directory.mkdir(parents=True, exist_ok=True)
            lock.acquire()
        except OSError as error:
            self._give_up(directory, error)
            self.misses += 1
            return execute(request, runs, limits, self.isolation)
        try:
            stored = _read(path, key)
            if stored is not None:
                self.hits += 1
                return stored
            self.misses += 1
            result = execute(request, runs, limits, self.isolation)
            try:
                write_sealed(path, key, [asdict(r) for r in result])
            except OSError as error:
                self._give_up(directory, error)
            return result
        finally:
            lock.release()

    def execute_all(self, requests: list[Request], runs: int, limits: Limits, workers: int | None = None
                    ) -> list[tuple[Execution, ...]]:
        """Cache misses run in parallel: each run is a subprocess, so threads suffice."""
        unique = list(dict.fromkeys(requests))
        workers = workers or default_jobs()
        with ThreadPoolExecutor(max_workers=min(workers, max(1, len(unique)))) as pool:
            results = dict(zip(unique, pool.map(lambda r: self.get_or_execute(r, runs, limits), unique)))
        return [results[r] for r in requests]

    def execute_each(self, requests: list[Request], runs: int, limits: Limits, workers: int,
                     tick: Callable[[int, int], None] | None = None) -> dict[Request, Executed]:
        """Every request (once) by `workers` side by side, whatever its chapter: what each gave, or what it raised,
        to be taken in the order a caller needs (Collector.verify). `tick(done, total)` is called in this thread as
        requests finish."""
        unique = list(dict.fromkeys(requests))
        done: dict[Request, Executed] = {}
        with ThreadPoolExecutor(max_workers=min(workers, max(1, len(unique)))) as pool:
            futures = {pool.submit(self.get_or_execute, r, runs, limits): r for r in unique}
            for count, future in enumerate(as_completed(futures)):
                error = future.exception()
                done[futures[future]] = error if error is not None else future.result()
                if tick is not None:
                    tick(count + 1, len(unique))
        return done


Executed = tuple[Execution, ...] | BaseException  # a request's runs, or what executing it raised


def default_jobs() -> int:
    """Snippet executions side by side where the run does not say (--gotchas-jobs): two per core this process may
    use, as each spends much of its time starting processes and waiting on them."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(2, cores * 2)


_FIELDS = {f.name: f.type for f in fields(Execution)}


def _read(path: Path, key: str) -> tuple[Execution, ...] | None:
    """The runs stored under `key`, or None when the entry is missing, damaged, edited or of another shape: the
    snippet is executed again and the entry rewritten, instead of blaming the chapter for a bad cache."""
    stored = read_sealed(path, key)
    if not isinstance(stored, list) or not stored:
        return None
    runs = []
    for item in stored:
        if not isinstance(item, dict) or set(item) != set(_FIELDS):
            return None
        if not (isinstance(item["text"], str) and isinstance(item["seed"], str)
                and isinstance(item["returncode"], int) and isinstance(item["timed_out"], bool)
                and (item["error"] is None or isinstance(item["error"], str))):
            return None
        runs.append(Execution(**item))
    return tuple(runs)

