"""A disk that fills up (or a folder that cannot be written) while ground truth is executed: the transcript cache is
given up, once, naming its folder (the plugin words it, report/wording.py), and the run goes on with what it executed; a snippet's temporary folder
that cannot be made is one error naming where it was to be made. A full disk is simulated at the writing seams
(OSError ENOSPC), as no small filesystem can be mounted here unprivileged."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import pytest

from pytest_gotchas.truth import execute
from pytest_gotchas.truth.execute import Cache, CacheLost, ExecutionError, Limits, Request, Run
from pytest_gotchas.truth.interpreters import Interpreter

REQUEST = Request(interpreter=Interpreter("3.11.7", "/usr/bin/python3", "CPython"), repl_input=("1 + 1",), args=None,
                  shell_text=None, env=())
RUNS = (Run(text=">>> 1 + 1\n2\n", seed="1", returncode=0, timed_out=False),)
FULL = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.fixture
def executed(monkeypatch) -> list[Request]:
    """execute() without subprocesses: what it was asked to run."""
    asked: list[Request] = []

    def fake(request: Request, runs: int, limits: Limits) -> tuple[Run, ...]:
        asked.append(request)
        return RUNS

    monkeypatch.setattr(execute, "execute", fake)
    return asked


def test_a_full_disk_under_the_cache_gives_it_up_once_naming_the_folder(tmp_path, monkeypatch, executed) -> None:
    def full(*args: object) -> None:
        raise FULL

    monkeypatch.setattr(execute, "write_sealed", full)
    cache = Cache(tmp_path / "transcripts")
    assert cache.get_or_execute(REQUEST, 1, Limits()) == RUNS  # what was executed is used
    assert cache.take_lost() == CacheLost(str(tmp_path / "transcripts"), "No space left on device")
    assert cache.take_lost() is None  # said once
    assert cache.get_or_execute(REQUEST, 1, Limits()) == RUNS and len(executed) == 2  # no cache now, no lock
    assert cache.directory is None and (cache.hits, cache.misses) == (0, 2)


def test_a_cache_folder_that_cannot_be_made_is_given_up_the_same_way(tmp_path, executed) -> None:
    (tmp_path / "file").write_text("")
    cache = Cache(tmp_path / "file" / "transcripts")  # a folder inside a file: even root cannot make it
    assert cache.execute_all([REQUEST, REQUEST], 1, Limits()) == [RUNS, RUNS]
    assert cache.take_lost() == CacheLost(str(tmp_path / "file" / "transcripts"), "Not a directory")


def test_no_room_for_a_snippets_temporary_folder_is_one_error_naming_it(monkeypatch) -> None:
    def full(*args: object, **kwargs: object) -> None:
        raise FULL

    monkeypatch.setattr(execute.tempfile, "TemporaryDirectory", full)
    with pytest.raises(ExecutionError) as error:
        execute.run_once(REQUEST, "1", Limits())
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
        execute.run_once(REQUEST, "1", Limits())
