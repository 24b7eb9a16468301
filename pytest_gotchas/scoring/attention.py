"""Where the heads that carry a direction's effect read from: the attention weights of chosen query heads at the
target's cut (its last position) over the target's tokens, for the page beside the component heatmaps.

The weights come from one more pass of the target with transformers' eager attention, the only implementation that
returns them (sdpa and flash kernels do not form the matrix); the model's own implementation is restored after it.
Eager and sdpa round differently, so the weights are for reading which tokens a head attends to, not for comparing
bits with the patched cells.
"""

from __future__ import annotations

from typing import Any

from .hooks import Hooks
from .patching import find_layers


def cut_patterns(model: Any, ids: tuple[int, ...], heads: list[tuple[int, int]]) -> dict[tuple[int, int], list[float]]:
    """For each (layer, query head) of ``heads`` (layers numbered from 1), its attention weights at the last of
    ``ids`` over every position of ``ids``."""
    import torch

    if not heads:
        return {}
    layers = find_layers(model)[1]
    kept: dict[int, Any] = {}

    def keep(k: int) -> Any:
        def hook(module: Any, args: Any, output: Any) -> None:
            if isinstance(output, tuple) and len(output) > 1 and output[1] is not None:
                kept[k] = output[1][0, :, -1].float().cpu()  # [heads, key positions] at the last query
        return hook

    was = model.config._attn_implementation
    with Hooks() as hooks:
        for k in sorted({h[0] for h in heads}):
            hooks.after(layers[k - 1].self_attn, keep(k))
        try:
            model.set_attn_implementation("eager")
            with torch.inference_mode():
                model(input_ids=torch.tensor([list(ids)], device=model.device), logits_to_keep=1, use_cache=False,
                      output_attentions=True)
        finally:
            model.set_attn_implementation(was)
    missing = sorted({h[0] for h in heads} - set(kept))
    if missing:
        raise RuntimeError(f"attention weights not returned by layer(s) {missing} under eager attention")
    return {(layer, head): [float(w) for w in kept[layer][head]] for layer, head in heads}
