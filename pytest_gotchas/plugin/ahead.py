"""A first run that overlaps (#52): once pytest has deselected, collection knows which cases run; the model of the
first scored one starts loading in a thread of its own (scoring/ahead.py) and every selected snippet is executed,
`--gotchas-jobs` side by side whatever its chapter, before the chapters are checked one by one in their order. The
test loop waits for the load before its first test, so that nothing of a test runs beside it.

Only one model is loaded ahead, and only where the process knows which model it uses first: serially, the first
selected case's; under xdist, a worker's only model (with several, the controller decides which a worker runs
first). `--gotchas-jobs 1` executes one snippet after another and loads the model when the first case needs it.
"""

from __future__ import annotations

import pytest

from .state import SESSION


def start(session: pytest.Session, first: str | None) -> None:
    """Start loading model `first`, the first scored case's (None: the run scores nothing), after deselection and
    before the snippets execute."""
    gotchas, option = session.config.stash[SESSION], session.config.option
    if first is None or gotchas.settings.jobs == 1 or option.collectonly:
        return
    if session.testsfailed and not option.continue_on_collection_errors:  # pytest stops before its loop
        return
    if gotchas.worker_id is not None and len(gotchas.model_ids) > 1:
        return
    gotchas.scorer(first).load_ahead()


def settle(config: pytest.Config) -> None:
    """Wait for a load ahead, if one is under way: before the first test, and at the session's end (a session that
    ends before its loop, at a collection error, leaves no thread behind)."""
    gotchas = config.stash.get(SESSION, None)
    if gotchas is not None:
        for scorer in gotchas.scorers.values():
            scorer.slot.settle()
