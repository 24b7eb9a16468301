"""Random tiny Llama and Gemma3 models of real arithmetic, and a prompt with a trie of chains past its back-off:
what the tree's tests (tests/unit/scoring/test_tree.py, test_heads.py) compute on."""

from __future__ import annotations

import torch


def random_model(kind: str, attention: str, dtype: torch.dtype, **config: object) -> torch.nn.Module:
    """A random Llama or Gemma3 (a sliding layer, then a full one), two layers of real arithmetic; `config` adds to
    its config."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig, LlamaConfig, LlamaForCausalLM

    shape = dict(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=16, max_position_embeddings=256, bos_token_id=2, eos_token_id=1,
                 pad_token_id=0, attn_implementation=attention, **config)
    torch.manual_seed(0)
    if kind == "llama":
        model = LlamaForCausalLM(LlamaConfig(**shape, tie_word_embeddings=False))
    else:
        model = Gemma3ForCausalLM(Gemma3TextConfig(**shape, sliding_window=64,
                                                   layer_types=["sliding_attention", "full_attention"]))
    return model.to(dtype).eval()


PROMPT = tuple([2] + [(7 + 31 * n) % 128 for n in range(20)])
START = len(PROMPT) - 2  # the back-off: the chains start two tokens before the prompt's end
CHAINS = [(5,), (9,), (5, 11), (5, 12, 13), (9, 14, 15, 16), (5, 12, 17)]
