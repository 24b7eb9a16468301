"""Which cases a scorer reads together, so that their trees share head products (heads.py), and what each read gave
until its case is scored: the cases of the run in its order (each read once, with the next ones), the cases read
beside collection once the model loaded ahead (#52), and the signal that collection ended (scorer.Scorer owns one)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Generic, TypeVar

from .heads import Guard, Heads, Shared, read_in_rounds

Case = TypeVar("Case")


class SharedReads(Generic[Case]):
    """`size` cases at a time (0 or 1: none shared); `texts` gives a case's (prompt, correct, wrong) texts."""

    def __init__(self, size: int, texts: Callable[[Case], Any]) -> None:
        self.size, self.texts = size, texts
        self.stop = threading.Event()  # collection is over: the reads beside it stop after their round
        self.ahead: list[Case] = []  # the cases to read beside collection
        self._order: dict[int, int] = {}  # id of a case -> its place in the run
        self._in_order: list[Case] = []
        self._seen: set[int] = set()  # cases read (scored since, or waiting to be)
        self._entries: dict[int, Shared] = {}  # id of a case -> what its read holds, until the case is scored

    def know(self, cases: Sequence[Case]) -> None:
        """The cases of the run, in its order."""
        self._in_order = list(cases)
        self._order = {id(case): n for n, case in enumerate(self._in_order)}

    def next_from(self, case: Case) -> list[Case]:
        """`case` and the cases after it in the run's order, up to `size` (those not read yet); none for a case read
        already or not in the run."""
        place = self._order.get(id(case))
        if place is None or id(case) in self._seen:
            return []
        return self._in_order[place : place + self.size]

    def read(self, model: Any, cases: Sequence[Case], read: Callable[[Case], tuple[Any, Any]], guard: Guard,
             phase: Callable[[], AbstractContextManager[object]], stop: Callable[[], bool] = lambda: False) -> None:
        """The reads of `cases` not read yet, in rounds whose trees share a head product (heads.read_in_rounds),
        until `stop` (the reads beside collection; the test loop's own run to their end)."""
        chunk = [case for case in cases if id(case) not in self._seen]
        if not chunk:
            return
        heads = Heads(model)
        self._seen.update(id(case) for case in chunk)
        for case in chunk:
            self._entries[id(case)] = entry = Shared(model, heads)
            entry.texts = self.texts(case)
        read_in_rounds(chunk, read, self._entries, heads, guard, phase, stop)

    def read_ahead(self, model: Any, read: Callable[[Case], tuple[Any, Any]], guard: Guard,
                   phase: Callable[[], AbstractContextManager[object]]) -> None:
        """The cases given as `ahead`, `size` at a time, until `stop`."""
        for start in range(0, len(self.ahead), self.size):
            if self.stop.is_set():
                return
            self.read(model, self.ahead[start : start + self.size], read, guard, phase, self.stop.is_set)

    def entry(self, case: Case, default: Shared | None = None) -> Shared | None:
        """What the read of `case` holds (else `default`), where it read the case's present texts."""
        found = self._entries.get(id(case), default)
        return found if found is not None and found.texts == self.texts(case) else None

    def take(self, case: Case) -> Shared | None:
        """`entry`, let go of: the case is being scored."""
        found = self.entry(case)
        self._entries.pop(id(case), None)
        return found
