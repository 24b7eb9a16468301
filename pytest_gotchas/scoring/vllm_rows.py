"""Next-token probabilities read through a vLLM engine (model/vllm.py), and the prefetch that puts every context of a
run to the engine in as few generate calls as the readings allow.

`VllmRows` is the source of probabilities the readings of scoring/readings.py read (its `Probabilities`, with what
`score_batch` counts: `main`, `top`, `other_dtype`, `calls`). Each context's logits row, as the engine computed it in
the model's dtype, goes through `torch.softmax` in that dtype and in float32, exactly as readings.Rows puts the
transformers model's logits: the same probabilities from the same logits, the same exact ties, the same top-k order
(ties by token id). What differs between the backends is the logits themselves (other kernels).

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

Context = tuple[int, ...]


class NotFetched(Exception):
    """A context the prefetch has not run yet: this case's readings stop here for this round."""


class VllmRows:
    """Next-token probabilities of contexts through the engine, each softmax computed once, in both dtypes."""

    def __init__(self, engine: Any, softmax_dtype: str, top_k: int) -> None:
        self.engine, self.softmax_dtype, self.top_k = engine, softmax_dtype, top_k
        self.model_dtype = str(engine.model.dtype).removeprefix("torch.")
        self.other_dtype = None if self.model_dtype == "float32" else (
            self.model_dtype if softmax_dtype == "float32" else "float32")
        self.main: dict[Context, Any] = {}
        self.other: dict[Context, Any] = {}
        self.top: dict[Context, tuple[tuple[int, float], ...]] = {}
        self.calls = 0  # generate calls made for this object (none once a prefetch ran its contexts)

    def need(self, contexts: set[Context] | list[Context]) -> None:
        wanted = set(contexts)
        missing = sorted(c for c in wanted if c not in self.engine.logits)
        if missing:
            if self.engine.collecting is not None:
                self.engine.collecting.update(missing)
                raise NotFetched(len(missing))
            self.engine.fetch(missing)
            self.calls += 1
        for context in sorted(wanted - self.main.keys()):
            self._softmax(context)

    def _softmax(self, context: Context) -> None:
        import torch

        logits = self.engine.logits[context].to(getattr(torch, self.model_dtype))
        in_model_dtype = torch.softmax(logits, dim=-1)
        in_float32 = torch.softmax(logits.float(), dim=-1) if logits.dtype != torch.float32 else None
        probs, other = in_model_dtype, in_float32
        if self.softmax_dtype == "float32" and in_float32 is not None:
            probs, other = in_float32, in_model_dtype
        top_p, top_i = torch.topk(probs, k=min(self.top_k, probs.shape[-1]))
        self.main[context] = probs
        if other is not None:
            self.other[context] = other
        # Ties in the list are ordered by token id, never by whatever topk returned.
        self.top[context] = tuple(sorted(zip(top_i.tolist(), top_p.tolist()), key=lambda item: (-item[1], item[0])))

    def p(self, context: Context, token: int, other: bool = False) -> float:
        return float((self.other if other else self.main)[context][token])

    def total(self, context: Context, tokens: list[int], other: bool = False) -> float:
        """The probability of any of `tokens`, summed in float64 (exact for a few bfloat16 values)."""
        if not tokens:
            return 0.0
        import torch

        row = (self.other if other else self.main)[context]
        return float(row[torch.tensor(tokens, dtype=torch.long)].double().sum())

    def largest(self, context: Context, tokens: list[int], k: int, other: bool = False) -> list[tuple[float, int]]:
        from .readings import largest

        return largest((self.other if other else self.main)[context], tokens, k)


def rows_of(engine: Any) -> Callable[[str, int, int], VllmRows]:
    """What readings.score_batch makes its rows with, for a model read through vLLM (batching is the engine's)."""
    return lambda softmax_dtype, batch_size, top_k: VllmRows(engine, softmax_dtype, top_k)


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
