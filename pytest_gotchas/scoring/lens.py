"""The per-layer reading (the logit lens): the next-token logits the model would give if it stopped after layer k.

One forward pass per batch of equal-length contexts, with ``output_hidden_states=True`` and, like readings.py,
``logits_to_keep=1, use_cache=False``. Each layer's hidden state goes through the model's own final norm, its
unembedding (``lm_head``) and the output scaling its forward applies after it (Gemma 2's final logit soft-capping,
Cohere's ``logit_scale``, Granite's ``logits_scaling``), op for op as the model's forward does: layer k's logits are
what the model truncated after layer k would compute (tests/unit/scoring/test_lens.py checks this bit for bit at
every layer).

Layer numbering: layer k is the reading after the k-th decoder layer, k = 1..N; the last one, N, is the model's own
reading. With ``embeddings=True`` the embeddings read through the same norm and head are layer 0.

What transformers' ``hidden_states`` hold (transformers 5): entry 0 is the embeddings, entries 1..N-1 the outputs of
layers 1..N-1 (not normed), and entry N is already passed through the final norm (it is the model's
``last_hidden_state``): the final norm is applied to all entries but the last.

The last layer's logits are recomputed from the hidden state and compared with the logits the same pass returned:
bit-identical on every model tests/unit/scoring/test_lens.py tries (tiny Gemma 3 with and without soft-capping,
Llama, GPT-2, Cohere, Granite) and tests/e2e/test_layer_readings.py (gemma-3-270m and SmolLM2-135M).
The returned last row is always the model's own logits, so that the last layer agrees with readings.py's reading;
``exact`` says whether the recomputation matched bit for bit. A recomputation that is not even close means the
model does to its logits something this module does not know, and raises LensError rather than show wrong layers.

torch is imported inside the functions that need it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Context = tuple[int, ...]

# Where the final norm lives, per layout: Llama, Gemma, Mistral, Qwen and their kind; GPT-2.
NORM_PATHS = ("model.norm", "transformer.ln_f")
HEAD_PATHS = ("lm_head",)
# How far a recomputed final logit may be from the model's before it is an unknown scaling, not a rounding
# difference: relative to the largest logit (bfloat16 keeps 8 bits; a few roundings at most).
CLOSE = 2.0**-5

class LensError(Exception):
    """The layers of this model cannot be read; the message names the model's class and what is missing."""


@dataclass(frozen=True)
class Readout:
    """How a hidden state becomes logits in this model: final norm, unembedding, then the output scaling."""

    norm: Any  # torch module
    head: Any  # torch module: hidden -> vocabulary
    softcap: float | None  # logits = tanh(logits / cap) * cap (Gemma 2; None in Gemma 3)
    multiply: float | None  # logits = logits * scale (Cohere's logit_scale)
    divide: float | None  # logits = logits / scale (Granite's logits_scaling)
    last_is_normed: bool  # hidden_states[-1] is the final norm's output (transformers' tie_last_hidden_states)
    where: str  # "model.norm + lm_head": what was found


@dataclass(frozen=True)
class LayerLogits:
    """One context's next-token logits after every layer, in the model's dtype, on the model's device."""

    first_layer: int  # 0 when the embeddings are included, else 1
    logits: Any  # torch tensor [layers, vocab]; row i is after layer first_layer + i; the last row is the model's own
    exact: bool  # the recomputed last layer was bit-identical to the model's own logits

    @property
    def layers(self) -> range:
        """The layer numbers of the rows."""
        return range(self.first_layer, self.first_layer + self.logits.shape[0])

    @property
    def last_layer(self) -> int:
        return self.first_layer + self.logits.shape[0] - 1

    def at(self, layer: int) -> Any:
        """The logits after ``layer`` (a vocab-sized tensor)."""
        if layer not in self.layers:
            raise IndexError(f"layer {layer} is not among layers {self.first_layer}..{self.last_layer}")
        return self.logits[layer - self.first_layer]


def attribute(model: Any, path: str) -> Any:
    """The submodule at a dotted path (``model.norm``), or None where any step of it is missing."""
    found = model
    for name in path.split("."):
        found = getattr(found, name, None)
        if found is None:
            return None
    return found


def _number(config: Any, name: str) -> float | None:
    value = getattr(config, name, None)
    return None if value is None else float(value)


def find_readout(model: Any) -> Readout:
    """The final norm, unembedding and output scaling of ``model``; LensError names its class when not found."""
    name = type(model).__name__
    norm_path = next((p for p in NORM_PATHS if attribute(model, p) is not None), None)
    if norm_path is None:
        raise LensError(f"cannot read layers of model class {name}: no final norm found "
                        f"(looked for {', '.join(NORM_PATHS)})")
    head_path = next((p for p in HEAD_PATHS if attribute(model, p) is not None), None)
    if head_path is None:
        raise LensError(f"cannot read layers of model class {name}: no unembedding found "
                        f"(looked for {', '.join(HEAD_PATHS)})")
    config = model.config
    multiply = getattr(model, "logit_scale", None)  # Cohere keeps it on the model, from config.logit_scale
    tie = getattr(config, "tie_last_hidden_states", None)
    return Readout(
        norm=attribute(model, norm_path),
        head=attribute(model, head_path),
        softcap=_number(config, "final_logit_softcapping"),
        multiply=None if multiply is None else float(multiply),
        divide=_number(config, "logits_scaling"),
        last_is_normed=True if tie is None else bool(tie),
        where=f"{norm_path} + {head_path}",
    )


def _last_position(readout: Readout, hidden: Any, normed: bool) -> Any:
    """The final-normed hidden state at the last position, [batch, 1, hidden], from [batch, positions, hidden]."""
    if not normed:
        hidden = readout.norm(hidden)  # over every position, as a model that stopped here would
    return hidden[:, -1:, :]  # logits_to_keep=1: the same slice, the same shape


def _unembed(readout: Readout, hidden: Any) -> Any:
    """Logits from final-normed hidden states [rows, 1, hidden]: the unembedding and the output scaling, in the
    model's order and dtype."""
    import torch

    logits = readout.head(hidden)
    if readout.softcap is not None:
        logits = logits / readout.softcap
        logits = torch.tanh(logits)
        logits = logits * readout.softcap
    if readout.multiply is not None:
        logits = logits * readout.multiply
    if readout.divide is not None:
        logits = logits / readout.divide
    return logits[:, -1, :]


def layer_logits(model: Any, contexts: Sequence[Context], embeddings: bool = False) -> dict[Context, LayerLogits]:
    """Per context, the next-token logits after every layer, from ONE forward pass over the batch.

    ``contexts`` must all have the same length (no padding: it changes bfloat16 logits; score.forward_groups makes
    such batches). Layers 1..N, and 0 (the embeddings) first with ``embeddings=True``. Raises LensError when the
    layers cannot be read (no final norm or unembedding found, or an output scaling this module does not know).

    Every layer's last-position vector goes through the unembedding in one matrix product: one product per layer
    reads the whole unembedding matrix each time (gemma-3-270m: 18 x 335 MB). On CPU, 150 tokens, gemma-3-270m in
    bfloat16 took 1.2-1.3 times the plain pass this way, 3.4-3.9 times with a product per layer; asking for the
    hidden states alone costs nothing measurable. On CPU the rows came out bit-identical to one product per layer;
    a GPU may round them differently (the last row is checked either way).
    """
    import torch

    if not contexts:
        return {}
    if len({len(c) for c in contexts}) != 1:
        raise ValueError("layer_logits needs contexts of equal length (padding changes the logits)")
    readout = find_readout(model)
    input_ids = torch.tensor(list(contexts), dtype=torch.long, device=model.device)
    with torch.inference_mode():
        out = model(input_ids=input_ids, logits_to_keep=1, use_cache=False, output_hidden_states=True)
        final = out.logits[:, -1, :]
        states = out.hidden_states
        last = len(states) - 1
        first = 0 if embeddings else 1
        # .to: with device_map="auto" the layers' states may lie on several devices; a no-op otherwise.
        vectors = [_last_position(readout, states[k], normed=k == last and readout.last_is_normed).to(final.device)
                   for k in range(first, last + 1)]
        batch = len(contexts)
        logits = _unembed(readout, torch.cat(vectors, dim=0)).view(len(vectors), batch, -1)  # layer-major rows
        exact = logits.dtype == final.dtype and torch.equal(logits[-1], final)
        if not exact:
            _check_close(model, readout, logits[-1], final)
            logits = logits.to(final.dtype)
            logits[-1] = final  # the last layer is always the model's own reading
        logits = logits.transpose(0, 1)  # [contexts, layers, vocab]
    return {context: LayerLogits(first, logits[n], exact) for n, context in enumerate(contexts)}


def _check_close(model: Any, readout: Readout, recomputed: Any, final: Any) -> None:
    known = f"cannot read layers of model class {type(model).__name__}: its logits are not {readout.where} " \
            f"with the output scaling lens.py knows"
    if recomputed.shape != final.shape:
        raise LensError(f"{known} (the last layer recomputed has shape {tuple(recomputed.shape)}, "
                        f"the model's logits {tuple(final.shape)})")
    scale = final.float().abs().max().item() or 1.0
    difference = (recomputed.float() - final.float()).abs().max().item()
    if not difference <= CLOSE * scale:  # NaN too
        raise LensError(f"{known} (the last layer recomputed differs from the model's logits by up to "
                        f"{difference:g}, largest logit {scale:g})")


def layer_probabilities(layers: LayerLogits, ids: Sequence[int], softmax_dtype: str | None = None
                        ) -> dict[int, dict[int, float]]:
    """{layer: {token id: probability}}: the softmax over the vocabulary after each layer.

    In the logits' dtype by default (the model's, as readings.py's reading), or ``softmax_dtype="float32"``.
    """
    import torch

    logits = layers.logits if softmax_dtype is None else layers.logits.to(getattr(torch, softmax_dtype))
    with torch.inference_mode():
        probs = torch.softmax(logits, dim=-1)[:, list(ids)].tolist()
    return {layer: dict(zip(ids, row)) for layer, row in zip(layers.layers, probs)}
