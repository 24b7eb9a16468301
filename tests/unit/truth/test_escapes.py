"""What a case names reaches only its snippet, and the limits hold for a run's whole process tree: the variables a
case sets reach no launcher (setpriv, unshare, bwrap, the supervisor), the host's kernel keyrings cannot be read from
a snippet, and the memory limit covers every process a run starts (where a cgroup can be had)."""

from __future__ import annotations

import ctypes
import os
import re
import time
from collections.abc import Iterator

import pytest
from helpers.execution import shell, strong

from pytest_gotchas.truth import memory, sandbox
from pytest_gotchas.truth.execute import Limits, run_once

from .test_sandbox import each_isolation  # noqa: F401  (a fixture)


def test_a_cases_variables_reach_the_snippets_interpreter_alone(py312, each_isolation: sandbox.Isolation  # noqa: F811
                                                                ) -> None:
    # The dynamic loader names every program it starts under LD_DEBUG=libs: only the snippet's may be among them.
    run = run_once(shell(py312, "python -c pass", "-c", "pass", env=(("LD_DEBUG", "libs"),)), "1", Limits(timeout=5),
                   each_isolation)
    started = set(re.findall(r"initialize program: (\S+)", run.text))
    assert (run.returncode, run.error) == (0, None), run.text
    assert started == {py312.path}, (each_isolation.kind, started)


# -- kernel keyrings -------------------------------------------------------------------------------------------------

_KEY_SYSCALLS = {"x86_64": (248, 250), "aarch64": (217, 219)}  # add_key, keyctl


@pytest.fixture
def host_key() -> Iterator[int]:
    """A key the host adds to its user keyring (as root: root's), removed afterwards."""
    numbers = _KEY_SYSCALLS.get(os.uname().machine)
    if numbers is None:
        pytest.skip(f"the keyring syscalls of {os.uname().machine} are not known here (nor confined)")
    libc = ctypes.CDLL(None, use_errno=True)
    serial = libc.syscall(numbers[0], b"user", b"gotchas-host-secret", b"host-secret", 11, ctypes.c_int(-4))
    if serial < 0:
        pytest.skip(f"kernel keyrings are unavailable here: add_key: {os.strerror(ctypes.get_errno())}")
    try:
        yield serial
    finally:
        libc.syscall(numbers[1], 21, serial)  # KEYCTL_INVALIDATE


READ_KEY = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(64)
n = libc.syscall(int(sys.argv[2]), 11, int(sys.argv[1]), buf, 64)  # KEYCTL_READ
print("read:", buf.raw[:n] if n >= 0 else os.strerror(ctypes.get_errno()))
try:
    print("/proc/keys:", repr(open("/proc/keys").read()))
except OSError as error:
    print("/proc/keys:", error)
"""


def test_a_key_of_the_hosts_keyring_cannot_be_read(py312, host_key: int, each_isolation: sandbox.Isolation  # noqa: F811
                                                    ) -> None:
    keyctl = str(_KEY_SYSCALLS[os.uname().machine][1])
    run = run_once(shell(py312, "python -c ...", "-c", READ_KEY, str(host_key), keyctl), "1", Limits(timeout=5),
                   each_isolation)
    lines = run.text.splitlines()
    assert lines[1] == "read: Operation not permitted", (each_isolation.kind, run.text)
    if each_isolation.level == sandbox.IsolationLevel.STRONG:  # the names of the host's keys: the hidden file
        assert lines[2] == "/proc/keys: [Errno 13] Permission denied: '/proc/keys'"


# -- memory per run ----------------------------------------------------------------------------------------------------

CHILDREN = """
import os, time
children = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        held = b"x" * (120 << 20)  # written, so resident: 360 MiB in all, under 256 MiB of address space each
        time.sleep(2)
        os._exit(0)
    children.append(pid)
print("statuses:", [os.waitpid(pid, 0)[1] for pid in children])
"""


def test_forked_children_share_one_memory_limit(py312, each_isolation: sandbox.Isolation) -> None:  # noqa: F811
    if memory.groups() is None:
        pytest.skip(memory.PER_PROCESS)
    run = run_once(shell(py312, "python -c ...", "-c", CHILDREN), "1", Limits(timeout=10, memory=256 << 20),
                   each_isolation)
    assert run.error == ("used more than 256 MiB of memory, its processes together (the limit of one run): the kernel "
                         "killed one of them"), (each_isolation.kind, run)
    where = memory.groups()
    assert where is not None
    assert [name for name in os.listdir(where.parent) if name.startswith(f"gotchas-{os.getpid()}-")] == []


def test_without_a_cgroup_the_limit_is_per_process_and_the_isolation_says_so(py312, monkeypatch) -> None:
    monkeypatch.setattr(memory, "groups", lambda: None)
    assert sandbox.probe("weak").description.endswith("; memory limited per process only (no cgroup can be made "
                                                      "here: each process of a run may use the limit)")
    run = run_once(shell(py312, "python -c ...", "-c", CHILDREN), "1", Limits(timeout=10, memory=256 << 20), strong())
    assert (run.text, run.error) == ("$ python -c ...\nstatuses: [0, 0, 0]\n", None)


def test_a_cgroup_left_by_a_killed_pytest_is_removed_by_the_next(tmp_path) -> None:
    where = memory.groups()
    if where is None:
        pytest.skip(memory.PER_PROCESS)
    with open("/proc/sys/kernel/pid_max") as f:
        dead = int(f.read()) + 1  # a PID no process can have
    stale, fresh = (os.path.join(where.parent, f"gotchas-{dead}-{n}") for n in (0, 1))
    os.mkdir(stale)
    os.mkdir(fresh)
    os.utime(stale, (time.time() - 120, time.time() - 120))
    memory._remove_stale(where)
    assert (os.path.exists(stale), os.path.exists(fresh)) == (False, True)  # a minute old: perhaps being filled
    os.rmdir(fresh)


def test_where_a_cgroup_is_made_v1_under_its_own_v2_where_memory_is_enabled_for_children(tmp_path, monkeypatch
                                                                                         ) -> None:
    for folder, controllers in (("v2/a", "cpu memory"), ("v2/a/b", "cpu"), ("other/c", "memory")):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "cgroup.subtree_control").write_text(controllers + "\n")
    (tmp_path / "v1" / "x").mkdir(parents=True)
    monkeypatch.setattr(memory, "_own", lambda: {"": "/a/b", "memory": "/x", "cpu,cpuacct": "/y"})
    monkeypatch.setattr(memory, "_mounts", lambda: [
        ("/", str(tmp_path / "v2"), "cgroup2", "rw"), ("/", str(tmp_path / "v1"), "cgroup", "rw,memory"),
        ("/elsewhere", str(tmp_path / "other"), "cgroup2", "rw"), ("/", str(tmp_path / "cpu"), "cgroup", "rw,cpu")])
    assert memory._candidates() == [memory.Groups(str(tmp_path / "v2" / "a"), 2),
                                    memory.Groups(str(tmp_path / "v1" / "x"), 1)]
