"""A memory limit for a run's whole process tree: a cgroup of its own for each run, where one can be had.

RLIMIT_AS (set by supervisor.py) bounds each process's address space: three forked children may each use all of it.
A cgroup bounds what the run's processes use together (resident memory, swap included where the kernel accounts it,
tmpfs pages written by the run too): the run is started inside it (`wrap`), so that every process it forks is in it,
and the kernel kills a process of the run when the run as a whole goes past the limit (`Group.oom_killed` tells).

Where one is made: cgroup v1, a child of this process's memory cgroup; cgroup v2, a child of this process's cgroup or
of its parent, wherever the memory controller is already enabled for children (this module never enables a
controller: that would change the machine). Making one needs write access there: root, or a delegated subtree.
Elsewhere (`groups()` is None) the limit is per process only, and the isolation's description says so.
"""

from __future__ import annotations

import functools
import itertools
import os
import time
from dataclasses import dataclass

PER_RUN = "memory limited per run, all its processes together (a cgroup)"
PER_PROCESS = "memory limited per process only (no cgroup can be made here: each process of a run may use the limit)"
_SH = "/bin/sh"
_counter = itertools.count()


@dataclass(frozen=True)
class Groups:
    """Where the runs' cgroups are made: a folder of a cgroup filesystem this process may make folders in."""

    parent: str
    version: int  # 1 or 2


def _mounts() -> list[tuple[str, str, str, str]]:
    """(root inside the hierarchy, mount point, filesystem type, super options) of each cgroup mount."""
    found = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
            for line in f:
                fields = line.split()
                if " - " not in line:
                    continue
                tail = line.split(" - ", 1)[1].split()
                if tail and tail[0] in ("cgroup", "cgroup2"):
                    found.append((fields[3], fields[4].replace("\\040", " "), tail[0], tail[-1]))
    except OSError:
        return []
    return found


def _own() -> dict[str, str]:
    """This process's cgroup per hierarchy: controller list ('' for v2) -> path."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as f:
            return {parts[1]: parts[2] for parts in (line.rstrip("\n").split(":", 2) for line in f) if len(parts) == 3}
    except OSError:
        return {}


def _under(root: str, mount: str, path: str) -> str | None:
    """The folder of cgroup `path` in a mount of the hierarchy at `root`; None when the mount does not show it."""
    if root != "/" and path != root and not path.startswith(root + "/"):
        return None
    rest = path[len(root):] if root != "/" else path
    return os.path.join(mount, rest.lstrip("/"))


def _candidates() -> list[Groups]:
    own = _own()
    found: list[Groups] = []
    for root, mount, kind, options in _mounts():
        if kind == "cgroup2" and "" in own:
            folder = _under(root, mount, own[""])
            if folder is not None:
                found += [Groups(f, 2) for f in dict.fromkeys((folder, os.path.dirname(folder)))
                          if f.startswith(mount) and _enabled(f)]
        elif kind == "cgroup" and "memory" in options.split(","):
            path = next((p for names, p in own.items() if "memory" in names.split(",")), None)
            folder = _under(root, mount, path) if path is not None else None
            if folder is not None:
                found.append(Groups(folder, 1))
    return found


def _enabled(folder: str) -> bool:
    try:
        with open(os.path.join(folder, "cgroup.subtree_control"), encoding="ascii") as f:
            return "memory" in f.read().split()
    except OSError:
        return False


@functools.cache
def groups() -> Groups | None:
    """Where this process can make a memory cgroup for each run (tried once, by making one), or None."""
    for candidate in _candidates():
        try:
            Group(candidate, 1 << 30).remove()
        except OSError:
            continue
        _remove_stale(candidate)
        return candidate
    return None


def _remove_stale(where: Groups) -> None:
    """The cgroups a killed pytest left (SIGKILL runs no cleanup): a gotchas-PID-N whose process is gone, made over
    a minute ago (not one that another PID namespace's pytest is filling right now). rmdir removes only an empty
    cgroup, so nothing running is touched."""
    try:
        names = os.listdir(where.parent)
    except OSError:
        return
    for name in names:
        parts = name.split("-")
        if len(parts) != 3 or parts[0] != "gotchas" or not parts[1].isdigit() or _alive(int(parts[1])):
            continue
        path = os.path.join(where.parent, name)
        try:
            if time.time() - os.stat(path).st_mtime > 60:
                os.rmdir(path)
        except OSError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        pass
    return True


def described() -> str:
    """What the memory limit covers here, for the isolation's description."""
    return PER_RUN if groups() is not None else PER_PROCESS


class Group:
    """One run's cgroup, limited to `limit` bytes (swap included where the kernel counts it)."""

    def __init__(self, where: Groups, limit: int) -> None:
        self.where = where
        self.path = os.path.join(where.parent, f"gotchas-{os.getpid()}-{next(_counter)}")
        os.mkdir(self.path, 0o755)
        try:
            if where.version == 1:
                self._write("memory.limit_in_bytes", limit)
                self._write("memory.memsw.limit_in_bytes", limit, optional=True)  # no swap beyond the limit
            else:
                self._write("memory.max", limit)
                self._write("memory.swap.max", 0, optional=True)
                self._write("memory.oom.group", 1, optional=True)  # past the limit, the whole run is killed
        except OSError:
            os.rmdir(self.path)
            raise

    def _write(self, name: str, value: int, optional: bool = False) -> None:
        """Write a control file; an `optional` one the kernel lacks (no swap accounting ...) is skipped (asking
        cgroupfs for a file it lacks is EACCES, not ENOENT)."""
        path = os.path.join(self.path, name)
        if optional and not os.path.exists(path):
            return
        with open(path, "w", encoding="ascii") as f:
            f.write(str(value))

    def wrap(self, command: list[str]) -> list[str]:
        """`command`, started inside this cgroup: a shell puts itself in, then becomes the command (exec), so that
        the launcher and everything it starts are in it before anything runs."""
        return [_SH, "-c", 'echo $$ > "$0" && exec "$@"', os.path.join(self.path, "cgroup.procs"), *command]

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the run for going past the limit."""
        name = "memory.oom_control" if self.where.version == 1 else "memory.events"
        try:
            with open(os.path.join(self.path, name), encoding="ascii") as f:
                counts = dict(line.split() for line in f if len(line.split()) == 2)
        except OSError:
            return False
        return int(counts.get("oom_kill", "0")) > 0

    def remove(self, within: float = 2.0) -> None:
        """Remove the cgroup once the run's processes are gone (a PID namespace's die just after its PID 1)."""
        deadline = time.monotonic() + within
        while True:
            try:
                os.rmdir(self.path)
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                if self.where.version == 2:
                    self._write("cgroup.kill", 1, optional=True)
                time.sleep(0.01)
