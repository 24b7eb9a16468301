"""A toy decoder whose metric is linear in every component (no norms, no softmax, no nonlinearity), in float32 with
small integer weights, so every sum is exact: attribution patching must equal exact patching bit for bit on it.

It has the attribute layout components.py reads (``model.layers[k].self_attn.o_proj``, ``.mlp``, a head, a config)
and the call transformers models take (``input_ids``, ``logits_to_keep``, ``use_cache``). cancelling_toy is the same
toy with one saturating MLP: the case where attribution patching misses and GradDrop does not."""

from __future__ import annotations

from types import SimpleNamespace

VOCAB, HIDDEN, HEADS = 12, 8, 2
KEY_ON, KEY_OFF, FILL, YES, NO = 4, 7, 5, 2, 3  # cancelling_toy's tokens


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


def cancelling_toy():
    """The toy (two layers) where a component's two paths to the metric cancel in the gradient but not in a patch:
    token KEY_ON (embedding 3 in stream dimension 1, KEY_OFF 0) is carried by layer 1's head 0 into dimension 0 at
    every later position, dimension 0 is the metric (logit YES, logit NO reads nothing), and layer 2's MLP writes
    -tanh(dimension 0) back into it. At the target's 0 the metric's gradient through layer 1's write is 1 (direct)
    - 1 (through tanh) = 0, so attribution patching estimates 0 for a patch that moves the metric by 3 - tanh(3):
    AtP*'s cancellation, which GradDrop (layer 2 held constant: gradient 1) sees."""
    import torch
    from torch import nn

    class Saturating(nn.Module):
        def forward(self, hidden):
            out = torch.zeros_like(hidden)
            out[..., 0] = -torch.tanh(hidden[..., 0])
            return out

    model = linear_toy(layers=2)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
        model.model.embed_tokens.weight[KEY_ON, 1] = 3.0
        attention = model.model.layers[0].self_attn
        attention.v_proj.weight[0, 1] = 1.0  # head 0's value dimension 0 reads stream dimension 1
        attention.o_proj.weight[0, 0] = 1.0  # and writes it to stream dimension 0
        model.lm_head.weight[YES, 0] = 1.0
    model.model.layers[1].mlp = Saturating()
    return model.eval()

