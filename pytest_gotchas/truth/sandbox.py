"""Confine one run of a snippet, and end it, with everything it started, within its wall-time limit.

A snippet is code from a file, and hostile input is possible: it may kill its parent, detach a daemon, keep its
output pipe open forever, write into the project, read a home directory or the machine's credentials, or talk to a
service on the host's loopback. Confinement is a decision (`choose(level)`, from --gotchas-isolation), never an
accident of what is installed:

- STRONG (the default): bubblewrap where it works, else the same confinement built from util-linux `unshare`
  (NAMESPACES: mount, network, PID, IPC, UTS and cgroup namespaces, plus a user namespace when not root, set up by
  the supervisor before the snippet starts; supervisor.py). Both are built from one plan (confinement.py): a read-only
  root; what a snippet has no reason to read (`HIDDEN`, and the project under test) replaced by empty, unreadable
  files and folders, the interpreters' own folders bound back; private size-limited tmpfs over /tmp, /var/tmp,
  /dev/shm and the working directory; a minimal /dev; a fresh /proc; a network namespace with only its own loopback;
  no capabilities. When neither works, `choose` raises `Unavailable`, which says what was tried, why it failed, and
  how to get it: pytest stops with that one usage error.
- WEAK (only when asked for): a PID namespace made by util-linux `unshare`, else only a process group of its own.
  Nothing of the filesystem or the network is confined. The level is part of the isolation's description, which is
  named in the report header, the summary, the JSON report and the page.

Every run is supervised by a small program in the host interpreter (supervisor.py) that forks the snippet into a
session of its own with the resource limits set, waits for it and reports its exact exit status on a separate pipe.
Inside a PID namespace the supervisor is PID 1, which no process of the namespace can kill or stop; when it exits,
the kernel kills whatever the snippet left behind. The output is read with a deadline (never `communicate()`, which
waits for a pipe that a detached descendant may keep open): at the deadline the whole sandbox is killed and what it
printed so far is kept; output beyond the file size limit is not kept in pytest's memory but ends the run.
Where a cgroup can be made (memory.py), the run starts inside one of its own, so that its memory limit covers every
process the snippet starts; the supervisor refuses the snippet the kernel's keyrings.

A result obtained under another confinement is a different observation: the isolation's description is part of
the transcript cache key (execute.Request.key).
"""

from __future__ import annotations

import dataclasses
import marshal
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from . import memory as cgroup  # the module; `memory` is a run's limit in bytes
from .confinement import (DEVICES, HIDDEN, PRIVATE, TMPFS_SIZE, bubblewrap_mounts, hidden_paths, plan,  # noqa: F401
                          supervisor_plan)



class IsolationLevel(StrEnum):
    """What --gotchas-isolation asks for (the module's docstring says what each confines)."""

    STRONG = "strong"
    WEAK = "weak"


class IsolationKind(StrEnum):
    """How a level is built on this machine: the strong kinds hide the home and the project, the weak ones do not."""

    BUBBLEWRAP = "bubblewrap"
    NAMESPACES = "namespaces"
    PID_NAMESPACE = "pid-namespace"
    PROCESS_GROUP = "process-group"


STRONG_KINDS = (IsolationKind.BUBBLEWRAP, IsolationKind.NAMESPACES)
GRACE = 1.0  # seconds to collect the last output once the sandbox is dead or its snippet has exited

SUPERVISOR = Path(__file__).with_name("supervisor.py").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Isolation:
    """How runs are confined."""

    kind: IsolationKind
    description: str  # what it confines, for reports and the cache key; starts with its level
    launcher: tuple[str, ...] = ()  # the bwrap or unshare command line, without the per-run part
    hidden: tuple[str, ...] = ()  # the paths hidden (strong kinds): hidden_paths()

    @property
    def level(self) -> IsolationLevel:
        return IsolationLevel.STRONG if self.kind in STRONG_KINDS else IsolationLevel.WEAK

    def launch(self, inner: list[str], workdir: str, support: Iterable[str] = (), readable: Iterable[str] = (),
               empty: str = "") -> tuple[list[str], dict[str, str]]:
        """(the command that runs `inner` confined in `workdir`, the variables it needs besides the snippet's).
        Under a strong isolation the working directory is a private tmpfs at the same path, with the host files
        `support` (startup files) bound read-only into it, and the folders `readable` (interpreters) visible even
        where they lie under a hidden or private one; `empty` is the host's empty file of mode 0000 that is bound
        over each hidden file."""
        if self.kind not in STRONG_KINDS:
            return [*self.launcher, *inner], {}
        steps = plan(workdir, support, readable, self.hidden)
        if self.kind == IsolationKind.NAMESPACES:
            return [*self.launcher, *inner], {"GOTCHAS_SANDBOX": supervisor_plan(steps, workdir, empty)}
        return [*self.launcher, *bubblewrap_mounts(steps, empty), "--chdir", workdir, "--", *inner], {}

    def command(self, inner: list[str], workdir: str, support: Iterable[str] = (), readable: Iterable[str] = ()
                ) -> list[str]:
        """The command line alone (the namespace confinement also needs the variable `launch` gives)."""
        return self.launch(inner, workdir, support, readable)[0]


_WHAT = ("read-only root; credentials, home folders and the project hidden; private /tmp, /var/tmp, /dev/shm and "
         "working directory; loopback only; no capabilities, no kernel keyrings")


def _bubblewrap(bwrap: str) -> Isolation:
    flags = (bwrap, "--ro-bind", "/", "/", "--unshare-all", "--cap-drop", "ALL", "--die-with-parent",
             "--new-session", "--as-pid-1")
    return Isolation(IsolationKind.BUBBLEWRAP,
                     f"strong isolation: bubblewrap (own PID namespace; {_WHAT}); {cgroup.described()}",
                     flags)


def _death(setpriv: str | None) -> tuple[str, ...]:
    # setpriv: unshare itself dies with pytest (--kill-child then takes the namespace down with it)
    return (setpriv, "--pdeathsig", "KILL") if setpriv else ()


def _namespaces(unshare: str, setpriv: str | None) -> Isolation:
    root = os.geteuid() == 0
    user = () if root else ("--user", "--map-root-user")
    flags = (*_death(setpriv), unshare, *user, "--mount", "--net", "--pid", "--ipc", "--uts", "--cgroup", "--fork",
             "--kill-child", "--")
    spaces = "mount, network, PID, IPC, UTS and cgroup namespaces" + ("" if root else ", in a user namespace")
    return Isolation(IsolationKind.NAMESPACES,
                     f"strong isolation: namespaces by util-linux unshare ({spaces}; {_WHAT}); "
                                 f"{cgroup.described()}", flags)


def _pid_namespace(unshare: str, setpriv: str | None) -> Isolation:
    user = () if os.geteuid() == 0 else ("--user", "--map-root-user")
    flags = (*_death(setpriv), unshare, *user, "--pid", "--fork", "--kill-child", "--mount-proc")
    return Isolation(IsolationKind.PID_NAMESPACE,
                     "weak isolation (--gotchas-isolation=weak): a PID namespace only (util-linux "
                                    "unshare); the filesystem, the network and the host's secrets are not confined; "
                                    f"{cgroup.described()}", flags)


def _process_group() -> Isolation:
    return Isolation(IsolationKind.PROCESS_GROUP,
                     "weak isolation (--gotchas-isolation=weak): a process group only (unshare does "
                                    "not work here); the filesystem, the network and the host's secrets are not "
                                    "confined, and a descendant that leaves the group may survive the run; "
                                    f"{cgroup.described()}")


class Unavailable(Exception):
    """No strong isolation works here: what was tried, why each failed, and how to get one."""

    def __init__(self, tried: Iterable[tuple[str, str]]) -> None:
        self.tried = tuple(tried)
        super().__init__(self.message())

    def message(self) -> str:
        lines = ["snippets cannot be confined on this machine, and strong isolation is asked for (the default), "
                 "so none is executed."]
        lines += [f"  tried {name}: {why}" for name, why in self.tried]
        lines.append("To confine them: install bubblewrap (Debian, Ubuntu: apt-get install bubblewrap), or allow "
                     "unprivileged user namespaces (sysctl user.max_user_namespaces=15000; Debian: "
                     "kernel.unprivileged_userns_clone=1; Ubuntu: kernel.apparmor_restrict_unprivileged_userns=0), "
                     "or run as root.")
        lines.append("To run them unconfined (a PID namespace only: they can write to /tmp, read the host's files "
                     "and reach its network), pass --gotchas-isolation=weak (ini: gotchas_isolation = weak; gotchas "
                     "new and vary: --isolation weak).")
        return "\n".join(lines)


def which(tool: str) -> str | None:
    """Where `tool` (bwrap, unshare, setpriv) is on PATH; the tests replace it to pretend a tool is missing."""
    return shutil.which(tool)


def probe(level: str = IsolationLevel.STRONG, *, bwrap: str | None = None, unshare: str | None = None,
          setpriv: str | None = None) -> Isolation:
    """The isolation of `level` that actually works here, tried by running `true` under it (a few milliseconds):
    strong, bubblewrap else the namespaces (raises Unavailable when neither works); weak, a PID namespace else a
    process group. The arguments name the tools; None: look them up on PATH (pass "" to pretend one is missing).
    Nothing is hidden yet: `choose` adds the paths."""
    if level not in tuple(IsolationLevel):
        raise ValueError(f"isolation level must be one of {', '.join(IsolationLevel)}, got {level!r}")
    unshare = which("unshare") if unshare is None else unshare
    setpriv = (which("setpriv") if setpriv is None else setpriv) or None
    if level == IsolationLevel.WEAK:
        if unshare and _attempt(_pid_namespace(unshare, setpriv)) is None:
            return _pid_namespace(unshare, setpriv)
        return _process_group()
    tried = []
    bwrap = which("bwrap") if bwrap is None else bwrap
    for name, tool, make in (("bubblewrap", bwrap, _bubblewrap), ("namespaces (util-linux unshare)", unshare,
                                                                   lambda t: _namespaces(t, setpriv))):
        if not tool:
            tried.append((name, f"{'bwrap' if make is _bubblewrap else 'unshare'} is not on PATH"))
            continue
        candidate = dataclasses.replace(make(tool), hidden=hidden_paths())
        failure = _attempt(candidate)
        if failure is None:
            return dataclasses.replace(candidate, hidden=())
        tried.append((name, failure))
    raise Unavailable(tried)


def _attempt(candidate: Isolation) -> str | None:
    """Why `true` does not run under `candidate` (None: it does)."""
    true = os.path.realpath(shutil.which("true") or "/bin/true")
    with tempfile.TemporaryDirectory(prefix="gotchas-probe-") as tmp:
        try:
            outcome = run([true], {}, b"", tmp, timeout=10, memory=1 << 30, cpu=10, file_size=1 << 20,
                          readable=[os.path.dirname(os.path.dirname(true))], under=candidate)
        except OSError as error:
            return f"{candidate.launcher[0] if candidate.launcher else 'the launcher'} cannot be started: {error}"
    if outcome.error is None and outcome.returncode == 0:
        return None
    if outcome.timed_out:
        return "`true` did not finish within 10 seconds"
    said = outcome.output.decode("utf-8", "backslashreplace").strip().splitlines()
    how = _described(outcome.returncode)
    return f"{said[-1]} ({how})" if said else f"it ended with {how} and said nothing"


def choose(level: str = IsolationLevel.STRONG, project: str | os.PathLike[str] | None = None,
           **tools: str | None) -> Isolation:
    """Probe the isolation of `level` for a run (the run keeps it and gives it to every snippet run: there is no
    process-wide choice, so a pytest run inside a test process leaves nothing behind); under a strong one, HIDDEN
    and the folder `project` are hidden. Raises Unavailable (strong, and nothing strong works here)."""
    found = probe(level, **tools)
    strong = found.level == IsolationLevel.STRONG
    return dataclasses.replace(found, hidden=hidden_paths(project)) if strong else found


@dataclass(frozen=True)
class Ended:
    output: bytes  # stdout and stderr, merged
    returncode: int  # the snippet's: negative, killed by that signal; -9 when it was killed at the timeout
    timed_out: bool
    error: str | None = None  # what went wrong with the sandbox itself, after "the snippet "


def run(argv: list[str], env: dict[str, str], stdin: bytes, workdir: str, *, under: Isolation, timeout: float,
        memory: int, cpu: int, file_size: int, support: Iterable[str] = (), readable: Iterable[str] = ()) -> Ended:
    """Run `argv` confined by `under` (the run's isolation), in `workdir`, with exactly `env`, feeding
    it `stdin`; never longer than `timeout` seconds of wall time (plus GRACE to collect its last output). Output
    beyond `file_size` bytes is not kept in pytest's memory: the run is killed there, as a file that size could not
    be written."""
    readable = [*readable, sys.base_prefix, str(Path(os.path.realpath(sys.executable)).parent.parent)]  # supervisor's
    empty = ""
    if under.level == IsolationLevel.STRONG:  # the empty file bound over each hidden one: out of the sandbox's sight
        handle, empty = tempfile.mkstemp(prefix=".gotchas-hidden-", dir=workdir)
        os.close(handle)
        os.chmod(empty, 0)
    try:
        group = cgroup.Group(where, memory) if (where := cgroup.groups()) is not None else None
    except OSError as error:
        if empty:
            os.unlink(empty)
        return Ended(b"", 1, False, f"could not be given a memory cgroup of its own ({error.strerror or error})")
    try:
        outcome = _supervised(under, argv, env, stdin, workdir, timeout, (memory, cpu, file_size), support,
                              readable, empty, group)
        if group is not None and group.oom_killed():
            return dataclasses.replace(outcome, timed_out=False, error=(
                f"used more than {_size(memory)} of memory, its processes together (the limit of one run): the "
                "kernel killed one of them"))
        return outcome
    finally:
        if empty:
            os.unlink(empty)
        if group is not None:
            try:
                group.remove()
            except OSError:  # a process of the run still exiting: the empty cgroup is left, nothing runs in it
                pass


def _supervised(chosen: Isolation, argv: list[str], env: dict[str, str], stdin: bytes, workdir: str,
                timeout: float, limits: tuple[int, int, int], support: Iterable[str], readable: Iterable[str],
                empty: str, group: cgroup.Group | None) -> Ended:
    """The run itself: the supervisor started under `chosen` (inside `group`), watched until it ends or the time
    is up."""
    host = os.path.realpath(sys.executable)
    status_r, status_w = os.pipe()
    # The snippet's variables travel as data to the supervisor, which gives them to the snippet alone: the
    # launchers (setpriv, unshare, bwrap) and the supervisor start with nothing but the sandbox's plan.
    inner = [host, "-I", "-S", "-c", SUPERVISOR, str(status_w), *(str(n) for n in limits),
             marshal.dumps(dict(env)).hex(), *argv]
    command, extra = chosen.launch(inner, workdir, support, readable, empty)
    if group is not None:
        command = group.wrap(command)
    deadline = time.monotonic() + timeout
    try:
        proc = subprocess.Popen(command, cwd=workdir, env=extra, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                pass_fds=(status_w,))
    except BaseException:
        os.close(status_r)
        raise
    finally:
        os.close(status_w)
    watch = _Watch(proc, status_r, stdin, chosen, limits[2])
    try:
        return watch.until(deadline)
    finally:
        watch.close()


def _size(count: int) -> str:
    """A byte count as docs/isolation.md writes it: 1 GiB, 256 MiB."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if count >= 1 << shift and count % (1 << shift) == 0:
            return f"{count >> shift} {unit}"
    return f"{count} bytes"


class _Watch:
    """The pipes of one run: feeds stdin, collects output and the supervisor's reports, kills on demand."""

    def __init__(self, proc: subprocess.Popen, status_fd: int, stdin: bytes, chosen: Isolation, most: int) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc, self.pending, self.chosen, self.most = proc, stdin, chosen, most
        self.output, self.status = bytearray(), bytearray()
        self.selector = selectors.DefaultSelector()
        self.stdin_fd, self.out_fd, self.status_fd = proc.stdin.fileno(), proc.stdout.fileno(), status_fd
        for fd in (self.stdin_fd, self.out_fd, status_fd):
            os.set_blocking(fd, False)
        self.open = {self.out_fd, status_fd}
        self.selector.register(self.out_fd, selectors.EVENT_READ)
        self.selector.register(status_fd, selectors.EVENT_READ)
        if stdin:
            self.selector.register(self.stdin_fd, selectors.EVENT_WRITE)
        else:
            self._close_stdin()

    def reports(self) -> dict[str, int]:
        """What the supervisor said: `pid` once the snippet started, `exit` (its status) once it ended."""
        found = {}
        for line in self.status.decode("ascii", "replace").splitlines():
            word, _, value = line.partition(" ")
            if value.lstrip("-").isdigit():
                found[word] = int(value)
        return found

    def until(self, deadline: float) -> Ended:
        self._pump(lambda: self.status_fd not in self.open or self._over(), deadline)  # until the supervisor ends
        reports = self.reports()
        ended = self.status_fd not in self.open
        returncode = self._reap() if ended and "exit" not in reports else None  # the supervisor died first: how?
        self._kill(reports)  # the snippet is done, or must be: nothing it started outlives it
        self._pump(self._over, time.monotonic() + GRACE)  # what is left in the pipe
        if self._over():
            del self.output[self.most:]
            return Ended(bytes(self.output), -signal.SIGKILL, False,
                           f"printed more than {self.most} bytes, the limit of its output (the file size limit): "
                           "killed there")
        if not ended:  # the deadline came first
            return Ended(bytes(self.output), -signal.SIGKILL, True)
        if returncode is None:
            return Ended(bytes(self.output), reports["exit"], False)
        how = _described(returncode)
        if "pid" not in reports:
            tail = bytes(self.output).decode("utf-8", "backslashreplace").strip()[-300:]
            return Ended(bytes(self.output), returncode, False,
                           f"could not be started in its sandbox ({self.chosen.kind} {how}): {tail}")
        return Ended(bytes(self.output), returncode, False,
                       f"killed its sandbox: the process that supervises it ended ({how}) before the snippet did")

    def _over(self) -> bool:
        return len(self.output) > self.most

    def _pump(self, done, until: float) -> None:
        """Move data until `done()`, every pipe is closed, or the time `until`."""
        while self.open and not done():
            left = until - time.monotonic()
            if left <= 0:
                return
            for key, _ in self.selector.select(left):
                fd = key.fd
                if fd == self.stdin_fd:
                    self._feed()
                    continue
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if chunk:
                    (self.output if fd == self.out_fd else self.status).extend(chunk)
                else:
                    self.selector.unregister(fd)
                    self.open.discard(fd)

    def _feed(self) -> None:
        try:
            written = os.write(self.stdin_fd, self.pending[:65536])
        except BlockingIOError:
            return
        except OSError:  # the snippet closed its stdin or died: the rest of the input goes nowhere
            written = len(self.pending)
        self.pending = self.pending[written:]
        if not self.pending:
            self._close_stdin()

    def _close_stdin(self) -> None:
        if self.stdin_fd in self.selector.get_map():
            self.selector.unregister(self.stdin_fd)
        try:
            self.proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass

    def _kill(self, reports: dict[str, int]) -> None:
        """Kill the sandbox: its launcher's process group (a namespace dies with its PID 1), and the snippet's own
        session where there is no namespace."""
        groups = [self.proc.pid]
        if "pid" in reports and self.chosen.kind == IsolationKind.PROCESS_GROUP:
            groups.append(reports["pid"])
        for group in groups:
            try:
                os.killpg(group, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def _reap(self) -> int:
        try:
            return self.proc.wait(timeout=GRACE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            self._kill({})
            self._reap()
        self._close_stdin()
        self.selector.close()
        self.proc.stdout.close()  # type: ignore[union-attr]
        os.close(self.status_fd)


def _described(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"
