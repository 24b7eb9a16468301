"""The float32-matmul kernel path (kernels.py): a bfloat16 model's linear layers computed in float32."""

from __future__ import annotations

import functools
from typing import Any

from .kernels import FLOAT32_MATMUL


def apply(model: Any, kernels: str) -> int:
    """Put `model` on the kernel path `kernels`; returns how many linear layers it changed (0 for plain)."""
    if kernels != FLOAT32_MATMUL:
        return 0
    import torch

    head = model.get_output_embeddings()
    changed = 0
    for module in model.modules():
        if type(module) is torch.nn.Linear and module is not head and module.weight.dtype == torch.bfloat16:
            module.weight = torch.nn.Parameter(module.weight.detach().float(), requires_grad=False)
            if module.bias is not None:
                module.bias = torch.nn.Parameter(module.bias.detach().float(), requires_grad=False)
            module.__class__ = _float32_matmul()
            changed += 1
    return changed


def linear32(input: Any, weight: Any, bias: Any = None) -> Any:
    """`input` (bfloat16) read as float32 times float32 `weight`, rounded once to the input's dtype: the path's one
    product, which the numerics probe computes too (numerics.py), whichever path the run takes."""
    import torch

    return torch.nn.functional.linear(input.float(), weight.float(), None if bias is None else bias.float()
                                      ).to(input.dtype)


@functools.cache
def _float32_matmul() -> type:
    """The layer class, made on first use: torch is imported only by runs that load a model."""
    import torch

    class Float32Matmul(torch.nn.Linear):
        """A bfloat16 linear layer computed in float32: its weights are float32 copies of the bfloat16 ones."""

        def forward(self, input: Any) -> Any:
            return linear32(input, self.weight, self.bias)

    return Float32Matmul
