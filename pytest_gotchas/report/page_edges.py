"""The page's view of a direction's edges (--gotchas-patch-edges): the graph of its top edges as inline SVG (layer up,
aligned position across; a component's write joined to the input that reads it), the faithfulness curve of its
circuits as inline SVG, and the table of its top edges; per chapter, the edges that recur. No JavaScript: every
detail is a <title> shown on hover. Pure data with the coordinates computed; _edges.html.j2 lays it out."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..results.circuits import Edge, Edges
from ..results.edges import Recurring, at_cut, effect, recurring
from ..results.schema import Patching
from ..results.vocabulary import EdgeInput, EdgeNode
from .page_patching import BLUE, RED
from .wording_edges import (EDGES_EXPLAIN, RECURRING_COLUMNS, TOP_COLUMNS, curve_caption, edge_name, edges_line,
                            graph_caption, input_name, node_name, percent, point_title, recurring_caption,
                            recurring_row, top_rows)
from .wording_patching import cell_tokens

COLUMN, ROW, MARGIN, BOTTOM = 220, 22, 150, 50  # graph: a position's width, a layer's height, the left and lower margins
CURVE_W, CURVE_H, CURVE_PAD = 460, 250, 40
LOW, HIGH = -1.0, 2.0  # the curve's faithfulness axis


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    label: str
    title: str
    anchor: str = "start"  # the label's side: writes to the right of their dot, inputs to the left


@dataclass(frozen=True)
class Line:
    path: str  # an SVG path: a quadratic curve from the write to the input
    width: float
    colour: str
    title: str


@dataclass(frozen=True)
class Label:
    x: float
    y: float
    text: str


@dataclass(frozen=True)
class GraphView:
    caption: str
    width: float
    height: float
    lines: list[Line]
    dots: list[Dot]
    labels: list[Label]  # the layers (left) and the tokens (below)
    grid: list[float]  # the y of each layer's guide line
    left: float = 45  # where the guide lines start


@dataclass(frozen=True)
class CurveView:
    caption: str
    width: float
    height: float
    circuit: str  # polyline points
    complement: str
    dots: list[Dot]
    one: float  # the y of faithfulness 1 and of 0
    zero: float
    labels: list[Label]


@dataclass(frozen=True)
class EdgesView:
    line: str  # the direction's sentence, as the terminal prints it
    explain: str
    graph: GraphView | None  # None under the floor, or with no edge scored
    curve: CurveView | None
    columns: tuple[str, ...]
    rows: list[tuple[str, ...]]


def _lane(heads: int, head: int) -> float:
    """A head's distance from the column's middle: 0.08 to 0.33 of the column, in head order."""
    return COLUMN * (0.08 + (0.25 * head / (heads - 1) if heads > 1 else 0.0))


def _ends(e: Edge, heads: int, kv: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """(x offset, layer) of the edge's write and of its reading input, in a column: writes in its right half
    (heads in order, the MLP outermost), inputs in its left half (a query head, or a key-value head under its first
    query head; the MLP outermost); the embeddings and the logits in the middle."""
    outer = COLUMN * 0.42
    write = 0.0 if e.node == EdgeNode.EMBED else outer if e.node == EdgeNode.MLP else _lane(heads, e.head)
    if e.reads == EdgeInput.QUERY:
        read = -_lane(heads, e.reads_head)
    elif e.reads in (EdgeInput.KEY, EdgeInput.VALUE):
        read = -_lane(heads, e.reads_head * max(1, heads // kv))
    else:
        read = 0.0 if e.reads == EdgeInput.LOGITS else -outer
    return (write, float(e.layer)), (read, float(e.reads_layer))


def _colour(fraction: float) -> str:
    return f"rgb({BLUE if fraction >= 0 else RED})"


def graph_view(p: Patching) -> GraphView | None:
    edges = p.edges
    if edges is None or edges.under_floor or not edges.top:
        return None
    layers = max(e.reads_layer for e in edges.top)
    top_layer = len(p.layers) + 1
    columns = sorted({e.position for e in edges.top})
    height = (top_layer + 1) * ROW + BOTTOM
    y = lambda layer: (top_layer - layer) * ROW + ROW  # noqa: E731
    heads, kv = _head_counts(p, edges)
    lines: list[Line] = []
    dots: dict[tuple[float, float], Dot] = {}
    for rank, e in enumerate(edges.top):
        centre = MARGIN + columns.index(e.position) * COLUMN + COLUMN / 2
        (wx, wl), (rx, rl) = _ends(e, heads, kv)
        x1, y1, x2, y2 = centre + wx, y(wl), centre + rx, y(rl)
        bow = 6 + 4 * rank
        value = e.exact if e.exact is not None else e.eap_ig
        fraction = value / effect(edges) if effect(edges) else 0.0
        title = f"{rank + 1}. {edge_name(p, e)}: exact {percent(e.exact, edges) or 'not verified'}, EAP-IG " \
                f"{percent(e.eap_ig, edges)}, EAP {percent(e.eap, edges)} of the effect"
        lines.append(Line(f"M{x1:.1f},{y1:.1f} Q{(x1 + x2) / 2 + bow:.1f},{(y1 + y2) / 2:.1f} {x2:.1f},{y2:.1f}",
                          round(1 + 5 * min(1.0, abs(fraction)), 2), _colour(fraction), title))
        dots.setdefault((x1, y1), Dot(x1, y1, _short(e.node, e.layer, e.head),
                                      f"{node_name(e.node, e.layer, e.head)}'s write"))
        dots.setdefault((x2, y2), Dot(x2, y2, _short_input(e), input_name(e.reads, e.reads_layer, e.reads_head),
                                      "end"))
    labels = [Label(30, y(layer) + 4, "emb" if layer == 0 else "logits" if layer == top_layer else str(layer))
              for layer in range(0, top_layer + 1) if layer in (0, top_layer) or layer % 5 == 0 or layer <= layers]
    labels += [Label(MARGIN + n * COLUMN + COLUMN / 2, height - BOTTOM / 2, _column_tokens(p, edges, j))
               for n, j in enumerate(columns)]
    return GraphView(graph_caption(p), MARGIN + len(columns) * COLUMN + 40, height, lines, list(dots.values()),
                     labels, [y(layer) for layer in range(top_layer + 1)])


def _head_counts(p: Patching, edges: Edges) -> tuple[int, int]:
    """Query heads and key-value heads per layer, as far as the top edges show them (the components' record when
    there is one)."""
    heads = p.components.heads if p.components is not None else 0
    seen = [e.head + 1 for e in edges.top if e.node == EdgeNode.HEAD]
    seen += [e.reads_head + 1 for e in edges.top if e.reads == EdgeInput.QUERY]
    kv = [e.reads_head + 1 for e in edges.top if e.reads in (EdgeInput.KEY, EdgeInput.VALUE)]
    heads = max([heads, *seen, 1])
    return heads, max([1, *kv])


def _short(kind: EdgeNode, layer: int, head: int) -> str:
    return "emb" if kind == EdgeNode.EMBED else f"h{layer}.{head}" if kind == EdgeNode.HEAD else f"MLP{layer}"


def _short_input(e: Edge) -> str:
    if e.reads == EdgeInput.LOGITS:
        return "logits"
    if e.reads == EdgeInput.MLP:
        return f"MLP{e.reads_layer} in"
    return f"{e.reads.value} {e.reads_layer}.{e.reads_head}"


def _column_tokens(p: Patching, edges: Edges, position: int) -> str:
    source = p.source_tokens[position] if p.source_tokens else None
    text = cell_tokens(source, p.tokens[position])
    return "the cut" if at_cut(p, next(e for e in edges.top if e.position == position)) else text


def _curve_x(size: int, count: int) -> float:
    span = math.log10(count) if count > 1 else 1.0
    return CURVE_PAD + (CURVE_W - 2 * CURVE_PAD) * (math.log10(max(size, 1)) / span)


def _curve_y(value: float | None) -> float:
    shown = min(HIGH, max(LOW, 0.0 if value is None else value))
    return CURVE_PAD / 2 + (CURVE_H - CURVE_PAD) * (HIGH - shown) / (HIGH - LOW)


def curve_view(p: Patching) -> CurveView | None:
    edges = p.edges
    if edges is None or edges.under_floor or not edges.curve:
        return None
    points = [(pt.edges, f, c) for pt, f, c in zip(edges.curve, edges.faithfulness, edges.complement_faithfulness)
              if pt.edges > 0]
    line = lambda pick: " ".join(f"{_curve_x(n, edges.count):.1f},{_curve_y(pick(f, c)):.1f}"  # noqa: E731
                                 for n, f, c in points)
    dots = [Dot(_curve_x(n, edges.count), _curve_y(f), "", point_title(n, f, c)) for n, f, c in points]
    labels = [Label(_curve_x(n, edges.count), CURVE_H - 2, str(n)) for n in _ticks(edges.count)]
    labels += [Label(CURVE_PAD - 14, _curve_y(v) + 4, f"{v:g}") for v in (LOW, 0.0, 1.0, HIGH)]
    return CurveView(curve_caption(p), CURVE_W, CURVE_H, line(lambda f, c: f), line(lambda f, c: c), dots,
                     _curve_y(1.0), _curve_y(0.0), labels)


def _ticks(count: int) -> list[int]:
    """Powers of ten up to ``count`` (none within a factor of 3 below it, where their labels would meet), and it."""
    return [10 ** k for k in range(0, len(str(count))) if 10 ** k * 3 <= count] + ([count] if count > 1 else [])


def edges_view(p: Patching) -> EdgesView | None:
    edges = p.edges
    if edges is None:
        return None
    if edges.under_floor:
        return EdgesView(edges_line(p), EDGES_EXPLAIN, None, None, TOP_COLUMNS, [])
    return EdgesView(edges_line(p), EDGES_EXPLAIN, graph_view(p), curve_view(p), TOP_COLUMNS, top_rows(p))


@dataclass(frozen=True)
class RecurringTable:
    caption: str
    columns: tuple[str, ...]
    rows: list[tuple[str, ...]]


def recurring_table(model: str, directions: list[Patching]) -> RecurringTable | None:
    """The chapter's recurring edges for one model; None when fewer than two directions were ranked or none recurs."""
    found: list[Recurring] = recurring(directions)
    if not found:
        return None
    return RecurringTable(recurring_caption(model, found[0].of), RECURRING_COLUMNS, [recurring_row(r) for r in found])

