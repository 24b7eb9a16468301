"""A toy decoder whose metric is linear in every component (no norms, no softmax, no nonlinearity), in float32 with
small integer weights, so every sum is exact: attribution patching must equal exact patching bit for bit on it.

It has the attribute layout components.py reads (``model.layers[k].self_attn.o_proj``, ``.mlp``, a head, a config)
and the call transformers models take (``input_ids``, ``logits_to_keep``, ``use_cache``)."""

from __future__ import annotations

from types import SimpleNamespace

VOCAB, HIDDEN, HEADS = 12, 8, 2


def linear_toy(layers: int = 2, seed: int = 0):
    import torch
    from torch import nn

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.v_proj = nn.Linear(HIDDEN, HIDDEN, bias=False)
            self.o_proj = nn.Linear(HIDDEN, HIDDEN, bias=False)

        def forward(self, hidden):  # a causal sum of values: linear in the stream, every head a slice of o_proj's input
            return self.o_proj(torch.cumsum(self.v_proj(hidden), dim=1)), None

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.self_attn = Attention()
            self.mlp = nn.Linear(HIDDEN, HIDDEN, bias=False)

        def forward(self, hidden, **kwargs):
            hidden = hidden + self.self_attn(hidden)[0]
            return hidden + self.mlp(hidden)

    class Inner(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed_tokens = nn.Embedding(VOCAB, HIDDEN)
            self.layers = nn.ModuleList(Layer() for _ in range(layers))

    class Toy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = Inner()
            self.lm_head = nn.Linear(HIDDEN, VOCAB, bias=False)
            self.config = SimpleNamespace(num_attention_heads=HEADS, final_logit_softcapping=None)

        @property
        def device(self):
            return self.lm_head.weight.device

        def get_input_embeddings(self):
            return self.model.embed_tokens

        def get_output_embeddings(self):
            return self.lm_head

        def forward(self, input_ids, logits_to_keep=1, use_cache=False):
            hidden = self.model.embed_tokens(input_ids)
            for layer in self.model.layers:
                hidden = layer(hidden)
            return SimpleNamespace(logits=self.lm_head(hidden[:, -logits_to_keep:]))

    torch.manual_seed(seed)
    model = Toy()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randint(-1, 2, parameter.shape).float())  # -1, 0, 1: every sum exact
    return model.eval()
