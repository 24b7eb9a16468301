"""The words of a direction's edges (--gotchas-patch-edges), once: its terminal line, the page's captions, the table
of its top edges, and each edge's name. Beside wording_patching.py, for the same reason: one fact reads the same in
the terminal and on the page."""

from __future__ import annotations

from ..results.circuits import Edge, Edges
from ..results.edges import Recurring, agreement, at_cut, effect, reproduces_at
from ..results.faithfulness import MIB_SHARES
from ..results.schema import Patching
from ..results.vocabulary import EdgeCorruption, EdgeInput, EdgeNode
from .wording_patching import cell_tokens, patched_lines

EDGES_EXPLAIN = ("Edges (--gotchas-patch-edges): an edge is one component's write (the embeddings, a head, an MLP) "
                 "read at the same aligned position by a later input (a head's query, a key-value head's key or "
                 "value, an MLP, the logits at the cut). Each is scored by EAP-IG and EAP (the change of the target's "
                 "logit difference if that edge alone read the source's write), and the top edges are patched "
                 "exactly; a percentage is of the direction's effect (source - target), positive towards the "
                 "source's answer. A circuit of the top n edges runs the model with every other edge reading the "
                 "source: its faithfulness is 1 where it reproduces the model, 0 where it does no better than the "
                 "source's writes (MIB's CPR: the area under the curve over its shares of the edges; CMD: the area "
                 "between the curve and 1).")


def node_name(kind: EdgeNode, layer: int, head: int) -> str:
    if kind == EdgeNode.EMBED:
        return "the embeddings"
    return f"head {layer}.{head}" if kind == EdgeNode.HEAD else f"MLP {layer}"


def input_name(kind: EdgeInput, layer: int, head: int) -> str:
    if kind == EdgeInput.LOGITS:
        return "the logits"
    if kind == EdgeInput.MLP:
        return f"MLP {layer}"
    if kind == EdgeInput.QUERY:
        return f"head {layer}.{head}'s query"
    return f"key-value head {layer}.{head}'s {'key' if kind == EdgeInput.KEY else 'value'}"


def edge_place(p: Patching, e: Edge) -> str:
    if at_cut(p, e):
        return "the cut"
    s, t = p.positions[e.position]
    source = p.source_tokens[e.position] if p.source_tokens else None
    return f"{cell_tokens(source, p.tokens[e.position])} (positions {s} -> {t})"


def edge_name(p: Patching, e: Edge) -> str:
    """An edge as every line names it: "head 3.1 -> MLP 5 at the cut"."""
    return (f"{node_name(e.node, e.layer, e.head)} -> {input_name(e.reads, e.reads_layer, e.reads_head)} at "
            f"{edge_place(p, e)}")


def percent(value: float | None, edges: Edges) -> str:
    """A change of the metric as a percentage of the direction's effect."""
    return "" if value is None or not effect(edges) else f"{value / effect(edges) * 100:.0f}%"


def floor_text(edges: Edges) -> str:
    return (f"not ranked: the direction's effect is under the patching floor (results/effects.py; {effect(edges):+g} "
            "in the float32 metric), so no edge, fraction or circuit is given")


def agreement_text(edges: Edges) -> str:
    found = [(name, agreement(edges, score)) for name, score in (("EAP-IG", "eap_ig"), ("EAP", "eap"))]
    said = [f"{name} has the exact sign for {a.signs} of {a.verified}"
            + ("" if a.median_error is None else f", median error {a.median_error * 100:.0f}% of the effect")
            for name, a in found]
    return "; ".join(said)


def corrupted_by(edges: Edges) -> str:
    """What a circuit's other edges read (--gotchas-patch-edges-corrupt), as the line and the curve say it."""
    if edges.corrupt == EdgeCorruption.MEAN:
        return f"the mean over the chapter's {edges.mean_of} prompts (counted back from the cut)"
    return "the source's writes"


def circuit_text(edges: Edges) -> str:
    at = reproduces_at(edges)
    near = (f"within 10% of the model from {at} of {edges.count} edges" if at is not None and at < edges.count
            else f"within 10% of the model only with all {edges.count} edges")
    cpr = "n/a" if edges.cpr is None else f"{edges.cpr:.2f}"
    cmd = "n/a" if edges.cmd is None else f"{edges.cmd:.2f}"
    against = f" (other edges reading {corrupted_by(edges)})" if edges.corrupt == EdgeCorruption.MEAN else ""
    return f"circuits{against} {near}; MIB's CPR {cpr}, CMD {cmd}"


def edges_line(p: Patching, shown: int = 3) -> str:
    """A direction's edges in one line: the top ``shown`` edges (exact beside EAP-IG), the estimates' agreement with
    exact patching, the circuits; "" without edges."""
    edges = p.edges
    if edges is None:
        return ""
    head = f"edges {p.source} -> {p.target}{f' [{p.primer}]' if p.primer else ''}: "
    if edges.under_floor:
        return head + floor_text(edges)
    if not edges.top:
        return head + "no edge has a score other than 0"
    named = [f"{edge_name(p, e)} " + ("not verified" if e.exact is None else f"{percent(e.exact, edges)} exact")
             + f" (EAP-IG {percent(e.eap_ig, edges)})" for e in edges.top[:shown]]
    return head + ", ".join(named) + f"; {agreement_text(edges)}; {circuit_text(edges)}"


TOP_COLUMNS = ("rank", "edge", "EAP-IG", "EAP", "exact")


def top_rows(p: Patching) -> list[tuple[str, ...]]:
    edges = p.edges
    if edges is None:
        return []
    return [(str(n), edge_name(p, e), percent(e.eap_ig, edges), percent(e.eap, edges),
             "not verified" if e.exact is None else percent(e.exact, edges)) for n, e in enumerate(edges.top, 1)]


def graph_caption(p: Patching) -> str:
    edges = p.edges
    k = len(edges.top) if edges is not None else 0
    return (f"the top {k} edges by |EAP-IG| of {p.source} \u2192 {p.target}, layer (up) by aligned position "
            "(across): a line from a component's write to the input that reads it, as wide as its exact share of the "
            "effect (blue towards the source's answer, red away from it); details on hover")


def curve_caption(p: Patching) -> str:
    edges = p.edges
    shares = ", ".join(f"{s * 100:g}%" for s in MIB_SHARES)
    count = edges.count if edges is not None else 0
    against = corrupted_by(edges) if edges is not None else "the source's writes"
    return (f"faithfulness of the circuits of the top n of {count} edges (blue) and of their complements (grey), "
            f"every edge outside them reading {against}; n on a log scale; MIB's shares {shares} and the sizes "
            "1-5, 10, 20, 50; clipped to -1..2")


def point_title(size: int, value: float | None, complement: float | None) -> str:
    shown = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
    return f"top {size} edges: faithfulness {shown(value)}, complement {shown(complement)}"


def recurring_caption(model: str, of: int) -> str:
    return (f"[{model}] edges in the top 10 of at least two of the chapter's {of} ranked directions (positions "
            "apart; at the cut or before it)")


RECURRING_COLUMNS = ("edge", "where", "directions")


def recurring_row(found: Recurring) -> tuple[str, ...]:
    k = found.key
    return (f"{node_name(k.node, k.layer, k.head)} -> {input_name(k.reads, k.reads_layer, k.reads_head)}",
            "the cut" if k.cut else "before the cut", f"{found.directions} of {found.of}")


def direction_lines(p: Patching, model: str | None = None) -> list[str]:
    """The terminal's lines of one patched direction: wording_patching's, then the edges' if any."""
    label = f"[{model}] " if model else ""
    return patched_lines(p, model) + ([f"  {label}{edges_line(p)}"] if p.edges is not None else [])
