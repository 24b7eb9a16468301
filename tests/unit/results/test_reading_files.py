"""What `read_report` and `gotchas merge` open: a regular file, read no further than MAX_BYTES. A FIFO blocked both
for ever and a link to /dev/zero or a 2 GB file was read whole (MemoryError): each is refused by name now, with what
it is, before anything is read. Each hostile file is read under a deadline (helpers/fifo.py), so a regression fails
instead of hanging the suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.fifo import fifo, within

from pytest_gotchas.cli import main
from pytest_gotchas.results.reading import MAX_BYTES, UnreadableReport, read_report


def refused(path: Path, pipe: Path | None = None) -> str:
    """read_report's refusal of `path`, under a deadline."""
    with pytest.raises(UnreadableReport) as error:
        within(lambda: read_report(path), pipe or path)
    return str(error.value)


def merge_refused(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """`gotchas merge PATH`'s one error line, under a deadline."""
    assert within(lambda: main(["merge", str(path)]), path) == 1
    out, err = capsys.readouterr()
    assert out == ""
    return err


def test_a_fifo_is_refused_by_name_not_waited_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pipe = fifo(tmp_path / "a.json")
    message = f"cannot read {pipe}: it is a named pipe (FIFO), not a regular file"
    assert refused(pipe) == message
    assert merge_refused(pipe, capsys) == f"gotchas merge: error: {message}\n"


def test_a_link_to_dev_zero_is_refused_as_a_device(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    link = tmp_path / "z.json"
    link.symlink_to("/dev/zero")
    message = f"cannot read {link}: it is a character device, not a regular file"
    assert refused(link) == message
    assert merge_refused(link, capsys) == f"gotchas merge: error: {message}\n"


def test_a_link_to_a_fifo_is_refused_as_the_fifo(tmp_path: Path) -> None:
    pipe = fifo(tmp_path / "pipe")
    (tmp_path / "a.json").symlink_to(pipe)
    assert refused(tmp_path / "a.json", pipe) == (f"cannot read {tmp_path / 'a.json'}: it is a named pipe (FIFO), not "
                                                  "a regular file")


def test_a_folder_is_refused_as_a_folder(tmp_path: Path) -> None:
    (tmp_path / "a.json").mkdir()
    assert refused(tmp_path / "a.json") == f"cannot read {tmp_path / 'a.json'}: it is a folder, not a regular file"


@pytest.mark.parametrize("size", [MAX_BYTES + 1, 2 << 30])
def test_a_file_past_the_bound_is_refused_by_its_size_unread(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             size: int) -> None:
    """Sparse files: the 2 GB one costs no disk, and none of it is read (the bound is checked against its size)."""
    path = tmp_path / "big.json"
    with open(path, "wb") as stream:
        stream.truncate(size)
    message = f"{path} is not a gotchas report: {size} bytes is more than a report may hold ({MAX_BYTES})"
    assert refused(path) == message
    assert merge_refused(path, capsys) == f"gotchas merge: error: {message}\n"


def test_a_file_whose_size_is_not_known_is_read_no_further_than_the_bound(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that says it is empty (as /proc's do) and holds more: read up to the bound, then refused."""
    real_fstat = os.fstat

    def unknown_size(fd: int) -> os.stat_result:
        status = real_fstat(fd)
        return os.stat_result((*status[:6], 0, *status[7:10]))

    monkeypatch.setattr("pytest_gotchas.results.reading.MAX_BYTES", 100)
    monkeypatch.setattr("pytest_gotchas.files.os.fstat", unknown_size)
    path = tmp_path / "a.json"
    path.write_bytes(b" " * 1000)
    assert refused(path) == f"{path} is not a gotchas report: 101 bytes is more than a report may hold (100)"
