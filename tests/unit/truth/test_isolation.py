"""The isolation decision and what a strong isolation confines, by direct sandbox calls.

The decision: strong is bubblewrap where bwrap is on PATH and works, else the namespace confinement; with neither,
one message says what was tried, why it failed and how to get it; weak is asked for, never fallen into. Absence is
simulated on PATH (a folder holding only the tools a test wants) or with fake tools that fail as a locked-down
machine's do.

The confinement, under each strong isolation that works here (bubblewrap, namespaces): writes to /tmp, /var/tmp and
/dev/shm stay in the sandbox; /root, ~/.ssh, /etc/shadow, every HIDDEN path and the project are unreadable, with a
clear error and nothing of their content; a listener on the host's loopback cannot be reached; the interpreters'
own folders still run, even inside the hidden project.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers import REPO

from pytest_gotchas import files
from pytest_gotchas.truth import confinement, memory, sandbox

PY = os.path.realpath(sys.executable)  # the snippets' interpreter: the host's own, from its folder
STRONG_KINDS = (sandbox.IsolationKind.BUBBLEWRAP, sandbox.IsolationKind.NAMESPACES)
WHAT = ("read-only root; credentials, home folders and the project hidden; private /tmp, /var/tmp, /dev/shm and "
        "working directory; loopback only; no capabilities, no kernel keyrings")
# What the memory limit covers here (truth/memory.py): per run where a cgroup can be made, else per process.
MEMORY = ("memory limited per run, all its processes together (a cgroup)" if memory.groups() is not None else
          "memory limited per process only (no cgroup can be made here: each process of a run may use the limit)")
HOW = ("To confine them: install bubblewrap (Debian, Ubuntu: apt-get install bubblewrap), or allow unprivileged user "
       "namespaces (sysctl user.max_user_namespaces=15000; Debian: kernel.unprivileged_userns_clone=1; Ubuntu: "
       "kernel.apparmor_restrict_unprivileged_userns=0), or run as root.\n"
       "To run them unconfined (a PID namespace only: they can write to /tmp, read the host's files and reach its "
       "network), pass --gotchas-isolation=weak (ini: gotchas_isolation = weak; gotchas new and vary: --isolation "
       "weak).")
FIRST = "snippets cannot be confined on this machine, and strong isolation is asked for (the default), so none is " \
        "executed."


@functools.cache
def strong(kind: str) -> sandbox.Isolation | str:
    """The strong isolation `kind` as it works here, or why it does not."""
    if kind == sandbox.IsolationKind.BUBBLEWRAP and not shutil.which("bwrap"):
        return "bwrap is not on PATH (Debian, Ubuntu: apt-get install bubblewrap)"
    try:
        found = sandbox.probe(bwrap=None if kind == sandbox.IsolationKind.BUBBLEWRAP else "")
    except sandbox.Unavailable as error:
        return str(error)
    return found if found.kind == kind else f"bubblewrap does not work here (the probe chose {found.kind})"


@pytest.fixture(params=STRONG_KINDS)
def under(request: pytest.FixtureRequest) -> sandbox.Isolation:
    """Each strong isolation, hiding HIDDEN (no project)."""
    found = strong(request.param)
    if isinstance(found, str):
        pytest.skip(found)
    return dataclasses.replace(found, hidden=sandbox.hidden_paths())


def run_code(under: sandbox.Isolation, code: str, *args: str, python: str = PY, readable: tuple[str, ...] = ()
             ) -> str:
    """What `code` prints under `under`, run by `python` in a fresh working directory."""
    with tempfile.TemporaryDirectory(prefix="gotchas-") as tmp:
        outcome = sandbox.run([python, "-I", "-c", textwrap.dedent(code), *args],
                              {"PATH": "/usr/bin:/bin", "HOME": tmp, "LANG": "C.UTF-8"}, b"", tmp, timeout=20,
                              memory=1 << 30, cpu=20, file_size=1 << 20, readable=[sys.base_prefix, *readable],
                              under=under)
    text = outcome.output.decode("utf-8", "backslashreplace")
    assert (outcome.returncode, outcome.timed_out, outcome.error) == (0, False, None), text
    return text


def tools_on_path(folder: Path, **tools: str) -> str:
    """A PATH of one folder holding `tools` (name -> a real tool's path, or a script's text): every other tool,
    bwrap included, is absent from it."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, what in tools.items():
        if what.startswith("#!"):
            folder.joinpath(name).write_text(what)
            folder.joinpath(name).chmod(0o755)
        else:
            folder.joinpath(name).symlink_to(what)
    return str(folder)


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A folder that no private tmpfs covers (the checkout's .pytest_cache): only hiding can keep a snippet out of
    it."""
    if any(REPO.is_relative_to(p) for p in ("/tmp", "/var/tmp", "/dev/shm", "/root", "/home")):
        pytest.skip(f"the checkout {REPO} lies in a folder that is private or hidden anyway")
    folder = REPO / ".pytest_cache" / f"gotchas-isolation-{uuid.uuid4().hex[:12]}"
    folder.mkdir(parents=True)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# -- the decision: which isolation is chosen ----------------------------------------------------------------------


def test_strong_is_bubblewrap_where_bwrap_is_on_path_and_works() -> None:
    found = strong(sandbox.IsolationKind.BUBBLEWRAP)
    if isinstance(found, str):
        pytest.skip(found)
    assert (found.kind, found.level) == (sandbox.IsolationKind.BUBBLEWRAP, sandbox.IsolationLevel.STRONG)
    assert found.description == f"strong isolation: bubblewrap (own PID namespace; {WHAT}); {MEMORY}"


def test_strong_without_bwrap_on_path_is_the_namespace_confinement(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                    ) -> None:
    unshare, setpriv = shutil.which("unshare"), shutil.which("setpriv")
    if not unshare:
        pytest.skip("util-linux unshare is not installed")
    monkeypatch.setenv("PATH", tools_on_path(tmp_path / "bin", unshare=unshare, **({"setpriv": setpriv} if setpriv
                                                                                     else {})))
    assert sandbox.which("bwrap") is None
    try:
        found = sandbox.probe()
    except sandbox.Unavailable as error:
        pytest.skip(f"no namespaces here: {error}")
    assert (found.kind, found.level) == (sandbox.IsolationKind.NAMESPACES, sandbox.IsolationLevel.STRONG)
    spaces = "mount, network, PID, IPC, UTS and cgroup namespaces" + ("" if os.geteuid() == 0 else
                                                                      ", in a user namespace")
    assert found.description == f"strong isolation: namespaces by util-linux unshare ({spaces}; {WHAT}); {MEMORY}"
    assert found.launcher[0] == str(tmp_path / "bin" / ("setpriv" if setpriv else "unshare"))


def test_not_root_the_namespaces_add_a_user_namespace() -> None:
    """As an unprivileged user (nobody, through setpriv): the namespace confinement needs a user namespace, which
    this kernel must allow; the snippet is root of it, without capabilities."""
    setpriv, python = shutil.which("setpriv"), "/usr/bin/python3"
    if os.geteuid() != 0 or not setpriv or not os.path.exists(python):
        pytest.skip("needs root (to become nobody), setpriv and a system /usr/bin/python3 that nobody can run")
    nobody = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    source = REPO / "pytest_gotchas" / "__init__.py"
    if subprocess.run([*nobody, "/usr/bin/test", "-r", str(source)], cwd="/").returncode != 0:
        pytest.skip(f"nobody cannot read this checkout ({REPO}): a folder above it is private to its owner")
    code = textwrap.dedent("""
        import dataclasses, sys, tempfile
        from pytest_gotchas.truth import sandbox
        try:
            found = sandbox.probe(bwrap="")
        except sandbox.Unavailable as error:
            raise SystemExit("unavailable: " + str(error).splitlines()[2])
        print(found.description)
        found = dataclasses.replace(found, hidden=sandbox.hidden_paths())
        snippet = ("import os; print(os.getuid(), [l.split()[1] for l in open('/proc/self/status') if "
                   "l.startswith('CapEff')])\\ntry: open('/etc/shadow')\\nexcept OSError as e: print(e)")
        with tempfile.TemporaryDirectory() as tmp:
            out = sandbox.run([sys.executable, "-I", "-c", snippet], {}, b"", tmp, timeout=20,
                              memory=1 << 30, cpu=20, file_size=1 << 20, under=found)
        print(out.output.decode(), end="")
        """)
    done = subprocess.run([*nobody, python, "-c", code],
                          capture_output=True, text=True, timeout=60, cwd="/",
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    if done.stderr.startswith("unavailable: "):
        pytest.skip(done.stderr.strip())
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "strong isolation: namespaces by util-linux unshare (mount, network, PID, IPC, UTS and cgroup namespaces, in "
        f"a user namespace; {WHAT}); memory limited per process only (no cgroup can be made here: each process of a "
        "run may use the limit)", "0 ['0000000000000000']", "[Errno 13] Permission denied: '/etc/shadow'"]


def test_with_nothing_strong_on_path_one_message_says_what_was_tried_and_how_to_get_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", tools_on_path(tmp_path / "bin"))
    with pytest.raises(sandbox.Unavailable) as error:
        sandbox.probe()
    assert str(error.value) == (f"{FIRST}\n"
                                "  tried bubblewrap: bwrap is not on PATH\n"
                                "  tried namespaces (util-linux unshare): unshare is not on PATH\n"
                                f"{HOW}")


def test_tools_that_are_refused_say_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine where bubblewrap and unshare are installed but the kernel refuses their namespaces (unprivileged
    user namespaces disabled, a container without CAP_SYS_ADMIN), as their own messages say."""
    bwrap_says = ("bwrap: No permissions to creating new namespace, likely because the kernel does not allow "
                  "non-privileged user namespaces. On e.g. debian this can be enabled with 'sysctl "
                  "kernel.unprivileged_userns_clone=1'.")
    monkeypatch.setenv("PATH", tools_on_path(
        tmp_path / "bin", bwrap=f"#!/bin/sh\necho \"{bwrap_says}\" >&2\nexit 1\n",
        unshare="#!/bin/sh\necho 'unshare: unshare failed: Operation not permitted' >&2\nexit 1\n"))
    with pytest.raises(sandbox.Unavailable) as error:
        sandbox.probe()
    assert str(error.value) == (f"{FIRST}\n"
                                f"  tried bubblewrap: {bwrap_says} (exit status 1)\n"
                                "  tried namespaces (util-linux unshare): unshare: unshare failed: Operation not "
                                "permitted (exit status 1)\n"
                                f"{HOW}")
    assert [name for name, _ in error.value.tried] == ["bubblewrap", "namespaces (util-linux unshare)"]


def test_a_tool_that_fails_silently_is_named_with_its_status(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", tools_on_path(tmp_path / "bin", bwrap="#!/bin/sh\nexit 3\n",
                                             unshare="#!/bin/sh\nkill -9 $$\n"))
    with pytest.raises(sandbox.Unavailable) as error:
        sandbox.probe()
    assert error.value.tried == (("bubblewrap", "it ended with exit status 3 and said nothing"),
                                 ("namespaces (util-linux unshare)", "it ended with killed by SIGKILL and said "
                                                                     "nothing"))


def test_weak_is_asked_for_never_fallen_into(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    weak = sandbox.probe(sandbox.IsolationLevel.WEAK)  # on a machine where strong works too
    assert weak.level == sandbox.IsolationLevel.WEAK
    if shutil.which("unshare") and os.geteuid() == 0:
        assert weak.kind == sandbox.IsolationKind.PID_NAMESPACE
        assert weak.description == ("weak isolation (--gotchas-isolation=weak): a PID namespace only (util-linux "
                                    "unshare); the filesystem, the network and the host's secrets are not confined; "
                                    f"{MEMORY}")
    monkeypatch.setenv("PATH", tools_on_path(tmp_path / "bin"))
    weakest = sandbox.probe(sandbox.IsolationLevel.WEAK)
    assert (weakest.kind, weakest.level) == (sandbox.IsolationKind.PROCESS_GROUP, sandbox.IsolationLevel.WEAK)
    assert weakest.description == ("weak isolation (--gotchas-isolation=weak): a process group only (unshare does "
                                   "not work here); the filesystem, the network and the host's secrets are not "
                                   "confined, and a descendant that leaves the group may survive the run; "
                                   f"{MEMORY}")
    with pytest.raises(sandbox.Unavailable):  # the same machine, strong: refused, not weakened
        sandbox.probe(sandbox.IsolationLevel.STRONG)
    with pytest.raises(ValueError, match=r"^isolation level must be one of strong, weak, got 'medium'$"):
        sandbox.probe("medium")


def test_by_default_the_isolation_is_strong_or_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", tools_on_path(tmp_path / "bin"))
    with pytest.raises(sandbox.Unavailable, match="^snippets cannot be confined on this machine"):
        sandbox.choose()


def test_choose_hides_the_project_and_returns_the_isolation_to_the_run(outside_tmp: Path) -> None:
    found = strong(sandbox.IsolationKind.BUBBLEWRAP)
    if isinstance(found, str):
        found = strong(sandbox.IsolationKind.NAMESPACES)
    if isinstance(found, str):
        pytest.skip(found)
    chosen = sandbox.choose(sandbox.IsolationLevel.STRONG, project=outside_tmp)
    assert chosen.level == sandbox.IsolationLevel.STRONG
    assert chosen.hidden == (*sandbox.hidden_paths(), str(outside_tmp))
    weak = sandbox.choose(sandbox.IsolationLevel.WEAK, project=outside_tmp)
    assert weak.level == sandbox.IsolationLevel.WEAK and weak.hidden == ()  # weak hides nothing: it cannot


# -- the list of what is hidden -----------------------------------------------------------------------------------


def test_hidden_paths_expand_the_home_the_globs_and_the_project(tmp_path: Path) -> None:
    home = tmp_path / "home"
    paths = sandbox.hidden_paths(project=tmp_path / "proj", home=str(home))
    assert [p for p in paths if p.startswith(str(tmp_path))] == [
        *(str(home / name) for name in (".ssh", ".gnupg", ".aws", ".docker", ".kube", ".netrc", ".pypirc",
                                        ".git-credentials", ".cache", ".config", ".local", ".bash_history",
                                        ".python_history")),
        str(tmp_path / "proj")]
    fixed = [p for p in sandbox.HIDDEN if not p.startswith("~") and "*" not in p]
    assert [p for p in paths if not p.startswith(str(tmp_path))][:len(fixed)] == [os.path.realpath(p) for p in fixed]
    keys = sorted(Path("/etc/ssh").glob("ssh_host_*_key"))
    assert [p for p in paths if p.startswith("/etc/ssh/")] == [str(k) for k in keys]


@pytest.mark.parametrize("project", ["/", "/usr", "/var", "/tmp"])
def test_a_system_folder_is_never_hidden_as_the_project(project: str) -> None:
    assert sandbox.hidden_paths(project=project) == sandbox.hidden_paths()


def test_the_isolation_page_lists_what_is_hidden() -> None:
    page = (REPO / "docs" / "isolation.md").read_text(encoding="utf-8")
    section = page.split("# What a snippet can do\n", 1)[1].split("\n## ", 1)[0]
    bullet = next(b for b in section.split("\n- ") if b.startswith("**Hidden**"))
    text = " ".join(bullet.split())
    assert text.startswith("**Hidden** under strong isolation (`HIDDEN` in `pytest_gotchas/truth/confinement.py`): ")
    listing = text.split("): ", 1)[1].split(", and the project under test (pytest's rootdir:", 1)
    assert len(listing) == 2, "the bullet names the project after the list"
    assert re.findall(r"`([^`]+)`", listing[0]) == list(confinement.HIDDEN)


# -- the plan both strong isolations are built from (pure) ---------------------------------------------------------


def test_the_plan_hides_binds_back_and_seals_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(confinement, "PRIVATE", ())  # the tree lies in /tmp, which the plan would otherwise cover
    t = tmp_path
    for folder in ("root/.ssh", "root/.pyenv/versions/3.12.1", "proj/.venv", "etc", "work", "usr"):
        (t / folder).mkdir(parents=True)
    for file in ("etc/shadow", "work/start.py", "proj/.env"):
        (t / file).write_text("x")
    steps = sandbox.plan(str(t / "work"), [str(t / "work/start.py")],
                         [str(t / "root/.pyenv/versions/3.12.1"), str(t / "proj/.venv"), str(t / "usr")],
                         [str(t / p) for p in ("root", "root/.ssh", "etc/shadow", "proj", "etc/gshadow")])
    assert steps == [
        ("hide-dir", f"{t}/proj", 0o111), ("hide-dir", f"{t}/root", 0o111), ("private", f"{t}/work", 0o755),
        ("show", f"{t}/proj/.venv", True), ("show", f"{t}/work/start.py", False), ("hide-file", f"{t}/etc/shadow"),
        ("dir", f"{t}/root/.pyenv", 0o111), ("dir", f"{t}/root/.pyenv/versions", 0o111),
        ("show", f"{t}/root/.pyenv/versions/3.12.1", True),
        ("seal", f"{t}/proj"), ("seal", f"{t}/root")]  # root/.ssh is gone with root; usr was visible anyway


def test_in_the_plan_a_hidden_path_wins_over_a_folder_bound_back_at_the_same_place(tmp_path: Path,
                                                                                   monkeypatch: pytest.MonkeyPatch
                                                                                   ) -> None:
    monkeypatch.setattr(confinement, "PRIVATE", ())
    (tmp_path / "root").mkdir()
    steps = sandbox.plan(str(tmp_path / "w"), [], [str(tmp_path / "root")], [str(tmp_path / "root")])
    assert steps == [("hide-dir", f"{tmp_path}/root", 0o000), ("private", f"{tmp_path}/w", 0o755),
                     ("seal", f"{tmp_path}/root")]


def test_in_the_plan_a_symlink_to_an_interpreter_is_made_again_inside_a_hidden_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(confinement, "PRIVATE", ())
    (tmp_path / "proj" / "bin").mkdir(parents=True)
    (tmp_path / "proj" / "bin" / "python").symlink_to("python3")
    (tmp_path / "proj" / "bin" / "python3").symlink_to(PY)
    python = str(tmp_path / "proj" / "bin" / "python")
    steps = sandbox.plan(str(tmp_path / "w"), [], [python, str(tmp_path / "proj")], [str(tmp_path / "proj")])
    assert steps == [("hide-dir", f"{tmp_path}/proj", 0o111), ("private", f"{tmp_path}/w", 0o755),
                     ("dir", f"{tmp_path}/proj/bin", 0o111), ("link", python, "python3"),
                     ("link", f"{python}3", PY), ("seal", f"{tmp_path}/proj")]  # PY's own folder is visible


def test_in_the_plan_the_working_directory_is_made_inside_the_private_tmp() -> None:
    steps = sandbox.plan("/tmp/gotchas-x/work", [], [], [])
    assert steps == [("private", "/tmp", 0o1777), ("private", "/var/tmp", 0o1777),
                     ("dir", "/tmp/gotchas-x", 0o755), ("dir", "/tmp/gotchas-x/work", 0o755),
                     ("private", "/tmp/gotchas-x/work", 0o755)]


# -- what a strong isolation confines (each kind) -----------------------------------------------------------------


def test_writes_to_tmp_var_tmp_and_dev_shm_leave_nothing_on_the_host(under: sandbox.Isolation) -> None:
    mark = uuid.uuid4().hex[:12]
    targets = [f"{folder}/gotchas-escape-{mark}" for folder in ("/tmp", "/var/tmp", "/dev/shm")]
    try:
        text = run_code(under, """
            import sys
            for path in sys.argv[1:]:
                with open(path, "w") as f:
                    print("wrote", f.write("escaped"), "bytes to", path)
            """, *targets)
        assert text == "".join(f"wrote 7 bytes to {path}\n" for path in targets)  # inside, the writes worked
        assert [path for path in targets if os.path.exists(path)] == []  # and the host has none of them
    finally:
        for path in targets:
            Path(path).unlink(missing_ok=True)


def test_the_root_filesystem_and_the_hidden_folders_are_read_only(under: sandbox.Isolation) -> None:
    text = run_code(under, """
        for path in ("/usr/gotchas-escape", "/etc/gotchas-escape", "/root/gotchas-escape", "/dev/gotchas-escape"):
            try:
                open(path, "w")
            except OSError as error:
                print(error)
        """)
    assert text.splitlines() == [f"[Errno 30] Read-only file system: '/{folder}/gotchas-escape'"
                                 for folder in ("usr", "etc", "root", "dev")]
    assert not any(os.path.exists(f"/{folder}/gotchas-escape") for folder in ("usr", "etc", "root", "dev"))


def test_listing_root_and_ssh_shows_nothing_of_the_hosts(under: sandbox.Isolation, outside_tmp: Path) -> None:
    home = outside_tmp / "home"  # a home outside /root and /home: its ~/.ssh is hidden by name
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY of the host\n")
    under = dataclasses.replace(under, hidden=sandbox.hidden_paths(home=str(home)))
    text = run_code(under, """
        import os, sys
        for path in sys.argv[1:]:
            try:
                print(os.listdir(path) if os.path.isdir(path) else open(path).read())
            except OSError as error:
                print(error)
        """, "/root", "/root/.ssh", str(home / ".ssh"), str(home / ".ssh" / "id_ed25519"))
    assert text.splitlines() == [
        "[Errno 13] Permission denied: '/root'",  # passable (the interpreters' folders lie inside), not listable
        "[Errno 2] No such file or directory: '/root/.ssh'",  # gone with /root
        f"[Errno 13] Permission denied: '{home}/.ssh'",
        f"[Errno 13] Permission denied: '{home}/.ssh/id_ed25519'"]


def test_etc_shadow_cannot_be_read(under: sandbox.Isolation) -> None:
    if not os.path.exists("/etc/shadow"):
        pytest.skip("this machine has no /etc/shadow")
    text = run_code(under, """
        import os
        print(os.stat("/etc/shadow").st_size, oct(os.stat("/etc/shadow").st_mode & 0o777))
        try:
            open("/etc/shadow").read()
        except OSError as error:
            print(type(error).__name__, error)
        """)
    assert text == "0 0o0\nPermissionError [Errno 13] Permission denied: '/etc/shadow'\n"


def test_every_hidden_path_is_an_error_and_nothing_of_its_content(under: sandbox.Isolation, outside_tmp: Path
                                                                  ) -> None:
    home, project = outside_tmp / "home", outside_tmp / "project"
    for path in (home / ".ssh", home / ".cache", project):
        path.mkdir(parents=True)
    secrets = {home / ".netrc": "machine pypi login me password hunter2\n", project / ".env": "TOKEN=hunter3\n",
               home / ".ssh" / "id_rsa": "PRIVATE KEY\n"}
    for path, text in secrets.items():
        path.write_text(text)
    hidden = sandbox.hidden_paths(project=project, home=str(home))
    under = dataclasses.replace(under, hidden=hidden)
    present = [p for p in hidden if os.path.lexists(p)]
    assert str(project) in present and str(home / ".netrc") in present
    text = run_code(under, """
        import os, sys
        for path in sys.argv[1:]:
            try:
                print(os.listdir(path) if os.path.isdir(path) else open(path).read().strip())
            except OSError as error:
                print(type(error).__name__, error)
        """, *present, *map(str, secrets))

    def expected(path: str) -> str:
        inside = any(path != other and path.startswith(other + "/") for other in hidden if os.path.lexists(other))
        return (f"FileNotFoundError [Errno 2] No such file or directory: {path!r}" if inside else
                f"PermissionError [Errno 13] Permission denied: {path!r}")

    assert text.splitlines() == [expected(p) for p in present] + [
        f"PermissionError [Errno 13] Permission denied: {str(home / '.netrc')!r}",
        f"PermissionError [Errno 13] Permission denied: {str(project / '.env')!r}",  # not even passable
        f"PermissionError [Errno 13] Permission denied: {str(home / '.ssh' / 'id_rsa')!r}"]
    for path in present:  # not one line of any hidden file reached the output
        if os.path.isfile(path) and os.access(path, os.R_OK):
            assert not {line for line in Path(path).read_text(errors="replace").splitlines() if line.strip()} & \
                set(text.splitlines())
    assert "hunter" not in text and "PRIVATE KEY" not in text


@pytest.mark.parametrize("layout", ["xdg-outside-home", "home-cache", "key-linked-elsewhere"])
def test_the_seal_key_is_hidden_wherever_it_is(under: sandbox.Isolation, outside_tmp: Path,
                                              monkeypatch: pytest.MonkeyPatch, layout: str) -> None:
    """XDG_CACHE_HOME outside ~/.cache put the key where nothing was hidden: a snippet printed it, and with it anyone
    could seal a forged transcript. Its folder, and the file a linked key leads to, are hidden wherever they are."""
    home, elsewhere = outside_tmp / "home", outside_tmp / "elsewhere"
    monkeypatch.setenv("HOME", str(home))
    if layout == "home-cache":
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", str(outside_tmp / "xdg"))
    key = files.seal_key_path()
    if layout == "key-linked-elsewhere":
        elsewhere.mkdir()
        (elsewhere / "real.key").write_bytes(os.urandom(files.SEAL_KEY_BYTES))
        (elsewhere / "real.key").chmod(0o600)
        key.parent.mkdir(parents=True)
        key.symlink_to(elsewhere / "real.key")
    secret = files.seal_key()
    assert key.parent != home / ".cache" / "pytest-gotchas" or layout == "home-cache"
    under = dataclasses.replace(under, hidden=sandbox.hidden_paths())
    targets = [str(key), str(elsewhere / "real.key")] if layout == "key-linked-elsewhere" else [str(key)]
    text = run_code(under, """
        import sys
        for path in sys.argv[1:]:
            try:
                print(open(path, "rb").read().hex())
            except OSError as error:
                print(type(error).__name__, error)
        """, *targets)
    assert secret.hex() not in text
    assert text.splitlines() == [f"PermissionError [Errno 13] Permission denied: {path!r}" for path in targets]


def test_the_project_is_hidden_but_its_own_venv_runs(under: sandbox.Isolation, outside_tmp: Path) -> None:
    project = outside_tmp / "project"
    (project / ".venv" / "bin").mkdir(parents=True)
    (project / ".venv" / "bin" / "python").symlink_to(PY)
    (project / ".env").write_text("TOKEN=hunter2\n")
    under = dataclasses.replace(under, hidden=sandbox.hidden_paths(project=project))
    python = str(project / ".venv" / "bin" / "python")
    text = run_code(under, """
        import os, sys
        print(sys.executable)
        for path in (os.path.dirname(os.path.dirname(os.path.dirname(sys.executable))), sys.argv[1]):
            try:
                print(os.listdir(path) if os.path.isdir(path) else open(path).read())
            except OSError as error:
                print(error)
        """, str(project / ".env"), python=python, readable=(str(project / ".venv"),))
    assert text.splitlines() == [python, f"[Errno 13] Permission denied: '{project}'",
                                 f"[Errno 2] No such file or directory: '{project}/.env'"]


def test_an_interpreter_linked_from_the_project_root_runs_and_the_project_stays_hidden(
        under: sandbox.Isolation, outside_tmp: Path) -> None:
    """--gotchas-python=3.12=./bin/python: the folder above bin/ is the project itself. It stays hidden; the
    symlink is made again inside it, and leads to the interpreter's own folder."""
    project = outside_tmp / "project"
    (project / "bin").mkdir(parents=True)
    (project / "bin" / "python").symlink_to(PY)
    (project / ".env").write_text("TOKEN=hunter2\n")
    under = dataclasses.replace(under, hidden=sandbox.hidden_paths(project=project))
    python = str(project / "bin" / "python")
    text = run_code(under, """
        import os, sys
        print(sys.executable, os.readlink(sys.executable))
        for path in (sys.argv[1], sys.argv[2]):
            try:
                print(os.listdir(path) if os.path.isdir(path) else open(path).read())
            except OSError as error:
                print(error)
        """, str(project), str(project / ".env"), python=python, readable=(python, str(project)))
    assert text.splitlines() == [f"{python} {PY}", f"[Errno 13] Permission denied: '{project}'",
                                 f"[Errno 2] No such file or directory: '{project}/.env'"]


@contextmanager
def listener() -> Iterator[tuple[int, list[socket.socket]]]:
    """A TCP listener on the host's 127.0.0.1, on a port of the kernel's choosing; it accepts what comes for at most
    30 seconds, then stops by itself."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.1)
    accepted: list[socket.socket] = []
    done = threading.Event()
    until = time.monotonic() + 30

    def serve() -> None:
        while not done.is_set() and time.monotonic() < until:
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], accepted
    finally:
        done.set()
        thread.join()
        for conn in accepted:
            conn.close()
        server.close()


def test_a_listener_on_the_hosts_loopback_cannot_be_reached(under: sandbox.Isolation) -> None:
    with listener() as (port, accepted):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()  # reachable from the host
        deadline = time.monotonic() + 5
        while not accepted and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(accepted) == 1
        text = run_code(under, """
            import socket, sys
            print(socket.if_nameindex())
            try:
                socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
            except OSError as error:
                print(type(error).__name__, error)
            server = socket.create_server(("127.0.0.1", 0))  # its own loopback works: a snippet may serve itself
            socket.create_connection(server.getsockname(), timeout=5).close()
            print("own loopback ok")
            """, str(port))
        time.sleep(0.2)
        assert len(accepted) == 1  # nothing came from the sandbox
    assert text == "[(1, 'lo')]\nConnectionRefusedError [Errno 111] Connection refused\nown loopback ok\n"


def test_no_capabilities_no_way_back_and_proc_sys_read_only(under: sandbox.Isolation) -> None:
    text = run_code(under, """
        import os
        print([l.split()[1] for l in open("/proc/self/status") if l.startswith(("CapEff", "CapPrm", "CapBnd",
                                                                                 "NoNewPrivs"))])
        print(os.getpid(), os.getppid())
        for path in ("/proc/sys/kernel/core_pattern", "/proc/sys/vm/drop_caches"):
            try:
                os.close(os.open(path, os.O_WRONLY))  # opened only: nothing is written
                print(path, "writable")
            except OSError as error:
                print(error)
        """)
    assert text.splitlines() == ["['0000000000000000', '0000000000000000', '0000000000000000', '1']", "2 1",
                                 "[Errno 30] Read-only file system: '/proc/sys/kernel/core_pattern'",
                                 "[Errno 30] Read-only file system: '/proc/sys/vm/drop_caches'"]


def test_bubblewrap_and_the_namespaces_look_the_same_from_inside() -> None:
    found = [strong(kind) for kind in STRONG_KINDS]
    if any(isinstance(f, str) for f in found):
        pytest.skip("; ".join(f for f in found if isinstance(f, str)))
    code = """
        import os, socket, stat
        def seen(path):
            try:
                mode = os.stat(path).st_mode
                return (oct(stat.S_IMODE(mode)), stat.S_ISDIR(mode),
                        sorted(os.listdir(path)) if stat.S_ISDIR(mode) else None)
            except OSError as error:
                return type(error).__name__
        print(os.getuid(), os.getgid(), os.getpid(), socket.if_nameindex())
        for path in ("/", "/dev", "/dev/shm", "/tmp", "/var/tmp", "/root", "/home", "/run", "/etc/shadow", "/proc/1"):
            print(path, seen(path) if path != "/tmp" else seen(path)[:2])
        print(sorted(os.statvfs(p).f_flag & os.ST_RDONLY for p in ("/", "/usr", "/etc", "/dev", "/proc/sys")))
        print([os.statvfs(p).f_flag & os.ST_RDONLY for p in ("/tmp", "/var/tmp", "/dev/shm", ".")])
        """
    seen = [run_code(dataclasses.replace(f, hidden=sandbox.hidden_paths()), code) for f in found]
    assert seen[0] == seen[1]
