"""One direction's edges (--gotchas-patch-edges), as the typed entry the report holds (results/circuits.Edges): the
scores of every edge (edges.py), the top ``k`` verified by exact edge patching, and the faithfulness curve of
circuits of the top edges (circuits.py, results/faithfulness.py), whose corrupted edges read the partner's writes or,
with --gotchas-patch-edges-corrupt mean, the chapter's mean (chaptermean.py); the scores and the verification read
the partner's either way.

A direction under the patching floor (results/effects.py, the floor the component grid stands on) is not scored:
its entry says so, with its float32 values, and holds no ranking, no fraction and no curve.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..results.circuits import CircuitPoint, Edge, Edges
from ..results.faithfulness import circuit_sizes
from ..results.vocabulary import EdgeCorruption
from .align import align
from .chaptermean import ChapterMean
from .edgegraph import Graph, Writes, deltas, graph_of
from .patching import CheckError, Ids, MemberPass, Reading, _metric

Values = dict[tuple[int, int], float]  # a span's metric (circuits.py's spans)
DEFAULT_STEPS = 5  # MIB's EAP-IG runs take 5 steps
DEFAULT_K = 10


@dataclass(frozen=True)
class EdgeConfig:
    """What --gotchas-patch-edges asks: EAP-IG's steps, how many top edges are verified and reported, and what the
    circuits' corrupted edges read (the partner's write or the chapter's mean, chaptermean.py)."""

    steps: int = DEFAULT_STEPS
    k: int = DEFAULT_K
    corrupt: EdgeCorruption = EdgeCorruption.PARTNER


def _aligned(graph: Graph, writes: Writes, side: int) -> Writes:
    """A member's writes at its side of the aligned positions (0: the source's s, 1: the target's t)."""
    at = [pair[side] for pair in graph.positions]
    return Writes(writes.nodes[:, at], writes.o[:, at], writes.attn[:, at])


def _spans(count: int, k: int, scored: int) -> list[tuple[int, int]]:
    """The rows to run: the full model, the empty circuit, the curve's circuits and complements, and each of the top
    k edges alone (of the ``scored`` edges whose score is not 0)."""
    return list(dict.fromkeys(_curve_spans(count) + _singles(k, scored)))


def _curve_spans(count: int) -> list[tuple[int, int]]:
    spans = [(count, count), (0, count)]
    for size, _ in circuit_sizes(count):
        spans += [(size, count), (0, size)]
    return spans


def _singles(k: int, scored: int) -> list[tuple[int, int]]:
    return [(j, j + 1) for j in range(min(k, scored))]


def _circuits(model: Any, graph: Graph, ranks: Any, count: int, k: int, scored: int, source: Writes,
              mean: Writes | None, target: MemberPass, ids: Ids, own: Reading) -> tuple[Values, Values, bool, int]:
    """The curve's metrics by span, the top edges' alone by span, whether every run was batched, and the model
    calls. With ``mean`` the curve's rows read the chapter's mean and the top edges alone still the source (their
    exact values verify the pair's scores), in two runs, each with the full row as its check (a span such as (0, 1),
    the top edge alone and the complement of the circuit of 1, is in both, read differently)."""
    if mean is None:
        values, batched, calls = _run_checked(model, graph, ranks, _spans(count, k, scored), source, target, ids, own)
        return values, values, batched, calls
    spans = list(dict.fromkeys(_curve_spans(count)))
    values, batched, calls = _run_checked(model, graph, ranks, spans, mean, target, ids, own)
    singles, alone, more = _run_checked(model, graph, ranks, [(count, count), *_singles(k, scored)], source, target,
                                        ids, own)
    return values, singles, batched and alone, calls + more


def _run_checked(model: Any, graph: Graph, ranks: Any, spans: list[tuple[int, int]], source: Writes,
                 target: MemberPass, ids: Ids, own: Reading) -> tuple[dict[tuple[int, int], float], bool, int]:
    """Each span's metric; a pass per row where the batch's full row is not the target's own pass bit for bit."""
    from .circuits import run_spans

    calls = 0
    for batched in (True, False):
        readings, made = run_spans(model, graph, ranks, spans, source, target.ids, ids, batched)
        calls += made
        if readings[0] == own:
            return {span: _metric(r) for span, r in zip(spans, readings)}, batched, calls
    raise CheckError(f"edge patching check failed: the full circuit (no edge from the source) gave "
                     f"{readings[0]!r}, the target's own pass {own!r}")


def _top(graph: Graph, found: Any, ranks: Any, values: Values, full: float, k: int) -> list[Edge]:
    import torch

    top = []
    for j in range(min(k, int(found.eap_ig.ne(0).sum()))):  # an edge scored 0 is not ranked above another
        p, i, u = (int(x) for x in torch.nonzero(ranks == j)[0])
        node, layer, head = graph.node(u)
        reads, reads_layer, reads_head = graph.input(i)
        exact = values.get((j, j + 1))
        top.append(Edge(node=node, layer=layer, head=head, reads=reads, reads_layer=reads_layer,
                        reads_head=reads_head, position=p, eap_ig=float(found.eap_ig[p, i, u]),
                        eap=float(found.eap[p, i, u]), exact=None if exact is None else exact - full))
    return top


def edge_entry(model: Any, source: MemberPass, target: MemberPass, ids: Ids, config: EdgeConfig,
               writes_of: Callable[[tuple[int, ...], Graph], Writes], under: bool,
               mean: Callable[[Graph], ChapterMean] | None = None) -> Edges:
    """The edges of one direction, source -> target; ``under``: the direction is under the patching floor;
    ``mean``: the chapter's mean writes (chaptermean.py, computed on first use) that the circuits read with the
    mean corruption."""
    from .edges import ranking, scores
    from .head import Float32Head

    head = Float32Head(model, ids)
    own, theirs = head.reading(target.head_input), head.reading(source.head_input)
    graph = graph_of(model, align(source.ids, target.ids).pairs)
    count = graph.count()
    corrupt = EdgeCorruption.PARTNER if mean is None else EdgeCorruption.MEAN
    if under:
        return Edges(steps=config.steps, count=count, unpatched=_metric(own), source_value=_metric(theirs),
                     empty=None, under_floor=True, corrupt=corrupt)
    chapter = None if mean is None else mean(graph)  # once per process: not this direction's seconds
    started = time.perf_counter()
    mine, yours = writes_of(source.ids, graph), writes_of(target.ids, graph)
    delta, gap = deltas(model, graph, mine, yours)
    found = scores(model, graph, ids, target.ids, mine, yours, delta, config.steps)
    ranks = ranking(found)
    scored = time.perf_counter() - started
    scored_edges = int(found.eap_ig.ne(0).sum())
    mean_writes = None if chapter is None else chapter.at([t for _, t in graph.positions], len(target.ids))
    values, singles, batched, calls = _circuits(model, graph, ranks, count, config.k, scored_edges,
                                                _aligned(graph, mine, 0), mean_writes, target, ids, own)
    full, sizes = values[(count, count)], circuit_sizes(count)
    curve = [CircuitPoint(edges=size, share=share, metric=values[(size, count)], complement=values[(0, size)])
             for size, share in sizes]
    return Edges(steps=config.steps, count=count, unpatched=_metric(own), source_value=_metric(theirs),
                 empty=values[(0, count)], top=_top(graph, found, ranks, singles, full, config.k), curve=curve,
                 verified=min(config.k, scored_edges), head_gap=gap, batched=batched,
                 forward_passes=found.passes + calls, backward_passes=found.passes, score_seconds=scored,
                 circuit_seconds=time.perf_counter() - started - scored,
                 corrupt=corrupt, mean_of=0 if chapter is None else chapter.prompts)
