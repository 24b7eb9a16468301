"""The head of many cases' trees in one product (#52): the text reading's tree of one prompt (tree.py) is a call of a
few rows, and each row goes through the head, gemma-3-270m's 262,144 rows of 640: at a few rows a product reads the
head's 335 MB for little arithmetic, so that a tree cost about what a whole pass does. Here a tree's call runs through
the decoder alone (model/paths.tree_hidden), its hidden rows wait, and the rows of every tree of a round of cases go
through the head in one product (paths.head), which reads the weights once for all of them.

It gives the bits a tree's own call gives where the load measured so (paths.apart, on the numerics probe: the head
computes a row alike alone and among others, and the model's forward does nothing after its head); elsewhere the
scorer does not use it. Which cases share a round is the scorer's (scorer.Scorer: the next cases of the run, in its
order); the readings of a case stop at the trees they wait for (rows.Pending) and run again once they are kept, the
case's counts unchanged (rows.Rows.caused). torch is imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ..errors import ModelUnavailable
from ..model import paths
from .rows import OnePassRows, Pending
from .tree import Tree

Case = TypeVar("Case")


@dataclass
class _Waiting:
    rows: OnePassRows
    tree: Tree
    hidden: Any  # [nodes, hidden]
    owner: int  # the cut that asked (rows.Rows.owner)


class Heads:
    """The trees waiting for the head of one model."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.waiting: list[_Waiting] = []

    def wait(self, rows: OnePassRows, tree: Tree, hidden: Any) -> None:
        self.waiting.append(_Waiting(rows, tree, hidden, rows.owner))

    def flush(self) -> None:
        """Every waiting tree's rows in one product, kept by the rows that asked, in the order they asked; a tree
        with a non-finite logit marks its rows (the guard's hook sees only the model's own forward)."""
        if not self.waiting:
            return
        import torch

        waiting, self.waiting = self.waiting, []
        logits = paths.head(self.model, torch.cat([w.hidden for w in waiting]))
        at = 0
        for w in waiting:
            rows = logits[at : at + len(w.tree)]
            at += len(w.tree)
            if not bool(torch.isfinite(rows).all()):
                w.rows.non_finite = True
            w.rows.tree_rows(w.tree, rows, w.owner)


class Shared:
    """One case read with other cases' (read_in_rounds): its rows while its readings share tree heads with theirs,
    made by the case's first score_batch (readings.py, as its `rows_of`) and kept for its next ones; then what its
    last read gave (`result`, for the texts it read), the rows let go."""

    def __init__(self, model: Any, heads: Heads | None) -> None:
        self.model, self.heads = model, heads
        self.rows: OnePassRows | None = None
        self.result: Any = None  # what the read gave, once it ran to its end
        self.texts: Any = None  # the texts it read them for
        self.guarded = False  # the guard found a non-finite logit in one of the case's passes

    def rows_of(self, softmax_dtype: str, batch_size: int, top_k: int, refeed: int) -> OnePassRows:
        if self.rows is None:
            self.rows = OnePassRows(self.model, softmax_dtype, batch_size, top_k, refeed, heads=self.heads)
        return self.rows

    def done(self) -> None:
        """No head waits any more: anything a later read asks for is computed at once; a case read to its end lets
        its rows go (its result holds what scoring reads of them)."""
        self.heads = None
        if self.rows is not None:
            self.rows.heads = None
            if self.result is not None:
                self.guarded = self.guarded or self.rows.non_finite
                self.rows = None

    def non_finite(self) -> bool:
        return self.guarded or (self.rows is not None and self.rows.non_finite)


class Guard(Protocol):
    """What read_in_rounds asks of the scorer's guard (guard.Guard)."""

    non_finite: bool

    def reset(self) -> None: ...


def read_in_rounds(cases: list[Case], read: Callable[[Case], tuple[Any, Any]], shared: dict[int, Shared],
                   heads: Heads, guard: Guard, phase: Callable[[], AbstractContextManager[object]],
                   stop: Callable[[], bool] = lambda: False) -> None:
    """Each round runs every case's readings (`read`, with `shared[id(case)]`'s rows) until they wait for a tree's
    head (rows.Pending), then computes the heads of all the round's trees in one product (`phase` times it), until
    no case waits or `stop` says to (checked before each round: a case stopped keeps what it has, and its next read
    computes the rest at once). A case whose reading fails here is dropped from `shared`, to fail, and say why, when
    it is scored itself; the guard's finding is kept with its entry."""
    waiting = cases
    while waiting and not stop():
        stopped = []
        for case in waiting:
            guard.reset()
            entry = shared[id(case)]
            try:
                entry.result = read(case)
            except Pending:
                stopped.append(case)
            except ModelUnavailable:
                raise
            except Exception:  # noqa: BLE001  (met again, and said, when the case is scored itself)
                shared.pop(id(case), None)
            if guard.non_finite:
                entry.guarded = True
        with phase():
            heads.flush()
        waiting = stopped
    with phase():
        heads.flush()
    for case in cases:
        if (kept := shared.get(id(case))) is not None:
            kept.done()
    guard.reset()
