"""The reading after every layer (--gotchas-layers): P(correct) and P(wrong) if the model stopped after layer k.

Each layer's logits come from lens.py (the model's own final norm, unembedding and output scaling applied to the
residual stream at the last position: the logit lens). The reading after layer k is the run's own reading (text or
token, plain, healed or a chain) computed by the same code as the final one, from layer k's probabilities at every
context it needs; so the last layer's reading equals the final reading exactly (the last layer is the model's own
logits, tests/plugin/test_layers.py checks it), and the chart shows the same quantity all the way down.
"""

from __future__ import annotations

from typing import Any

from ..results.effects import Floor, lead_under_floor
from ..results.schema import LayerReading
from ..results.vocabulary import ReadingName
from .cut import CutPlan
from .lens import LayerLogits, layer_logits
from .rows import Context, forward_groups
from .vocab import Vocab


class LayerRows:
    """Probabilities of every context after every layer, computed on demand, in the softmax dtype of the run."""

    def __init__(self, model: Any, softmax_dtype: str, batch_size: int) -> None:
        self.model, self.softmax_dtype, self.batch_size = model, softmax_dtype, batch_size
        self.logits: dict[Context, LayerLogits] = {}
        self.probs: dict[tuple[Context, int], Any] = {}

    def need(self, contexts: set[Context] | list[Context]) -> None:
        missing = sorted(c for c in set(contexts) if c not in self.logits)
        for group in forward_groups(missing, self.batch_size):
            self.logits.update(layer_logits(self.model, group))

    @property
    def layers(self) -> range:
        return next(iter(self.logits.values())).layers

    def row(self, context: Context, layer: int) -> Any:
        import torch

        key = (context, layer)
        if key not in self.probs:
            logits = self.logits[context].at(layer)
            if self.softmax_dtype == "float32":
                logits = logits.float()
            with torch.inference_mode():
                self.probs[key] = torch.softmax(logits, dim=-1).cpu()
        return self.probs[key]

    def at(self, layer: int) -> "LayerView":
        return LayerView(self, layer)


class LayerView:
    """The probabilities of one layer, read as readings.py reads the model's own (readings.Probabilities)."""

    def __init__(self, rows: LayerRows, layer: int) -> None:
        self.rows, self.layer = rows, layer

    def need(self, contexts: set[Context] | list[Context]) -> None:
        self.rows.need(contexts)

    def p(self, context: Context, token: int, other: bool = False) -> float:
        return float(self.rows.row(context, self.layer)[token])

    def total(self, context: Context, tokens: list[int], other: bool = False) -> float:
        import torch

        if not tokens:
            return 0.0
        row = self.rows.row(context, self.layer)
        return float(row[torch.tensor(tokens, dtype=torch.long)].double().sum())

    def largest(self, context: Context, tokens: list[int], k: int, other: bool = False) -> list[tuple[float, int]]:
        return []  # the layers' readings list no contributions


def layer_readings(model: Any, plan: CutPlan, texts: tuple[str, str, str], main: str, vocab: Vocab | None,
                   softmax_dtype: str, batch_size: int, decode: Any, floor: Floor = Floor()) -> list[LayerReading]:
    """The run's main reading after each layer, each marked where its two probabilities are closer than the effect
    ``floor`` in steps of ``softmax_dtype`` and in log ratio (results/effects.lead_under_floor)."""
    from .readings import text_reading, token_reading

    rows = LayerRows(model, softmax_dtype, batch_size)
    rows.need([plan.context_ids])
    out = []
    for layer in rows.layers:
        view = rows.at(layer)
        if main == ReadingName.TEXT and vocab is not None:
            reading = text_reading(plan, *texts, view, vocab, softmax_dtype, decode)
        else:
            view.need([plan.context_ids + chain[:i] for chain in (plan.correct_ids, plan.wrong_ids)
                       for i in range(len(chain))])
            reading = token_reading(plan, view, softmax_dtype)
        out.append(LayerReading(layer, reading.p_correct, reading.p_wrong,
                                lead_under_floor(reading.p_correct, reading.p_wrong, softmax_dtype, floor)))
    return out

