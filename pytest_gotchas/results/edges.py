"""What a direction's edges (schema.Patching.edges, results/circuits.Edges) say, as facts the reports put in words:
each top edge as a fraction of the effect, how well the estimates agree with exact edge patching, where the circuit
first reproduces the model, and which edges recur over a chapter's directions. Pure."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from .circuits import Edge, Edges
from .schema import Patching
from .vocabulary import EdgeInput, EdgeNode

NEAR = 0.1  # a circuit "reproduces" the model where its faithfulness is within this of 1
RECURRING_TOP = 10  # the top edges of each direction that count for recurrence


def effect(edges: Edges) -> float:
    """The direction's effect in the edges' float32 metric: the source's value less the target's."""
    return edges.source_value - edges.unpatched


@dataclass(frozen=True)
class Agreement:
    """How one score's estimates compare with the exact values of the verified edges."""

    verified: int
    signs: int  # estimates with the exact value's sign (a 0 agrees only with a 0)
    median_error: float | None  # the median |estimate - exact| as a fraction of |effect|; None: no effect


def agreement(edges: Edges, score: str = "eap_ig") -> Agreement:
    checked = [(getattr(e, score), e.exact) for e in edges.top if e.exact is not None]
    size = abs(effect(edges))
    signs = sum((a > 0) == (b > 0) and (a < 0) == (b < 0) for a, b in checked)
    error = statistics.median(abs(a - b) / size for a, b in checked) if checked and size else None
    return Agreement(len(checked), signs, error)


def reproduces_at(edges: Edges, near: float = NEAR) -> int | None:
    """The smallest circuit on the curve whose faithfulness is within ``near`` of 1; None when none is."""
    for point, value in zip(edges.curve, edges.faithfulness):
        if value is not None and abs(1 - value) <= near:
            return point.edges
    return None


def at_cut(patching: Patching, edge: Edge) -> bool:
    return patching.positions[edge.position][1] == len(patching.target_ids) - 1


@dataclass(frozen=True, order=True)
class EdgeKey:
    """An edge apart from its position, and whether it is at the cut: what two directions' edges share."""

    node: EdgeNode
    layer: int
    head: int
    reads: EdgeInput
    reads_layer: int
    reads_head: int
    cut: bool


def key(patching: Patching, edge: Edge) -> EdgeKey:
    return EdgeKey(edge.node, edge.layer, edge.head, edge.reads, edge.reads_layer, edge.reads_head,
                   at_cut(patching, edge))


@dataclass(frozen=True)
class Recurring:
    key: EdgeKey
    directions: int  # the directions whose top edges hold it
    of: int  # the directions ranked


def recurring(directions: list[Patching], top: int = RECURRING_TOP) -> list[Recurring]:
    """The edges (apart from position; at the cut or before it) in the top ``top`` of at least two of the ranked
    directions, most directions first; directions without edges or under the floor do not count."""
    ranked = [p for p in directions if p.edges is not None and not p.edges.under_floor]
    counts: dict[EdgeKey, int] = {}
    for p in ranked:
        assert p.edges is not None
        for found in {key(p, e) for e in p.edges.top[:top]}:
            counts[found] = counts.get(found, 0) + 1
    return [Recurring(k, n, len(ranked)) for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
            if n >= 2]
