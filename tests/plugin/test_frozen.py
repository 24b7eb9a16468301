"""plugin/frozen.py: what a run freezes (gc.freeze) is given back to the collector when the process goes on to
another pytest run, so that a process that runs pytest again and again does not keep every run's cyclic garbage."""

from __future__ import annotations

import gc

import pytest
from helpers.chapters import ONE_CASE


class Cycle:
    def __init__(self) -> None:
        self.me = self


def test_a_run_inside_another_gives_back_what_it_and_the_last_run_froze(pytester: pytest.Pytester,
                                                                      write_chapter) -> None:
    write_chapter(ONE_CASE)
    gc.freeze()  # a finished run's objects, as a notebook calling pytest.main again finds them
    assert gc.get_freeze_count() > 0
    result = pytester.runpytest("--gotchas", "--collect-only", "-q")  # in this process: collection freezes
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert gc.get_freeze_count() == 0
    garbage = Cycle()
    del garbage
    assert gc.collect() > 0  # the collector sees everything again
