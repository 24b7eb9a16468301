"""Confine one run of a snippet, and end it, with everything it started, within its wall-time limit.

A snippet is code from a file, and hostile input is possible: it may kill its parent, detach a daemon, keep its
output pipe open forever, write into the project or read a home directory. Every run is therefore

- confined by the best isolation this machine allows, probed once per process (`isolation()`):
  bubblewrap (read-only root, home directories hidden except the interpreters' own folders, a private size-limited
  /tmp, a fresh private working directory, no network, no capabilities, its own PID namespace); else a PID
  namespace made by util-linux `unshare`; else only a process group of its own, as before;
- supervised by a small program in the host interpreter (`_SUPERVISOR`) that forks the snippet into a session of
  its own with the resource limits set, waits for it and reports its exact exit status on a separate pipe. Inside
  a PID namespace the supervisor is PID 1, which no process of the namespace can kill or stop; when it exits, the
  kernel kills whatever the snippet left behind;
- read with a deadline (never `communicate()`, which waits for a pipe that a detached descendant may keep open):
  at the deadline the whole sandbox is killed and what it printed so far is kept; output beyond the file size
  limit is not kept in pytest's memory but ends the run.

A result obtained under weaker confinement is a different observation: the isolation's description is part of
the transcript cache key (execute.Request.key).
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

BUBBLEWRAP, PID_NAMESPACE, PROCESS_GROUP = "bubblewrap", "pid-namespace", "process-group"
TMPFS_SIZE = 64 << 20  # bytes of each private tmpfs (/tmp, the working directory, /dev/shm): memory, not disk
HIDDEN = ("/root", "/home")  # home directories (keys, tokens, shell history) are replaced by empty folders
GRACE = 1.0  # seconds to collect the last output once the sandbox is dead or its snippet has exited

# Runs in the host interpreter (-I -S: no environment variable, no site, no current folder can change what it
# imports). It must not die with the snippet nor be signalled by it: inside a PID namespace it is PID 1, which
# ignores every signal it has no handler for; SIGINT, the one Python handles, is ignored outright.
_SUPERVISOR = r"""import os, resource, signal, sys
status, mem, cpu, fsize, names = (int(x) for x in sys.argv[1:6])
keep, argv = sys.argv[6:6 + names], sys.argv[6 + names:]
env = {k: v for k, v in os.environ.items() if k in keep}  # bubblewrap adds PWD
pid = os.fork()
if pid == 0:
    try:
        os.close(status)
        os.setsid()
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.execve(argv[0], argv, env)
    except BaseException as error:
        os.write(2, ("cannot run %s: %s\n" % (argv[0], error)).encode())
    os._exit(127)
signal.signal(signal.SIGINT, signal.SIG_IGN)
os.write(status, b"pid %d\n" % pid)
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
_, code = os.waitpid(pid, 0)
code = -os.WTERMSIG(code) if os.WIFSIGNALED(code) else os.WEXITSTATUS(code)
os.write(status, b"exit %d\n" % code)
"""


@dataclass(frozen=True)
class Isolation:
    """How runs are confined on this machine."""

    kind: str  # BUBBLEWRAP | PID_NAMESPACE | PROCESS_GROUP
    description: str  # what it confines, for reports and the cache key
    launcher: tuple[str, ...] = ()  # the bwrap or unshare command line, without the per-run part

    def command(self, inner: list[str], workdir: str, support: Iterable[str] = (), readable: Iterable[str] = ()
                ) -> list[str]:
        """The command that runs `inner` confined, in `workdir`. Under bubblewrap the working directory is a
        private tmpfs at the same path, with the host files `support` (startup files) bound read-only into it, and
        the folders `readable` (interpreters) visible even where they lie under a hidden one."""
        if self.kind != BUBBLEWRAP:
            return [*self.launcher, *inner]
        mounts: list[str] = []
        for hidden in HIDDEN:
            if os.path.isdir(hidden):
                mounts += ["--tmpfs", hidden]
        mounts += ["--size", str(TMPFS_SIZE), "--tmpfs", "/tmp"]
        for folder in sorted(set(readable)):
            if _needs_binding(folder):
                mounts += ["--ro-bind", folder, folder]
        mounts += ["--size", str(TMPFS_SIZE), "--tmpfs", workdir]
        for path in support:
            mounts += ["--ro-bind", path, path]
        mounts += ["--proc", "/proc", "--dev", "/dev", "--size", str(TMPFS_SIZE), "--tmpfs", "/dev/shm"]
        return [*self.launcher, *mounts, "--chdir", workdir, "--", *inner]


def _needs_binding(folder: str) -> bool:
    """A folder that a hidden one or the private /tmp would cover (and that is not itself one of those)."""
    path = os.path.normpath(folder)
    covering = (*HIDDEN, "/tmp")
    return any(path.startswith(c + os.sep) for c in covering) and path not in covering


def _bubblewrap(bwrap: str) -> Isolation:
    flags = (bwrap, "--ro-bind", "/", "/", "--unshare-all", "--cap-drop", "ALL", "--die-with-parent",
             "--new-session", "--as-pid-1")
    return Isolation(BUBBLEWRAP, "bubblewrap (read-only root, home directories hidden, private /tmp and working "
                                 "directory, no network, own PID namespace)", flags)


def _pid_namespace(unshare: str, setpriv: str | None) -> Isolation:
    user = () if os.geteuid() == 0 else ("--user", "--map-root-user")
    # setpriv: unshare itself dies with pytest (--kill-child then takes the namespace down with it)
    death = (setpriv, "--pdeathsig", "KILL") if setpriv else ()
    flags = (*death, unshare, *user, "--pid", "--fork", "--kill-child", "--mount-proc")
    return Isolation(PID_NAMESPACE, "PID namespace (util-linux unshare; no bubblewrap here: the filesystem and the "
                                    "network are not confined)", flags)


def _process_group() -> Isolation:
    return Isolation(PROCESS_GROUP, "process group only (neither bubblewrap nor unshare works here: the filesystem "
                                    "and the network are not confined, and a descendant that leaves the group may "
                                    "survive the run)")


def probe(bwrap: str | None = None, unshare: str | None = None, setpriv: str | None = None) -> Isolation:
    """The strongest isolation that actually works here, tried by running `true` under it (a few milliseconds).
    The arguments name the tools; None: look them up on PATH (pass "" to pretend one is missing)."""
    true = shutil.which("true") or "/bin/true"
    bwrap = shutil.which("bwrap") if bwrap is None else bwrap
    if bwrap:
        candidate = _bubblewrap(bwrap)
        if _works(candidate.command([true], "/tmp/gotchas-probe", readable=[os.path.dirname(true)])):
            return candidate
    unshare = shutil.which("unshare") if unshare is None else unshare
    if unshare:
        candidate = _pid_namespace(unshare, shutil.which("setpriv") if setpriv is None else setpriv or None)
        if _works(candidate.command([true], "/")):
            return candidate
    return _process_group()


def _works(command: list[str]) -> bool:
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=10, cwd="/")
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


_chosen: Isolation | None = None
_lock = threading.Lock()


def isolation() -> Isolation:
    """This process's isolation, probed on first use."""
    global _chosen
    with _lock:
        if _chosen is None:
            _chosen = probe()
        return _chosen


@dataclass(frozen=True)
class Outcome:
    output: bytes  # stdout and stderr, merged
    returncode: int  # the snippet's: negative, killed by that signal; -9 when it was killed at the timeout
    timed_out: bool
    error: str | None = None  # what went wrong with the sandbox itself, after "the snippet "


def run(argv: list[str], env: dict[str, str], stdin: bytes, workdir: str, *, timeout: float, memory: int,
        cpu: int, file_size: int, support: Iterable[str] = (), readable: Iterable[str] = ()) -> Outcome:
    """Run `argv` confined, in `workdir`, with exactly `env`, feeding it `stdin`; never longer than `timeout`
    seconds of wall time (plus GRACE to collect its last output). Output beyond `file_size` bytes is not kept in
    pytest's memory: the run is killed there, as a file that size could not be written."""
    chosen = isolation()
    host = os.path.realpath(sys.executable)
    status_r, status_w = os.pipe()
    inner = [host, "-I", "-S", "-c", _SUPERVISOR, str(status_w), str(memory), str(cpu), str(file_size), str(len(env)),
             *env, *argv]
    command = chosen.command(inner, workdir, support, [*readable, sys.base_prefix, str(Path(host).parent.parent)])
    deadline = time.monotonic() + timeout
    try:
        proc = subprocess.Popen(command, cwd=workdir, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True, pass_fds=(status_w,))
    except BaseException:
        os.close(status_r)
        raise
    finally:
        os.close(status_w)
    watch = _Watch(proc, status_r, stdin, chosen, file_size)
    try:
        return watch.until(deadline)
    finally:
        watch.close()


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

    def until(self, deadline: float) -> Outcome:
        self._pump(lambda: self.status_fd not in self.open or self._over(), deadline)  # until the supervisor ends
        reports = self.reports()
        ended = self.status_fd not in self.open
        returncode = self._reap() if ended and "exit" not in reports else None  # the supervisor died first: how?
        self._kill(reports)  # the snippet is done, or must be: nothing it started outlives it
        self._pump(self._over, time.monotonic() + GRACE)  # what is left in the pipe
        if self._over():
            del self.output[self.most:]
            return Outcome(bytes(self.output), -signal.SIGKILL, False,
                           f"printed more than {self.most} bytes, the limit of its output (the file size limit): "
                           "killed there")
        if not ended:  # the deadline came first
            return Outcome(bytes(self.output), -signal.SIGKILL, True)
        if returncode is None:
            return Outcome(bytes(self.output), reports["exit"], False)
        how = _described(returncode)
        if "pid" not in reports:
            tail = bytes(self.output).decode("utf-8", "backslashreplace").strip()[-300:]
            return Outcome(bytes(self.output), returncode, False,
                           f"could not be started in its sandbox ({self.chosen.kind} {how}): {tail}")
        return Outcome(bytes(self.output), returncode, False,
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
        if "pid" in reports and self.chosen.kind == PROCESS_GROUP:
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
