"""The numeric paths a reading takes besides a plain full pass, each one function that the scoring and the numerics
probe (numerics.py) both call: a change in one (a library's KV cache, a kernel) changes the readings and the
fingerprint alike, never the one without the other.

- an incremental step on a KV cache (scoring/rows.py's text reading where the model cannot take a tree): `step`;
- every node of a tree of contexts in one call on a KV cache (the text reading's chains of one prompt, the tree of
  scoring/tree.py): `tree_step`, for a model whose attention takes a 4D mask as given (`takes_tree`); the same call
  through the decoder alone (`tree_hidden`), its head later in one product with other trees' (`head`), where the
  load measured that this gives tree_step's bits (`apart`);
- the float32 softmax (every run's other softmax, or its main one): `softmax32`.

The head computed a row at a time is row_readout.py's, the float32-matmul layers float32_matmul.py's. torch is
imported inside the functions.
"""

from __future__ import annotations

import copy
from typing import Any


def cache_of(output: Any) -> Any:
    """A forward pass's KV cache: transformers >= 5.2x names it `cache`; earlier, `past_key_values`."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else getattr(output, "past_key_values", None)


def cache_arg(model: Any) -> str:
    """The name under which `model`'s forward takes a cache."""
    import inspect

    forward = getattr(model, "forward", None)
    try:
        names = inspect.signature(forward).parameters if forward is not None else {}
    except (TypeError, ValueError):
        names = {}
    return "cache" if "cache" in names else "past_key_values"


def extendable(cache: Any, length: int) -> bool:
    """Whether a copy of `cache` can be cropped and extended to a context of `length` tokens exactly as a full pass
    would compute it: dynamic layers only, every sliding window longer than the context (a sliding layer keeps only
    its window, and cannot be cropped back past it)."""
    layers = getattr(cache, "layers", None)
    if not layers:
        return False
    for layer in layers:
        if type(layer).__name__ not in ("DynamicLayer", "DynamicSlidingWindowLayer"):
            return False
        window = getattr(layer, "sliding_window", None)
        if window is not None and length > int(window) - 1:
            return False
    return True


def step(model: Any, cache: Any, cached: int, start: int, feed: list[int], arg: str) -> Any:
    """The last position's logits ([1, vocab]) of a context whose first `start` tokens a copy of `cache` (holding
    `cached` tokens) keeps, fed `feed` after them: the copy is cropped to `start` tokens first."""
    import torch

    kept = copy.deepcopy(cache)
    kept.crop(start - cached)
    ids = torch.tensor([feed], dtype=torch.long, device=model.device)
    with torch.inference_mode():
        output = model(input_ids=ids, logits_to_keep=1, use_cache=True, **{arg: kept})
    return output.logits[:, -1, :]


# transformers' attention functions that add a 4D mask to the scores as it is given (masking_utils returns a 4D mask
# unchanged). Flash attention reads only padding, flex attention a block mask, a kernel registered by a user whatever
# it likes: a model on those keeps the per-context steps.
TREE_ATTENTION = ("eager", "sdpa")


def attention(model: Any) -> str:
    """The attention implementation `model`'s config names ("" where it names none)."""
    return str(getattr(getattr(model, "config", None), "_attn_implementation", None) or "")


def takes_tree(model: Any) -> bool:
    """Whether `model` can compute a tree of contexts in one call (tree_step); where not, the text reading steps."""
    return attention(model) in TREE_ATTENTION


def tree_step(model: Any, cache: Any, cached: int, start: int, tokens: list[int], positions: list[int],
              mask: list[list[bool]], arg: str) -> Any:
    """The logits ([len(tokens), vocab]) of every node of a tree (scoring/tree.Tree: its tokens, their position ids
    and which of the kept tokens and nodes each attends to) in one call on a copy of `cache` (holding `cached`
    tokens) cropped to `start` tokens. The mask is additive, 0 where a node attends and the dtype's lowest value
    elsewhere, as transformers' own eager mask is, so that eager and sdpa read it alike."""
    import torch

    with torch.inference_mode():
        output = model(**_tree_inputs(model, cache, cached, start, tokens, positions, mask, arg),
                       logits_to_keep=len(tokens))
    return output.logits[0]


def tree_hidden(model: Any, cache: Any, cached: int, start: int, tokens: list[int], positions: list[int],
                mask: list[list[bool]], arg: str) -> Any:
    """tree_step's call through the decoder alone: each node's last hidden state ([len(tokens), hidden]), which
    `head` turns into tree_step's logits where the model's head is only its output embeddings (`apart`)."""
    import torch

    with torch.inference_mode():
        output = model.get_decoder()(**_tree_inputs(model, cache, cached, start, tokens, positions, mask, arg))
    return output.last_hidden_state[0]


def head(model: Any, hidden: Any) -> Any:
    """The logits ([rows, vocab]) of hidden states ([rows, hidden]) through the model's output embeddings, in one
    product (a row at a time where row_readout applies), as the model's forward computes them from its decoder's."""
    import torch

    with torch.inference_mode():
        return model.get_output_embeddings()(hidden[None])[0]


def apart(model: Any, tree: Any, hidden: Any) -> bool:
    """Whether `hidden` (tree_hidden's) through `head`, alone and as the first rows of a product of twice as many,
    gives tree_step's logits `tree` bit for bit: then a tree's head can wait and be one product with other trees'
    (scoring/heads.py). A model whose forward does more after its head (a soft cap of the logits) fails here."""
    import torch

    twice = head(model, torch.cat([hidden, hidden.flip(0)]))
    return same_bits(head(model, hidden), tree) and same_bits(twice[: len(hidden)], tree)


def _tree_inputs(model: Any, cache: Any, cached: int, start: int, tokens: list[int], positions: list[int],
                 mask: list[list[bool]], arg: str) -> dict[str, Any]:
    import torch

    kept = copy.deepcopy(cache)
    kept.crop(start - cached)
    device, dtype = model.device, model.dtype
    allowed = torch.tensor(mask, dtype=torch.bool, device=device)
    additive = torch.zeros(allowed.shape, dtype=dtype, device=device).masked_fill(~allowed, torch.finfo(dtype).min)
    return {"input_ids": torch.tensor([tokens], dtype=torch.long, device=device),
            "position_ids": torch.tensor([positions], device=device), "attention_mask": additive[None, None],
            "use_cache": True, arg: kept}


def softmax32(logits: Any) -> Any:
    """The softmax in float32 over the last dimension."""
    import torch

    return torch.softmax(logits.float(), dim=-1)


def same_bits(a: Any, b: Any) -> bool:
    """Bit for bit, NaN included (torch.equal says a NaN differs from itself: a model that computes NaN is the
    guard's to name, not a shape's)."""
    import torch

    return a.shape == b.shape and torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))
