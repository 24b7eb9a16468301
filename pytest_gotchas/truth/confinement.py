"""What a strong isolation confines, as data: the paths it hides (`HIDDEN`, `hidden_paths`), the folders it makes
private, and the mount plan of one run (`plan`), which both strong isolations are built from: bubblewrap's command
line (`bubblewrap_mounts`) and the namespace confinement that supervisor.py sets up (`supervisor_plan`). Being one
plan, the two cannot drift apart. Pure: it reads which paths exist on the host, and runs nothing.
"""

from __future__ import annotations

import glob
import marshal
import os
from collections.abc import Iterable
from pathlib import Path

from ..files import seal_key_path, user_home

TMPFS_SIZE = 64 << 20  # bytes of each private tmpfs (/tmp, /var/tmp, /dev/shm, the working directory): memory
HIDDEN_TMPFS_SIZE = 1 << 20  # the empty tmpfs of a hidden folder holds only the folders bound back into it

# What a snippet has no reason to read, hidden under every strong isolation: a file becomes an empty file of mode
# 0000, a folder an empty read-only folder (mode 0000; 0111, passable but not listable, when an interpreter's own
# folder lies inside it and is bound back). `~` is the home folder of the user running pytest; `*` is a glob.
# The project under test (pytest's rootdir) is hidden too (`hidden_paths`). docs/isolation.md lists
# the same paths; tests/unit/truth/test_isolation.py keeps the two in step.
HIDDEN = (
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",  # password hashes and their backups
    "/etc/security/opasswd",  # old password hashes
    "/etc/sudoers", "/etc/sudoers.d",  # who may become root, and how
    "/etc/ssh/ssh_host_*_key",  # the machine's private ssh keys (the .pub halves stay)
    "/etc/ssl/private",  # private TLS keys
    "/etc/krb5.keytab",  # the machine's Kerberos keys
    "/run",  # the host daemons' sockets (docker, dbus ...): a read-only mount does not stop a connect()
    "/root", "/home",  # home folders: keys, tokens, shell history, caches
    # the user's keys, tokens, caches and history, wherever the home folder is
    "~/.ssh", "~/.gnupg", "~/.aws", "~/.docker", "~/.kube", "~/.netrc", "~/.pypirc", "~/.git-credentials",
    "~/.cache", "~/.config", "~/.local", "~/.bash_history", "~/.python_history",
)
PRIVATE = ("/tmp", "/var/tmp")  # private tmpfs, as are /dev/shm and the working directory
PROC_COVERED = ("sys", "sysrq-trigger", "irq", "bus")  # what in /proc could change the machine: read-only
PROC_HIDDEN = ("keys", "key-users")  # the host's kernel keys (names, owners) as root sees them: the empty file
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")  # the device nodes of the minimal /dev
# A project folder that is one of these, or holds one, is not hidden: the snippet could not run without them.
_SYSTEM = ("/", "/bin", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/opt", "/proc", "/sbin", "/sys", "/tmp", "/usr",
           "/var")


def hidden_paths(project: str | os.PathLike[str] | None = None, home: str | None = None) -> tuple[str, ...]:
    """HIDDEN with `~` and globs expanded (symlinks resolved, each once), the folder of the cache's seal key and
    the key itself wherever they are (XDG_CACHE_HOME may lie outside the home), then the project folder, unless it
    is a system folder or holds one."""
    found: list[str] = []
    try:
        home = home or user_home()
    except OSError:  # no home folder to expand `~` with: nothing of it to hide
        home = None
    for pattern in HIDDEN:
        if pattern.startswith("~/") and home is None:
            continue
        pattern = home + pattern[1:] if pattern.startswith("~/") and home else pattern
        found += sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
    try:
        key = seal_key_path()
        found += [str(key.parent), str(key)]  # the key resolved too: a link to it elsewhere hides where it leads
    except OSError:
        pass  # no cache folder: no key is made either
    if project is not None:
        where = os.path.realpath(project)
        if not any(_within(system, where) for system in _SYSTEM):
            found.append(where)
    return tuple(dict.fromkeys(os.path.realpath(path) for path in found))


def _within(path: str, folder: str) -> bool:
    """`path` is `folder` or lies inside it."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


_SHOW, _HIDE, _PRIVATE = 0, 1, 2  # at one path, the later kind wins: private over hidden over shown


def plan(workdir: str, support: Iterable[str], readable: Iterable[str], hidden: Iterable[str]
         ) -> list[tuple]:
    """The mount steps of a strong isolation, after the read-only root, /dev, /dev/shm and /proc, in order:

    ("hide-dir", path, mode) an empty tmpfs; ("hide-file", path) the empty file bound over it; ("private", path,
    mode) a writable size-limited tmpfs; ("dir", path, mode) a folder made inside one of those, on the way to a path
    bound back; ("show", path, is_folder) the host's path bound back read-only; ("link", path, target) the host's
    symlink made again (an interpreter named through a symlink in a hidden folder: the folder stays hidden, the
    link and what it leads to are there); ("seal", path) a hidden tmpfs made read-only once its folders are in.

    Parents come before children; a path inside a hidden or private folder is bound back only where it is needed
    (the interpreters' folders, the support files in the working directory), a hidden path inside one is not
    there to hide."""
    entries: dict[tuple[str, int], None] = {}
    for path in hidden:
        if os.path.lexists(path):
            entries[(os.path.normpath(path), _HIDE)] = None
    for path in (*PRIVATE, workdir):
        entries[(os.path.normpath(path), _PRIVATE)] = None
    for path in (*readable, *support):
        for step in _chain(path):
            entries[(step, _SHOW)] = None
    ordered = sorted(entries, key=lambda e: (e[0].count("/") - (e[0] == "/"), e[1], e[0]))
    done: list[tuple[str, int]] = []
    made: set[str] = set()
    steps: list[tuple] = []
    for path, kind in ordered:
        covers = [d for d in done if _within(path, d[0])]
        cover = max(covers, key=lambda d: len(d[0])) if covers else None
        if kind == _SHOW and (cover is None or cover[1] == _SHOW or (path, _HIDE) in entries):
            continue  # visible already, or hidden itself (the hidden wins where both are asked for)
        if kind == _HIDE and cover is not None and cover[1] != _SHOW:
            continue  # not there
        if cover is not None and cover[1] != _SHOW and cover[0] != path:
            mode = 0o111 if cover[1] == _HIDE else 0o755
            parts = Path(path).relative_to(cover[0]).parts
            parts = parts if kind == _PRIVATE else parts[:-1]  # a bound path's mount point is made as it is bound
            for n in range(1, len(parts) + 1):
                folder = os.path.join(cover[0], *parts[:n])
                if folder not in made:
                    made.add(folder)
                    steps.append(("dir", folder, mode))
        if kind == _HIDE:
            steps.append(("hide-dir", path, 0o000) if os.path.isdir(path) else ("hide-file", path))
        elif kind == _PRIVATE:
            steps.append(("private", path, 0o1777 if path in PRIVATE else 0o755))
        elif os.path.islink(path):
            steps.append(("link", path, os.readlink(path)))
        else:
            steps.append(("show", path, os.path.isdir(path)))
        done.append((path, kind))
    # a hidden folder with something bound back inside it must be passable: mode 0111, and sealed read-only after
    for n, entry in enumerate(steps):
        if entry[0] == "hide-dir":
            inside = any(s[0] in ("dir", "show", "link", "private") and _within(s[1], entry[1]) and s[1] != entry[1]
                         for s in steps[n + 1:])
            steps[n] = ("hide-dir", entry[1], 0o111 if inside else 0o000)
    steps += [("seal", entry[1]) for entry in steps if entry[0] == "hide-dir"]
    return steps


def _chain(path: str) -> list[str]:
    """`path` (normalized), and when it is a symlink each link on the way and where they lead; [] when it leads
    nowhere."""
    if not os.path.exists(path):
        return []
    found: list[str] = []
    path = os.path.normpath(path)
    while os.path.islink(path) and len(found) < 40:
        found.append(path)
        path = os.path.normpath(os.path.join(os.path.dirname(path), os.readlink(path)))
    return [*found, os.path.realpath(path)]


def bubblewrap_mounts(steps: list[tuple], empty: str) -> list[str]:
    """bubblewrap's arguments for the plan `steps`, after its read-only root and before --chdir; `empty` is the
    host's empty file of mode 0000 bound over each hidden file."""
    mounts = ["--proc", "/proc"]
    for name in PROC_COVERED:  # as root, bubblewrap leaves /proc/sys writable (its access() check fails)
        if os.path.exists(f"/proc/{name}"):
            mounts += ["--ro-bind", f"/proc/{name}", f"/proc/{name}"]
    for name in PROC_HIDDEN:
        if empty and os.path.exists(f"/proc/{name}"):
            mounts += ["--ro-bind", empty, f"/proc/{name}"]
    mounts += ["--dev", "/dev", "--perms", "1777", "--size", str(TMPFS_SIZE), "--tmpfs", "/dev/shm"]
    for step in steps:
        kind, path = step[0], step[1]
        if kind == "hide-dir":
            mounts += ["--perms", f"{step[2]:04o}", "--size", str(HIDDEN_TMPFS_SIZE), "--tmpfs", path]
        elif kind == "hide-file":
            mounts += ["--ro-bind", empty, path]
        elif kind == "private":
            mounts += ["--perms", f"{step[2]:04o}", "--size", str(TMPFS_SIZE), "--tmpfs", path]
        elif kind == "dir":
            mounts += ["--perms", f"{step[2]:04o}", "--dir", path]
        elif kind == "show":
            mounts += ["--ro-bind", path, path]
        elif kind == "link":
            mounts += ["--symlink", step[2], path]
        else:
            mounts += ["--remount-ro", path]
    return [*mounts, "--remount-ro", "/dev"]


def supervisor_plan(steps: list[tuple], workdir: str, empty: str) -> str:
    """The plan as supervisor.py reads it from GOTCHAS_SANDBOX: marshal in hex (its import costs nothing, unlike
    json's)."""
    return marshal.dumps({"steps": steps, "workdir": workdir, "empty": empty, "size": TMPFS_SIZE,
                          "hidden_size": HIDDEN_TMPFS_SIZE, "devices": DEVICES,
                          "proc_covered": PROC_COVERED, "proc_hidden": PROC_HIDDEN}).hex()
