"""results/faithfulness.py, circuits.py and edges.py: MIB's sizes and areas, the faithfulness of a point, how the
estimates agree with exact values, where a circuit reproduces the model, and the edges that recur over a chapter."""

from __future__ import annotations

import pytest

from pytest_gotchas.results.circuits import CircuitPoint, Edge, Edges
from pytest_gotchas.results.edges import EdgeKey, agreement, recurring, reproduces_at
from pytest_gotchas.results.faithfulness import MIB_SHARES, area, circuit_sizes, faithfulness
from pytest_gotchas.results.schema import Patching
from pytest_gotchas.results.vocabulary import EdgeInput, EdgeNode


def test_the_sizes_are_mibs_shares_and_the_small_sizes_the_graph_has() -> None:
    assert circuit_sizes(20) == [(0, 0.001), (0, 0.002), (0, 0.005), (0, 0.01), (0, 0.02), (1, 0.05), (2, 0.1),
                                 (3, None), (4, 0.2), (5, None), (10, 0.5), (20, 1.0)]
    big = circuit_sizes(83386)
    assert [size for size, share in big if share is not None] == [83, 166, 416, 833, 1667, 4169, 8338, 16677,
                                                                   41693, 83386]
    assert [size for size, share in big if share is None] == [1, 2, 3, 4, 5, 10, 20, 50]


def test_faithfulness_and_mibs_areas() -> None:
    assert faithfulness(1.0, empty=-1.0, full=3.0) == 0.5 and faithfulness(2.0, 1.0, 1.0) is None
    ones = [1.0] * len(MIB_SHARES)
    assert area(MIB_SHARES, ones) == pytest.approx(0.999) and area(MIB_SHARES, ones, from_one=True) == 0.0
    # run_evaluation.py's trapezoids over the shares themselves: half way from 0.5 to 1 at 0.5 -> 1
    assert area([0.5, 1.0], [0.0, 1.0]) == 0.25 and area([0.5, 1.0], [0.0, 1.0], from_one=True) == 0.25
    assert area([0.5, 1.0], [None, 1.0]) is None and area([1.0], [1.0]) is None


def edge(exact: float | None, eap_ig: float, eap: float = 0.0, position: int = 0, **values: object) -> Edge:
    base = dict(node=EdgeNode.HEAD, layer=1, head=0, reads=EdgeInput.MLP, reads_layer=2, reads_head=0,
                position=position, eap_ig=eap_ig, eap=eap, exact=exact)
    return Edge(**{**base, **values})  # type: ignore[arg-type]


def edges(top: list[Edge], curve: list[CircuitPoint] | None = None, **values: object) -> Edges:
    base = dict(steps=5, count=100, unpatched=1.0, source_value=-1.0, empty=-1.0, top=top, curve=curve or [])
    return Edges(**{**base, **values})  # type: ignore[arg-type]


def test_agreement_counts_signs_and_the_median_error_of_the_effect() -> None:
    found = edges([edge(-1.0, -0.8, 0.5), edge(0.5, 0.1, 0.5), edge(0.0, 0.2, 0.0), edge(None, 9.0)])
    assert agreement(found) == agreement(found, "eap_ig")
    ig, eap = agreement(found), agreement(found, "eap")
    assert (ig.verified, ig.signs, ig.median_error) == (3, 2, pytest.approx(0.1))  # errors 0.2, 0.4, 0.2 of 2
    assert (eap.signs, eap.median_error) == (2, 0.0)  # a 0 agrees with a 0 only; errors 0.75, 0, 0


def test_a_circuit_reproduces_the_model_where_it_first_comes_within_a_tenth() -> None:
    curve = [CircuitPoint(edges=n, share=None, metric=m, complement=0.0) for n, m in ((1, -1.0), (2, 0.9),
                                                                                      (3, 1.5), (100, 1.0))]
    found = edges([], curve)
    assert found.faithfulness == [0.0, 0.95, 1.25, 1.0] and reproduces_at(found) == 2
    assert found.complement_faithfulness == [0.5] * 4
    assert reproduces_at(edges([], curve[:1])) is None
    assert edges([], curve, empty=None).faithfulness == [None] * 4


def direction(top: list[Edge], under: bool = False) -> Patching:
    return Patching(source="b", target="a", primer=None, source_ids=[2, 5, 9], target_ids=[2, 6, 9],
                    candidate_ids=[11, 12], layers=[1, 2], positions=[[1, 1], [2, 2]], tokens=["x", "y"],
                    unpatched=1.0, source_value=-1.0, cells=[[0.0, 0.0], [0.0, 0.0]], method="full",
                    edges=edges(top, under_floor=under))


def test_the_edges_that_recur_are_counted_apart_from_their_position_but_not_from_the_cut() -> None:
    at_cut, before = edge(1.0, 1.0, position=1), edge(1.0, 1.0, position=0)
    other = edge(1.0, 0.5, position=0, node=EdgeNode.MLP)
    found = recurring([direction([at_cut, other]), direction([at_cut, before]), direction([other]),
                       direction([at_cut], under=True)])
    key = EdgeKey(EdgeNode.HEAD, 1, 0, EdgeInput.MLP, 2, 0, True)
    assert [(r.key, r.directions, r.of) for r in found] == [(key, 2, 3), (EdgeKey(EdgeNode.MLP, 1, 0, EdgeInput.MLP,
                                                                                   2, 0, False), 2, 3)]
    assert recurring([direction([at_cut])]) == []
