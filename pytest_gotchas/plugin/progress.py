"""Progress of long work on a terminal, the way pytest shows its own "collecting ..." line: what is being done, how
many of how many, and an estimate once one can be made, rewritten in place and erased when the work is done, so that
the letters, the `[ 40%]` column and the summary read exactly as without it.

Shown only where pytest itself rewrites its collecting line: its terminal reporter writes to a TTY and the run is
not quiet (-q). Never in captured output, a pipe or a CI log, where each rewrite would be a line of noise, and never
from an xdist worker, whose output is not a terminal. The long work it covers: executing ground truth at collection
(chapter files), converting a GGUF model (its tensors), and --gotchas-patch (pairs).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import pytest

from ..report.escape import escape
from ..report.wording import progress_text
from .. import compat

EVERY = 0.1  # seconds between two rewrites of the line: a fast loop (a model's tensors) does not flood the terminal


class Progress:
    def __init__(self, reporter: Any, capture: Any) -> None:
        self.reporter, self.capture = reporter, capture  # None: nothing is ever shown
        self.collecting = False  # pytest's line is its "collecting ..." line, which it rewrites itself
        self._shown = 0  # characters of ours after pytest's current line, to erase
        self._last = 0.0
        self._started: dict[str, float] = {}  # when each kind of work first showed, for its estimate

    @classmethod
    def of(cls, config: pytest.Config, worker: bool) -> Progress:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        shown = (reporter is not None and not worker and bool(reporter.isatty)  # pytest 8: a bool, 9: callable
                 and config.get_verbosity() >= 0)
        return cls(reporter if shown else None, config.pluginmanager.get_plugin("capturemanager"))

    @property
    def active(self) -> bool:
        return self.reporter is not None

    def show(self, what: str, done: int = 0, total: int = 0, detail: str = "") -> None:
        """`done` of `total` (0 of 0: uncounted) of the work `what`, on `detail`; the estimate is the time per unit
        so far, from the first time `what` was shown."""
        if self.reporter is None:
            return
        now = time.monotonic()
        started = self._started.setdefault(what, now)
        if now - self._last < EVERY and done not in (0, total - 1):
            return
        self._last = now
        self._write(escape(progress_text(what, done, total, now - started, detail)))

    def clear(self) -> None:
        """The line as pytest left it (its collecting line is pytest's to rewrite)."""
        if self.reporter is not None and self._shown and not self.collecting:
            n, self._shown = self._shown, 0
            with self._uncaptured():
                compat.write_around_the_count(self.reporter, "\b" * n + " " * n + "\b" * n)

    @contextmanager
    def around(self) -> Iterator[None]:
        """Whatever the work shows is erased when it ends, raised or not."""
        try:
            yield
        finally:
            self.clear()

    def _write(self, text: str) -> None:
        with self._uncaptured():
            if self.collecting:
                width = self.reporter._tw.fullwidth - 1 if self.reporter is not None else 0
                line = f"collecting ... {text}"[:width]
                compat.write_around_the_count(self.reporter, "\r" + line + " " * (width - len(line)))
                return
            erase = "\b" * self._shown + " " * self._shown + "\b" * self._shown
            room = compat.line_room(self.reporter) - 1
            shown = f" [{text}]"[:room] if room >= 20 else ""  # too little room left: nothing rather than a wrap
            compat.write_around_the_count(self.reporter, erase + shown)
            self._shown = len(shown)

    def _uncaptured(self) -> Any:
        """pytest captures the file descriptors during collection and each test; its live log writes this way too."""
        return self.capture.global_and_fixture_disabled() if self.capture is not None else nullcontext()
