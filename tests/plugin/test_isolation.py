"""--gotchas-isolation through pytest: strong by default (bubblewrap, else the namespaces), one usage error where
neither works, weak only when asked for and then named in the header, the summary, the JSON report and the page.

bwrap's absence is simulated with the probe's seam (`sandbox.which`, in-process runs) or with a PATH that lacks it
(a subprocess run, as on a fresh machine). Nothing here loads a model: the cases are unscored.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers.results import read_report

from pytest_gotchas.cli import main
from pytest_gotchas.truth import memory, sandbox

WHAT = ("read-only root; credentials, home folders and the project hidden; private /tmp, /var/tmp, /dev/shm and "
        "working directory; loopback only; no capabilities, no kernel keyrings")
# What the memory limit covers here (truth/memory.py): per run where a cgroup can be made, else per process.
MEMORY = ("memory limited per run, all its processes together (a cgroup)" if memory.groups() is not None else
          "memory limited per process only (no cgroup can be made here: each process of a run may use the limit)")
WEAK_PID = ("weak isolation (--gotchas-isolation=weak): a PID namespace only (util-linux unshare); the filesystem, "
            f"the network and the host's secrets are not confined; {MEMORY}")
ADDITION = """
- id: letters
  transcript: |-
    >>> set(['a', 'b', 'c'])
    {'█
  unscored: "the order depends on the hash seed"
"""
SHADOW = """
- id: shadow
  transcript: |-
    >>> open('/etc/shadow').read()
    Traceback (most recent call last):
      File "<stdin>", line 1, in <module>
    PermissionError: [Errno 13] Permission denied: '/etc/shadow'
    >>> set(['a', 'b', 'c'])
    {'█
  unscored: "what a snippet sees of the host, then an order that depends on the hash seed"
"""


def without(*tools: str):
    """The probe's seam, with `tools` missing."""
    return lambda tool: None if tool in tools else shutil.which(tool)


def works(**seam: str) -> sandbox.Isolation | str:
    try:
        return sandbox.probe(**seam)
    except sandbox.Unavailable as error:
        return str(error)


def header(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if line.startswith("gotchas: snippets run under")]


# -- which isolation runs ------------------------------------------------------------------------------------------


def test_with_bwrap_on_path_the_run_is_confined_by_bubblewrap(pytester: pytest.Pytester, write_chapter) -> None:
    found = works()
    if (not shutil.which("bwrap") or not isinstance(found, sandbox.Isolation)
            or found.kind != sandbox.IsolationKind.BUBBLEWRAP):
        pytest.skip(f"bubblewrap cannot run here: {found if isinstance(found, str) else 'bwrap is not on PATH'}")
    write_chapter(ADDITION)
    result = pytester.runpytest("--gotchas", "--collect-only", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    assert header(result) == [f"gotchas: snippets run under strong isolation: bubblewrap (own PID namespace; {WHAT}); "
                             f"{MEMORY}"]


def test_without_bwrap_the_run_is_confined_by_the_namespaces(pytester: pytest.Pytester, write_chapter,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "which", without("bwrap"))
    found = works()
    if isinstance(found, str):
        pytest.skip(found)
    write_chapter(ADDITION)
    result = pytester.runpytest("--gotchas", "--collect-only", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    assert header(result) == [f"gotchas: snippets run under {found.description}"]
    assert found.description.startswith("strong isolation: namespaces by util-linux unshare (mount, network, PID")


def test_on_a_fresh_machine_the_main_command_runs_confined(pytester: pytest.Pytester, write_chapter,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """No bwrap on PATH (a subprocess, with a PATH that holds util-linux but not bubblewrap): the snippet that
    reads /etc/shadow gets the error its transcript shows, and the case runs."""
    if not os.path.exists("/etc/shadow"):
        pytest.skip("this machine has no /etc/shadow")
    folder = pytester.path / "bin"
    folder.mkdir()
    for tool in ("unshare", "setpriv"):
        if shutil.which(tool):
            (folder / tool).symlink_to(shutil.which(tool))
    monkeypatch.setenv("PATH", str(folder))
    if isinstance(works(), str):
        pytest.skip(f"no namespaces here: {works()}")
    write_chapter(SHADOW)
    result = pytester.runpytest_subprocess("--gotchas", "-p", "no:cacheprovider", "-v")
    assert result.ret == pytest.ExitCode.OK, result.outlines + result.errlines
    assert header(result)[0].startswith("gotchas: snippets run under strong isolation: namespaces by util-linux")
    assert result.parseoutcomes() == {"unscored": 1}


def test_with_nothing_strong_collection_stops_with_one_usage_error(pytester: pytest.Pytester, write_chapter,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "which", without("bwrap", "unshare", "setpriv"))
    write_chapter(ADDITION)
    result = pytester.runpytest("--gotchas", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.errlines if line.strip()] == [
        "ERROR: snippets cannot be confined on this machine, and strong isolation is asked for (the default), so none "
        "is executed.",
        "  tried bubblewrap: bwrap is not on PATH",
        "  tried namespaces (util-linux unshare): unshare is not on PATH",
        "To confine them: install bubblewrap (Debian, Ubuntu: apt-get install bubblewrap), or allow unprivileged "
        "user namespaces (sysctl user.max_user_namespaces=15000; Debian: kernel.unprivileged_userns_clone=1; Ubuntu: "
        "kernel.apparmor_restrict_unprivileged_userns=0), or run as root.",
        "To run them unconfined (a PID namespace only: they can write to /tmp, read the host's files and reach its "
        "network), pass --gotchas-isolation=weak (ini: gotchas_isolation = weak; gotchas new and vary: --isolation "
        "weak)."]
    assert "collected" not in result.stdout.str()


def test_help_is_given_where_nothing_strong_works(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "which", without("bwrap", "unshare", "setpriv"))
    result = pytester.runpytest("--gotchas", "--help")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*--gotchas-isolation={strong,weak}*"])


def test_without_gotchas_nothing_is_probed(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "which", without("bwrap", "unshare", "setpriv"))
    pytester.makepyfile("def test_plain(): pass")
    assert pytester.runpytest("-p", "no:cacheprovider").ret == pytest.ExitCode.OK  # the plugin stays inert


# -- weak: asked for, and named ----------------------------------------------------------------------------------


def test_weak_is_named_in_the_header_the_summary_the_json_and_the_page(pytester: pytest.Pytester, write_chapter
                                                                       ) -> None:
    weak = sandbox.probe(sandbox.IsolationLevel.WEAK)
    write_chapter(ADDITION)
    result = pytester.runpytest("--gotchas", "--gotchas-isolation=weak", "-p", "no:cacheprovider",
                                "--gotchas-json", "report.json", "--gotchas-html", "report.html")
    assert result.ret == pytest.ExitCode.OK, result.outlines
    assert header(result) == [f"gotchas: snippets run under {weak.description}"]
    gotchas = result.outlines[result.outlines.index(next(l for l in result.outlines if " gotchas " in l)):]
    assert f"snippets ran under {weak.description}" == gotchas[-2]  # the last line above pytest's own
    assert read_report(pytester.path / "report.json")["run"]["isolation"] == weak.description
    assert weak.description.replace("'", "&#39;") in (pytester.path / "report.html").read_text()
    if shutil.which("unshare") and os.geteuid() == 0:
        assert weak.description == WEAK_PID


def test_strong_is_not_repeated_in_the_summary(pytester: pytest.Pytester, write_chapter) -> None:
    if isinstance(works(), str):
        pytest.skip(works())
    write_chapter(ADDITION)
    result = pytester.runpytest("--gotchas", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    assert not [line for line in result.outlines if line.startswith("snippets ran under")]


def test_the_ini_twin_asks_for_weak(pytester: pytest.Pytester, write_chapter) -> None:
    write_chapter(ADDITION)
    pytester.makeini("[pytest]\ngotchas = true\ngotchas_isolation = weak\n")
    result = pytester.runpytest("--collect-only", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    assert header(result) == [f"gotchas: snippets run under {sandbox.probe(sandbox.IsolationLevel.WEAK).description}"]
    result = pytester.runpytest("--collect-only", "-p", "no:cacheprovider", "--gotchas-isolation=strong")
    if not isinstance(works(), str):  # the command line wins over the ini file
        assert header(result)[0].startswith("gotchas: snippets run under strong isolation: ")


@pytest.mark.parametrize("where", ["ini", "command line"])
def test_an_unknown_level_is_one_usage_error(pytester: pytest.Pytester, where: str) -> None:
    if where == "ini":
        pytester.makeini("[pytest]\ngotchas = true\ngotchas_isolation = none\n")
        result = pytester.runpytest()
        assert "ERROR: ini option gotchas_isolation must be one of strong, weak, got 'none'" in result.errlines
    else:
        result = pytester.runpytest("--gotchas", "--gotchas-isolation", "none")
        assert ("pytest.main(): error: argument --gotchas-isolation: invalid choice: 'none' (choose from 'strong', "
                "'weak')") in result.errlines
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_what_a_snippet_reads_depends_on_the_level(pytester: pytest.Pytester, write_chapter) -> None:
    """The same chapter: strong, the snippet is refused /etc/shadow as its transcript says; weak and root, it reads
    the file, so the transcript is not what Python printed."""
    if os.geteuid() != 0 or not os.path.exists("/etc/shadow"):
        pytest.skip("needs root and an /etc/shadow: only root reads it when nothing hides it")
    if isinstance(works(), str):
        pytest.skip(works())
    write_chapter(SHADOW)
    strong = pytester.runpytest("--gotchas", "-p", "no:cacheprovider")
    assert strong.ret == pytest.ExitCode.OK and strong.parseoutcomes() == {"unscored": 1}
    weak = pytester.runpytest("--gotchas", "-p", "no:cacheprovider", "--gotchas-isolation=weak")
    assert weak.ret == pytest.ExitCode.TESTS_FAILED and weak.parseoutcomes() == {"failed": 1}
    weak.stdout.fnmatch_lines(["a.yaml:5: case 'shadow': the prompt is not what Python printed",
                               "  at line 2 of the transcript, after \">> open('/etc/shadow').read()\\n\":",
                               "    transcript: 'Traceback (most recent call la'"])


# -- the authoring commands decide the same way -------------------------------------------------------------------


def test_gotchas_new_with_nothing_strong_is_one_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
                                                      ) -> None:
    monkeypatch.setattr(sandbox, "which", without("bwrap", "unshare", "setpriv"))
    snippet = tmp_path / "s.py"
    snippet.write_text("1 + 1\n")
    assert main(["new", str(snippet), "--wrong", "3", "--interpreter", "3.12"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("gotchas new: error: snippets cannot be confined on this machine, and strong isolation is "
                          "asked for (the default), so none is executed.\n  tried bubblewrap: bwrap is not on PATH\n")
    assert err.endswith("gotchas new and vary: --isolation weak).\n")
