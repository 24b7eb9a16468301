"""The words of how a run ended (results/schema.py's Invocation: `exit_status`, `interrupted`, `stopped_by`,
`not_run`): a run, or a merge of runs, that stopped before every selected item ran says so first, in the summary and
as the page's banner, because its counts are those of the items that ran and look like a whole run's otherwise."""

from __future__ import annotations

from ..results.schema import Invocation


def _items(n: int) -> str:
    return f"{n} selected item{'s' if n != 1 else ''}"


def _stopped(run: Invocation) -> str:
    by = f" ({run.stopped_by})" if run.stopped_by else ""
    status = f", exit status {run.exit_status}" if run.exit_status is not None else ""
    return f"stopped{by} before {_items(len(run.not_run))} ran{status}"


def partial_run(run: Invocation) -> str | None:
    """The sentence that marks a partial run or merge; None for a whole one (or a report older than format 7, which
    does not record how it ended)."""
    if not run.interrupted:
        return None
    tail = "; its counts, rollups and claims are of the items that ran only"
    inputs = [source for source in run.merged_from if source.interrupted]
    if inputs:
        each = "; ".join(f"{source.file or 'an input'} {_stopped(source)}" for source in inputs)
        return f"partial merge: {each}{tail}"
    return f"partial run: {_stopped(run)}{tail}"
