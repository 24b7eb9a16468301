"""Next-token probabilities read as whole logits rows per context from a backend that computes each context as a
prompt of its own (backends/protocol.ContextLogits: the vLLM engine, a server), and the prefetch that puts every
context of a run to it in as few calls as the readings allow.

`EngineRows` is the source of probabilities the readings of scoring/readings.py read: a rows.Rows with
OnePassRows' `prompts`, reading exactly the contexts the one-pass transformers path decides (one_pass_contexts: each
prompt's kept positions and the token readings' other contexts; then the text reading's chains). Each context's
logits row, as the backend computed it in the model's dtype, goes through Rows' own softmax in that dtype and in
float32: the same probabilities from the same logits, the same exact ties, the same top-k order (ties by token id).
What differs between the backends is the logits themselves (other kernels), and that every context is a prompt of its
own to the engine (prefix caching off), where transformers reads the prompt's positions from one pass and steps the
text reading's chains on its KV cache.

`prefetch` runs every planned case's readings against the contexts fetched so far. A reading that needs a context not
fetched yet stops there (NotFetched) and the context is noted; all noted contexts then go to the backend in one call,
and the stopped cases run again. The first call holds every context the plans name (each cut's context, the token
chains, the plain readings), the later ones the text reading's chains through shorter tokens, one level each: a run
makes 1 + (its deepest chain) calls, not one per case.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any

from ..backends.protocol import ContextLogits
from .rows import Context, Rows, forward_contexts, main_positions


class NotFetched(Exception):
    """A context the prefetch has not fetched yet: this case's readings stop here for this round."""


class Fetcher:
    """One backend's rows by context, and while a prefetch round runs, the contexts its readings asked for."""

    def __init__(self, source: ContextLogits, dtype: str) -> None:
        self.source, self.dtype = source, dtype
        self.collecting: set[Context] | None = None


class EngineRows(Rows):
    """Next-token probabilities of contexts from a backend's logits rows, each softmax computed once, in both dtypes
    (Rows' own `_keep`), for exactly the contexts the one-pass transformers path reads (one_pass_contexts below,
    then whatever the text reading asks). Each context is a prompt of its own to the backend: counted as a full
    pass."""

    def __init__(self, fetcher: Fetcher, softmax_dtype: str, batch_size: int, top_k: int) -> None:
        super().__init__(None, softmax_dtype, batch_size, top_k, dtype=fetcher.dtype)
        self.fetcher = fetcher
        self.full_contexts: list[Context] = []  # every context this object read, in order

    def prompts(self, plans: list[Any]) -> None:
        self.need(one_pass_contexts(plans))

    def need(self, contexts: set[Context] | list[Context]) -> None:
        source = self.fetcher.source
        wanted = sorted(set(contexts) - self.main.keys())
        missing = [c for c in wanted if c not in source.logits]
        if missing:
            if self.fetcher.collecting is not None:
                self.fetcher.collecting.update(missing)
                raise NotFetched(len(missing))
            source.fetch(missing)
            self.calls += 1
        for context in wanted:
            import torch

            self._keep([context], source.logits[context].to(getattr(torch, self.fetcher.dtype)).unsqueeze(0))
            self.full += 1
            self._owe(1, 0)
            self.tokens += len(context)
            self.full_contexts.append(context)


def one_pass_contexts(plans: list[Any]) -> set[Context]:
    """Every context rows.OnePassRows.prompts reads for the plans: each main pass's kept positions (as the
    prefix of the prompt that ends there) and every token-reading context outside them."""
    kept = {plan.prompt_ids[: position + 1] for plan in plans for position in main_positions(plan)}
    return kept | forward_contexts(plans)


def rows_of(fetcher: Fetcher) -> Callable[[str, int, int, int], EngineRows]:
    """What readings.score_batch makes its rows with, for a backend that gives rows by context (batching is the
    backend's; there are no KV-cached steps, so `refeed` does not apply)."""
    return lambda softmax_dtype, batch_size, top_k, refeed: EngineRows(fetcher, softmax_dtype, batch_size, top_k)


def prefetch(fetcher: Fetcher, jobs: Iterable[Callable[[], Any]], phase: Callable[[], AbstractContextManager[Any]]
             ) -> tuple[int, int]:
    """Run every job (one case's readings) until each has what it needs; the contexts the jobs stopped at go to the
    backend together, one call per round, timed by `phase`. Returns (calls, contexts fetched)."""
    pending, calls, ran = list(jobs), 0, 0
    while pending:
        fetcher.collecting = set()
        stopped = []
        try:
            for job in pending:
                try:
                    job()
                except NotFetched:
                    stopped.append(job)
        finally:
            wanted, fetcher.collecting = fetcher.collecting, None
        if not wanted:
            break
        with phase():
            ran += len(fetcher.source.fetch(wanted))
        calls += 1
        pending = stopped
    return calls, ran
