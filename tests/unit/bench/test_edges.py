"""bench/edges.py: the graph's counts agree with scoring/edgegraph.Graph's, and the FLOP count grows as the passes
and rows it counts."""

from __future__ import annotations

from bench.edges import edge_flops, forward_flops, graph_counts
from bench.patching import Shape

from pytest_gotchas.scoring.edgegraph import Graph

TOY = Shape("toy", 3, 8, 16, 4, 2, 2, 32)


def test_the_counts_are_the_graphs() -> None:
    graph = Graph(3, 4, 2, 2, False, ((1, 1), (2, 2), (3, 3)))
    nodes, inputs, count, _ = graph_counts(TOY, 3)
    assert (nodes, inputs, count) == (graph.nodes, graph.inputs, graph.count())


def test_more_steps_cost_three_passes_a_step_and_more_rows_a_pass_each() -> None:
    one = forward_flops(TOY, 10)
    assert edge_flops(TOY, 10, 3, 6, 10) - edge_flops(TOY, 10, 3, 5, 10) == 3 * one
    nodes, _, _, reads = graph_counts(TOY, 3)
    assert edge_flops(TOY, 10, 3, 5, 11) - edge_flops(TOY, 10, 3, 5, 10) == one + 2 * (reads * 3 + nodes) * 8
