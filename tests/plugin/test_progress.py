"""Progress on long work (plugin/progress.py): on a terminal, the line says which chapter file's ground truth runs
(of how many) and which pair is patched; in captured output and through a pipe (a CI log) there is none; the page's
command at the top reruns the same selection when pasted into a shell.

"A terminal" is real here: pytest runs in a subprocess whose output is a pseudo-terminal (the `pty` module), so
its own terminal reporter decides, as on a user's screen."""

from __future__ import annotations

import errno
import fcntl
import os
import pty
import re
import shlex
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from helpers.chapters import SEVEN_EIGHT_RULES, seven_eight_chapter
from helpers.results import read_report
from helpers.tinymodel import build_tiny_model

pytest.importorskip("torch")

RULES = SEVEN_EIGHT_RULES


def chapter(name: str) -> str:
    return seven_eight_chapter("progress on a tiny model", "  seven-eight: [seven, eight]\n", name=name)


SEEN = ("executing ground truth of chapter file", "patching pair")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", RULES)


@pytest.fixture
def args(pytester: pytest.Pytester, tiny_model: Path) -> list[str]:
    for name in ("first", "second"):
        (pytester.path / f"{name}.yaml").write_text(chapter(name), encoding="utf-8")
    return ["--gotchas", "--gotchas-model", str(tiny_model), "--gotchas-cache-dir", str(pytester.path / "models"),
            "-o", f"cache_dir={pytester.path / 'pc'}", "--rootdir", str(pytester.path), "-p", "no:randomly",
            "--gotchas-patch", "--color=no"]


def on_a_terminal(cwd: Path, args: list[str]) -> tuple[int, str]:
    """pytest's exit status and everything it wrote, run with a pseudo-terminal 160 columns wide as its output."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    env = {**os.environ, "COLUMNS": "160", "TERM": "xterm"}
    env.pop("CI", None)  # pytest shortens its own output under CI; a user's terminal is not CI
    process = subprocess.Popen([sys.executable, "-m", "pytest", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                               stdout=slave, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError as error:  # the other end closed: EIO on Linux
            if error.errno != errno.EIO:
                raise
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return process.wait(timeout=600), b"".join(chunks).decode("utf-8", "replace")


def test_on_a_terminal_the_long_work_shows_its_progress(pytester: pytest.Pytester, args: list[str], py311) -> None:
    status, out = on_a_terminal(pytester.path, args)
    assert status == 0, out
    assert "collecting ... executing ground truth of chapter file 1/2: first.yaml" in out
    assert "collecting ... executing ground truth of chapter file 2/2: second.yaml" in out
    assert re.search(r"first\.yaml \. \[patching pair 1/2: seven-eight\]\x08+ +\x08+\.", out), out
    assert "[patching pair 2/2: seven-eight" in out
    # erased again: what the screen finally shows (backspaces applied) is pytest's own line
    screen = re.sub(r"[^\n\r]*\r(?!\n)", "", out.replace("\r\n", "\n"))
    while "\x08" in screen:
        screen = re.sub(r"[^\x08\n]\x08", "", screen, count=1)
    assert re.search(r"^first\.yaml \.\. +\[ 50%\] *$", screen, re.M), screen
    assert "collected 4 items" in screen and "executing" not in screen.split("collected 4 items")[1]


def test_captured_or_piped_output_has_no_progress(pytester: pytest.Pytester, args: list[str], py311) -> None:
    piped = pytester.runpytest_subprocess(*args)  # a CI log: output to a pipe
    assert piped.ret == 0, piped.stdout.str()
    captured = pytester.runpytest(*args)  # in the test process: pytest's output captured into a buffer
    assert captured.ret == 0, captured.stdout.str()
    for result in (piped, captured):
        output = result.stdout.str() + result.stderr.str()
        assert "first.yaml .." in output  # the run was shown, its progress was not
        assert not any(words in output for words in SEEN) and "\x08" not in output


def test_the_page_command_reruns_the_same_selection(pytester: pytest.Pytester, args: list[str], py311) -> None:
    selection = ["-k", "seven or eight", "--gotchas-json", "out.json"]
    given = [a for a in args if a != "--gotchas-patch"] + selection
    result = pytester.runpytest(*given)
    assert result.ret == 0, result.stdout.str()
    command = read_report(pytester.path / "out.json")["run"]["command"]
    assert "-k 'seven or eight'" in command
    words = shlex.split(command)
    assert words[0] == "pytest" and words[1:len(given) + 1] == given  # pytester may add its --basetemp after them
