"""A tiny bfloat16 Llama whose answer is known to sit at one token and one layer, for testing patching.

Token ids are plain integers (no tokenizer). Every token embeds as its own one-hot direction. Layer 1 is the
identity (attention and MLP write nothing). Layer 2's attention has q = k = 0, so the last position attends
uniformly to every position; its values read only the KEY tokens (``A`` and ``B``), and its output writes token A's
presence into the residual direction the head reads as token ``YES`` and B's into ``NO``. The MLPs write nothing.

So the answer at the last position comes from layer 2 reading the KEY token's layer-1 output (its embedding):
patching layer 1 at the KEY position restores the whole effect, every other cell before the last layer at the last
position restores nothing, and other differing tokens (``C`` vs ``D``) are ignored. Every logit but YES's and NO's
is 0.
"""

from __future__ import annotations

BOS, A, B, C, D, X, Y, Z, EQ, YES, NO = range(11)
VOCAB = 16
GAIN = 8.0  # how strongly the KEY token's presence is written, against the last token's own direction


def zeroed_llama(heads: int, head_dim: int):
    """A two-layer Llama of VOCAB dimensions that computes nothing yet: every weight 0 but one-hot embeddings and
    norms of 1, so that each test model writes only the weights its answer needs (in float32, under torch.no_grad,
    before its cast to bfloat16)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=VOCAB, hidden_size=VOCAB, intermediate_size=4, num_hidden_layers=2,
                         num_attention_heads=heads, num_key_value_heads=1, head_dim=head_dim,
                         max_position_embeddings=64, rms_norm_eps=1e-12, tie_word_embeddings=False,
                         bos_token_id=BOS, eos_token_id=BOS, pad_token_id=BOS)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
        model.model.embed_tokens.weight.copy_(torch.eye(VOCAB))
        for norm in [model.model.norm] + [n for layer in model.model.layers
                                          for n in (layer.input_layernorm, layer.post_attention_layernorm)]:
            norm.weight.fill_(1.0)
    return model


def answer_model(gain: float = GAIN):
    import torch

    model = zeroed_llama(heads=1, head_dim=VOCAB)
    with torch.no_grad():
        attention = model.model.layers[1].self_attn
        attention.v_proj.weight[0, A] = 1.0  # value dim 0: "token A is here"
        attention.v_proj.weight[1, B] = 1.0
        attention.o_proj.weight[YES, 0] = gain
        attention.o_proj.weight[NO, 1] = gain
        model.lm_head.weight[YES, YES] = 1.0
        model.lm_head.weight[NO, NO] = 1.0
    return model.to(torch.bfloat16).eval()
