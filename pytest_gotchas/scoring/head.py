"""The dtype of patching's metric (--gotchas-patch-metric): the two logits as the model computes them (``model``), or
the head's product for the two candidates in float32 (``float32``) from the same hidden states.

In bfloat16 a pair's effect is often a few steps of a logit (gemma-3-270m's list-vs-set-reversed: 0.1875, three
steps of 0.0625), so a fraction restored is a multiple of a third there. ``float32`` changes nothing upstream: the
final norm's output at the cut is the model's own, in its dtype; only the head's product for the target's two
candidates (and the architecture's final soft-capping, when it has one) is computed in float32. It is computed one
row at a time, the same product for a batch's row as for a pass alone, so patching's bit-for-bit checks still hold.
The other logits of such a pass are 0 (nothing reads them). torch is imported inside the functions that need it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from ..results.vocabulary import PatchMetric
from .hooks import Hooks

METRICS = tuple(PatchMetric)


def head_of(model: Any) -> Any:
    """The module that turns the final norm's output into logits (the LM head)."""
    return model.get_output_embeddings()


class Float32Head:
    """The two candidates' rows of the head's weight, in float32, and their product with a hidden state."""

    def __init__(self, model: Any, ids: Sequence[int]) -> None:
        weight = head_of(model).weight
        self.ids = list(ids)
        self.weight = weight.detach()[self.ids].float().T.contiguous()  # [hidden, 2]
        self.cap = getattr(getattr(model, "config", None), "final_logit_softcapping", None)

    def product(self, vector: Any) -> Any:
        """The two logits [2] (float32, before any soft-capping) of one hidden state [hidden]."""
        return vector.to(self.weight.device).float() @ self.weight

    def reading(self, vector: Any) -> tuple[float, float]:
        """The two logits of one head input as the model would finish them (soft-capped where it caps), in float32."""
        import torch

        logits = self.product(vector)
        if self.cap is not None:  # as Gemma's forward does after the head: logits / cap -> tanh -> * cap
            logits = torch.tanh(logits / self.cap) * self.cap
        return float(logits[0]), float(logits[1])


@contextmanager
def float32_head(model: Any, ids: Sequence[int]) -> Iterator[Float32Head]:
    """Within it, the model's head returns float32 logits holding the two candidates' products (row by row) and 0
    elsewhere; the model's own soft-capping then runs on them in float32."""
    import torch

    float32 = Float32Head(model, ids)

    def hook(module: Any, args: Any, output: Any) -> Any:
        hidden = args[0]
        out = torch.zeros(output.shape, dtype=torch.float32, device=output.device)
        flat, rows = hidden.reshape(-1, hidden.shape[-1]), out.view(-1, output.shape[-1])
        for r in range(flat.shape[0]):
            rows[r, float32.ids] = float32.product(flat[r]).to(out.device)
        return out

    with Hooks() as hooks:
        hooks.after(head_of(model), hook)
        yield float32
