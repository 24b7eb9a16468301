"""A first run that overlaps (#52): once pytest has deselected, collection knows which cases run; the model of the
first scored one starts loading in a thread of its own (scoring/ahead.py) and every selected snippet is executed,
`--gotchas-jobs` side by side whatever its chapter, before the chapters are checked one by one in their order. Once
loaded, the model reads the selected cases whose prompts the chapters give (scorer.Scorer.load_ahead) until collection
ends. The test loop stops those readings and waits for the thread before its first test, so that nothing of a test
runs beside it.

Only one model is loaded ahead, and only where the process knows which model it uses first: serially, the first
selected case's; under xdist, a worker's only model (with several, the controller decides which a worker runs
first). `--gotchas-jobs 1` executes one snippet after another and loads the model when the first case needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from .state import SESSION

if TYPE_CHECKING:
    from ..truth.collect import Planned


def start(session: pytest.Session, first: str | None, cases: list[Planned]) -> None:
    """Start loading model `first`, the first scored case's (None: the run scores nothing), after deselection and
    before the snippets execute, and then read `cases` beside them (scorer.Scorer.load_ahead)."""
    gotchas, option = session.config.stash[SESSION], session.config.option
    if first is None or gotchas.settings.jobs == 1 or option.collectonly:
        return
    if session.testsfailed and not option.continue_on_collection_errors:  # pytest stops before its loop
        return
    if gotchas.worker_id is not None and len(gotchas.model_ids) > 1:
        return
    gotchas.scorer(first).load_ahead(cases)


def settle(config: pytest.Config) -> None:
    """Wait for a load ahead, if one is under way: before the first test, and at the session's end (a session that
    ends before its loop, at a collection error, leaves no thread behind)."""
    gotchas = config.stash.get(SESSION, None)
    if gotchas is not None:
        for scorer in gotchas.scorers.values():
            scorer.stop_ahead()
            scorer.slot.settle()
