"""The words and the page of --gotchas-patch-edges (report/wording_edges.py, page_edges.py): each edge named with
its place, the direction's line, the floor's sentence, the graph and the curve as inline SVG with their details on
hover and no script, and the chapter's recurring edges; made from Patching entries written by hand."""

from __future__ import annotations

import dataclasses

import pytest

from helpers.results import TINY_MODEL, report_of

from pytest_gotchas.report import html
from pytest_gotchas.report.page_edges import CURVE_H, CURVE_PAD, curve_view, edges_view, graph_view
from pytest_gotchas.report.wording_edges import edge_name, edges_line, top_rows
from pytest_gotchas.results.circuits import CircuitPoint, Edge, Edges
from pytest_gotchas.results.schema import Patching
from pytest_gotchas.results.vocabulary import EdgeInput, EdgeNode

TOP = [Edge(node=EdgeNode.HEAD, layer=1, head=0, reads=EdgeInput.MLP, reads_layer=2, reads_head=0, position=2,
            eap_ig=-1.5, eap=-0.5, exact=-2.0),
       Edge(node=EdgeNode.EMBED, layer=0, head=0, reads=EdgeInput.VALUE, reads_layer=1, reads_head=0, position=0,
            eap_ig=-1.0, eap=0.0, exact=-1.0),
       Edge(node=EdgeNode.MLP, layer=2, head=0, reads=EdgeInput.LOGITS, reads_layer=3, reads_head=0, position=2,
            eap_ig=0.5, eap=0.5, exact=None)]
CURVE = [CircuitPoint(edges=n, share=s, metric=m, complement=c)
         for n, s, m, c in ((0, 0.001, -2.0, 2.0), (1, None, 0.0, 1.0), (2, None, 2.0, -2.0), (40, 1.0, 2.0, -2.0))]


def direction(**edge_values: object) -> Patching:
    edges = Edges(**{**dict(steps=5, count=40, unpatched=2.0, source_value=-2.0, empty=-2.0, top=TOP, curve=CURVE,
                            verified=2), **edge_values})  # type: ignore[arg-type]
    return Patching(source="b", target="a", primer=None, source_ids=[2, 5, 9, 7], target_ids=[2, 6, 9, 8],
                    candidate_ids=[11, 12], layers=[1, 2], positions=[[1, 1], [2, 2], [3, 3]],
                    tokens=["list", "(", "<\n>"], source_tokens=["set", "(", "<\n>"], unpatched=2.0,
                    source_value=-2.0, cells=[[0.0] * 3] * 2, method="full", group="ab", prefix=1, edges=edges)


def test_an_edge_is_named_with_its_reader_and_its_place() -> None:
    p = direction()
    assert [edge_name(p, e) for e in TOP] == [
        "head 1.0 -> MLP 2 at the cut", "the embeddings -> key-value head 1.0's value at 'set' -> 'list' (positions "
        "1 -> 1)", "MLP 2 -> the logits at the cut"]
    assert top_rows(p)[0] == ("1", "head 1.0 -> MLP 2 at the cut", "38%", "12%", "50%")
    assert top_rows(p)[2][-1] == "not verified"


def test_the_line_names_the_top_three_the_agreement_and_the_circuits() -> None:
    assert edges_line(direction()) == (
        "edges b -> a: head 1.0 -> MLP 2 at the cut 50% exact (EAP-IG 38%), the embeddings -> key-value head 1.0's "
        "value at 'set' -> 'list' (positions 1 -> 1) 25% exact (EAP-IG 25%), MLP 2 -> the logits at the cut not "
        "verified (EAP-IG -12%); EAP-IG has the exact sign for 2 of 2, median error 6% of the effect; EAP has the exact sign "
        "for 1 of 2, median error 31% of the effect; circuits within 10% of the model from 2 of 40 edges; MIB's CPR "
        "0.50, CMD 0.50")
    under = edges_line(direction(top=[], curve=[], empty=None, under_floor=True))
    assert under == ("edges b -> a: not ranked: the direction's effect is under the patching floor "
                     "(results/effects.py; -4 in the float32 metric), so no edge, fraction or circuit is given")


def test_the_graph_joins_each_write_to_its_reader_as_wide_as_its_share() -> None:
    graph = graph_view(direction())
    assert graph is not None and len(graph.lines) == 3
    assert [line.width for line in graph.lines] == [3.5, 2.25, 1.62]  # 1 + 5 x |exact share| (EAP-IG unverified)
    assert [line.colour for line in graph.lines] == ["rgb(33,102,172)", "rgb(33,102,172)", "rgb(178,24,43)"]
    assert graph.lines[0].title.startswith("1. head 1.0 -> MLP 2 at the cut: exact 50%, EAP-IG 38%, EAP 12%")
    assert [d.title for d in graph.dots][:2] == ["head 1.0's write", "MLP 2"]
    assert [label.text for label in graph.labels][-2:] == ["'set' -> 'list'", "the cut"]  # two positions used
    assert graph_view(direction(top=[], curve=[], empty=None, under_floor=True)) is None


def test_the_curve_runs_over_log_sizes_and_is_clipped() -> None:
    curve = curve_view(direction())
    assert curve is not None and len(curve.dots) == 3  # the empty circuit (size 0) has no place on a log scale
    ys = [float(point.split(",")[1]) for point in curve.circuit.split()]
    assert ys == pytest.approx([(curve.one + curve.zero) / 2, curve.one, curve.one], abs=0.05)  # 0.5, 1, 1
    assert curve.dots[0].title == "top 1 edges: faithfulness 0.500, complement 0.750"
    clipped = curve_view(direction(curve=[CircuitPoint(edges=1, share=None, metric=50.0, complement=-50.0)]))
    assert clipped is not None
    top, bottom = (float(point.split(",")[1]) for point in (clipped.circuit, clipped.complement))
    assert (top, bottom) == (CURVE_PAD / 2, CURVE_PAD / 2 + CURVE_H - CURVE_PAD)


def test_the_page_draws_the_edges_without_a_script() -> None:
    report = report_of(TINY_MODEL)
    a, b = report.results
    back = dataclasses.replace(direction(), source="a", target="b")
    report = dataclasses.replace(report, results=[dataclasses.replace(a, patching=[direction()]),
                                                dataclasses.replace(b, patching=[back])])
    page = html.render(report)
    assert page.count("<svg") == 4 and "<script" not in page
    assert page.count("<title>1. head 1.0 -&gt; MLP 2 at the cut: exact 50%") == 2
    assert "edges in the top 10 of at least two of the chapter&#39;s 2 ranked directions" in page
    assert "<td>head 1.0 -&gt; MLP 2</td><td>the cut</td><td>2 of 2</td>" in page
    view = edges_view(direction(top=[], curve=[], empty=None, under_floor=True))
    assert view is not None and view.graph is None and view.rows == []
