"""The typed record of a direction's edges and circuits (--gotchas-patch-edges; scoring/edges.py computes them,
scoring/circuits.py runs the circuits): pydantic dataclasses like the rest of results/schema.py, which holds them
under `Patching.edges`.

Every value is the patching metric, logit(target's correct) - logit(target's wrong) at the target's cut, computed in
float32 from the model's hidden states (scoring/head.py's float32 head), whatever --gotchas-patch-metric says: an
edge's score is a small number, and the model's dtype would round it to a few steps.
"""

from __future__ import annotations

from dataclasses import field

from pydantic import computed_field

from .faithfulness import area, faithfulness
from .typed import dataclass
from .vocabulary import EdgeCorruption, EdgeInput, EdgeNode


@dataclass
class Edge:
    """One edge: the write of an upstream node (``node`` of layer ``layer``, query head ``head``) at the direction's
    aligned position ``position`` (an index into `Patching.positions`), read there by a downstream input (``reads``
    of layer ``reads_layer``, head ``reads_head``: the query head for q, the key-value head for k and v). Its values
    are changes of the metric when that edge alone reads the source's write instead of the target's: estimated by
    EAP-IG and EAP, and measured by exact edge patching where it was verified."""

    node: EdgeNode
    layer: int  # 0: the embeddings
    head: int  # the query head for a head, else 0
    reads: EdgeInput
    reads_layer: int  # the logits read after the last layer: layers + 1
    reads_head: int
    position: int
    eap_ig: float  # EAP with integrated gradients (Hanna et al. 2024)
    eap: float  # EAP: the gradient at the target's own pass
    exact: float | None = None  # None: not in the verified sample


@dataclass
class CircuitPoint:
    """The circuit of the ``edges`` edges of highest |EAP-IG|: the metric with every other edge reading the source's
    write (``metric``), and with these edges reading it and every other its own (``complement``); with the mean
    corruption (`Edges.corrupt`), the chapter's mean write in place of the source's."""

    edges: int
    share: float | None  # the share of all edges MIB measures this size at; None: one of the small sizes
    metric: float
    complement: float


@dataclass
class Edges:
    """The edges of one patched direction (scoring/edges.py): the top edges by |EAP-IG| with their EAP scores and,
    for the first ``verified`` of them, their exact values; the faithfulness curve of circuits of the top edges
    (results/faithfulness.py); what it cost. Under the patching floor (results/effects.py) nothing is ranked:
    ``under_floor`` is true and the lists are empty."""

    steps: int  # EAP-IG's interpolation steps
    count: int  # edges of the graph: every upstream write read by every later input at each aligned position
    unpatched: float  # the full model: the target's own pass (float32 metric)
    source_value: float  # the source's own pass
    empty: float | None  # the empty circuit: every edge reads the source's write, or the chapter's mean (`corrupt`);
    # None: not run, under the floor
    top: list[Edge] = field(default_factory=list)
    curve: list[CircuitPoint] = field(default_factory=list)
    verified: int = 0  # the first `verified` of `top` were patched exactly
    under_floor: bool = False
    # Under a post-norm (Gemma 2 and 3) a head's edge recomputes the normed sum (scoring/edgegraph.py), so single
    # heads' write changes do not add up to the layer's: over every layer and aligned position, the sum of |their
    # sum - the layer's change| over the sum of |the layer's change|; None for a model without post-norms.
    head_gap: float | None = None
    batched: bool = True  # the circuits' rows as batches; False: a pass per row (a batch's full row differed)
    forward_passes: int = 0  # model calls for the scores, the circuits and the verification
    backward_passes: int = 0
    score_seconds: float = 0.0
    circuit_seconds: float = 0.0  # the curve and the verification
    # What the circuits' corrupted edges (and the empty circuit's) read: the source's write, or the mean over the
    # chapter's ``mean_of`` prompts (0 under the partner, and under the floor, where no circuit ran); the top edges'
    # scores and exact values are the pair's either way.
    corrupt: EdgeCorruption = EdgeCorruption.PARTNER
    mean_of: int = 0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def faithfulness(self) -> list[float | None]:
        """Each point's (metric - empty) / (unpatched - empty); None where the two agree."""
        return [None if self.empty is None else faithfulness(p.metric, self.empty, self.unpatched)
                for p in self.curve]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def complement_faithfulness(self) -> list[float | None]:
        return [None if self.empty is None else faithfulness(p.complement, self.empty, self.unpatched)
                for p in self.curve]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cpr(self) -> float | None:
        """MIB's area under the faithfulness curve over its shares (higher is better)."""
        mib = [(p.share, f) for p, f in zip(self.curve, self.faithfulness) if p.share is not None]
        return area([s for s, _ in mib], [f for _, f in mib])

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cmd(self) -> float | None:
        """MIB's area between the curve and 1 over its shares (lower is better)."""
        mib = [(p.share, f) for p, f in zip(self.curve, self.faithfulness) if p.share is not None]
        return area([s for s, _ in mib], [f for _, f in mib], from_one=True)
