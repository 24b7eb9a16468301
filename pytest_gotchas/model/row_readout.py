"""The head computed one row at a time (invariance.py): where a product of several rows rounds a row otherwise than
a product of that row alone, every row the head gives is then the bits of the reference pass (one kept position)."""

from __future__ import annotations

import functools
from typing import Any


def apply(model: Any) -> None:
    """Make `model`'s output embeddings compute each row alone."""
    import torch

    head = model.get_output_embeddings()
    if type(head) is _row_by_row():  # a copy of a model it was applied to
        return
    if type(head) is not torch.nn.Linear:
        raise TypeError(f"the head is a {type(head).__name__}, not a torch.nn.Linear")
    head.__class__ = _row_by_row()


def row_product(row: Any, weight: Any, bias: Any) -> Any:
    """One row's product with the head (the numerics probe reaches it through the head's rows: numerics.py)."""
    import torch

    return torch.nn.functional.linear(row, weight, bias)


@functools.cache
def _row_by_row() -> type:
    """The head's class, made on first use: torch is imported only by runs that load a model."""
    import torch

    class RowByRow(torch.nn.Linear):
        """A linear layer whose every output row is a product of one input row (the shape of ``logits_to_keep=1``)."""

        def forward(self, input: Any) -> Any:
            rows = input.reshape(-1, 1, 1, input.shape[-1]).unbind(0)  # each [1, 1, hidden], the reference's shape
            out = torch.cat([row_product(row, self.weight, self.bias) for row in rows])
            return out.reshape(*input.shape[:-1], out.shape[-1])

    return RowByRow
