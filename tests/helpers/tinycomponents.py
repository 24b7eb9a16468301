"""A tiny bfloat16 Llama (two layers, two query heads sharing one key/value head) whose answer is known to pass
through one attention head at the cut and one MLP at the cut, for testing component patching.

Token ids are plain integers (no tokenizer); every token embeds as its own one-hot direction. Layer 1's query head 0
attends uniformly (q = k = 0) and its value reads the KEY tokens (``A``, ``B``); o_proj writes head 0's output into
two flag directions (``FLAG_A``, ``FLAG_B``) and head 1's nowhere. Layer 1's MLP and layer 2's attention write
nothing. Layer 2's MLP turns the flags at a position into ``YES`` (A) and ``NO`` (B). So the answer at the cut comes
from head 1.0 at the cut (layer 1, head 0) and from MLP 2 at the cut, nothing else: the exact grid must find both.
"""

from __future__ import annotations

from .tinypatch import BOS, NO, VOCAB, YES, A, B, zeroed_llama  # noqa: F401  (the tokens tests use)

FLAG_A, FLAG_B = 13, 14
GAIN = 8.0


def component_model():
    import torch

    model = zeroed_llama(heads=2, head_dim=VOCAB // 2)
    with torch.no_grad():
        attention = model.model.layers[0].self_attn
        attention.v_proj.weight[0, A] = 1.0  # the shared value head: dim 0 "A is here", dim 1 "B is here"
        attention.v_proj.weight[1, B] = 1.0
        attention.o_proj.weight[FLAG_A, 0] = GAIN  # query head 0's slice is o_proj's input 0..7; head 1's is unused
        attention.o_proj.weight[FLAG_B, 1] = GAIN
        mlp = model.model.layers[1].mlp
        mlp.gate_proj.weight[0, FLAG_A] = mlp.up_proj.weight[0, FLAG_A] = 4.0  # silu(4x) * 4x: ~0 at 0, > 0 above
        mlp.gate_proj.weight[1, FLAG_B] = mlp.up_proj.weight[1, FLAG_B] = 4.0
        mlp.down_proj.weight[YES, 0] = 1.0
        mlp.down_proj.weight[NO, 1] = 1.0
        model.lm_head.weight[YES, YES] = 1.0
        model.lm_head.weight[NO, NO] = 1.0
    return model.to(torch.bfloat16).eval()


def split_model():
    """component_model with the path split over two edges: both query heads of layer 1 read the shared values and
    write half the flags each (head 1.0 from o_proj's input 0..7, head 1.1 from 8..15), so MLP 2 needs both heads'
    writes at the cut for the whole answer, and either alone carries half the flags."""
    import torch

    model = component_model()
    with torch.no_grad():
        o_proj = model.model.layers[0].self_attn.o_proj
        o_proj.weight.zero_()
        for offset in (0, VOCAB // 2):
            o_proj.weight[FLAG_A, offset] = GAIN / 2
            o_proj.weight[FLAG_B, offset + 1] = GAIN / 2
    return model
