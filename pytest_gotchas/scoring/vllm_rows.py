"""Next-token probabilities read through a vLLM engine (model/vllm.py), and the prefetch that puts every context of a
run to the engine in as few generate calls as the readings allow.

`VllmRows` is the source of probabilities the readings of scoring/readings.py read: a rows.Rows with
OnePassRows' `prompts`, reading exactly the contexts the one-pass transformers path decides (one_pass_contexts: each prompt's kept positions and the token readings' other contexts; then the text reading's
chains). Each context's logits row, as the engine computed it in the model's dtype, goes through Rows' own softmax in
that dtype and in float32: the same probabilities from the same logits, the same exact ties, the same top-k order
(ties by token id). What differs between the backends is the logits themselves (other kernels), and that every
context is a prompt of its own to the engine (prefix caching off), where transformers reads the prompt's positions
from one pass and steps the text reading's chains on its KV cache.

`prefetch` runs every planned case's readings against the contexts run so far. A reading that needs a context not
run yet stops there (NotFetched) and the context is noted; all noted contexts then go to the engine in one generate
call, and the stopped cases run again. The first call holds every context the plans name (each cut's context, the
token chains, the plain readings), the later ones the text reading's chains through shorter tokens, one level
each: a run makes 1 + (its deepest chain) calls, not one per case.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any

from .rows import Context, Rows, forward_contexts, main_positions, model_dtype


class NotFetched(Exception):
    """A context the prefetch has not run yet: this case's readings stop here for this round."""


class VllmRows(Rows):
    """Next-token probabilities of contexts through the engine, each softmax computed once, in both dtypes (Rows'
    own `_keep`), for exactly the contexts the one-pass transformers path reads (one_pass_contexts below, then
    whatever the text reading asks). Each context is a prompt of its own to the engine: counted as a full pass."""

    def __init__(self, engine: Any, softmax_dtype: str, batch_size: int, top_k: int) -> None:
        super().__init__(engine.model, softmax_dtype, batch_size, top_k)
        self.engine = engine
        self.full_contexts: list[Context] = []  # every context this object read, in order

    def prompts(self, plans: list[Any]) -> None:
        self.need(one_pass_contexts(plans))

    def need(self, contexts: set[Context] | list[Context]) -> None:
        wanted = sorted(set(contexts) - self.main.keys())
        missing = [c for c in wanted if c not in self.engine.logits]
        if missing:
            if self.engine.collecting is not None:
                self.engine.collecting.update(missing)
                raise NotFetched(len(missing))
            self.engine.fetch(missing)
            self.calls += 1
        dtype = model_dtype(self.model)
        for context in wanted:
            import torch

            self._keep([context], self.engine.logits[context].to(getattr(torch, dtype)).unsqueeze(0))
            self.full += 1
            self.tokens += len(context)
            self.full_contexts.append(context)


def one_pass_contexts(plans: list[Any]) -> set[Context]:
    """Every context rows.OnePassRows.prompts reads for the plans: each main pass's kept positions (as the
    prefix of the prompt that ends there) and every token-reading context outside them."""
    kept = {plan.prompt_ids[: position + 1] for plan in plans for position in main_positions(plan)}
    return kept | forward_contexts(plans)


def rows_of(engine: Any) -> Callable[[str, int, int, int], VllmRows]:
    """What readings.score_batch makes its rows with, for a model read through vLLM (batching is the engine's;
    there are no KV-cached steps, so `refeed` does not apply)."""
    return lambda softmax_dtype, batch_size, top_k, refeed: VllmRows(engine, softmax_dtype, batch_size, top_k)


def prefetch(engine: Any, jobs: Iterable[Callable[[], Any]], phase: Callable[[], AbstractContextManager[Any]]
             ) -> tuple[int, int]:
    """Run every job (one case's readings) until each has what it needs; the contexts the jobs stopped at go to the
    engine together, one generate call per round, timed by `phase`. Returns (generate calls, contexts run)."""
    pending, calls, ran = list(jobs), 0, 0
    while pending:
        engine.collecting = set()
        stopped = []
        try:
            for job in pending:
                try:
                    job()
                except NotFetched:
                    stopped.append(job)
        finally:
            wanted, engine.collecting = engine.collecting, None
        if not wanted:
            break
        with phase():
            ran += len(engine.fetch(wanted))
        calls += 1
        pending = stopped
    return calls, ran
