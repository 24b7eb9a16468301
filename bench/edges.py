"""What --gotchas-patch-edges costs and finds, per direction of a JSON report written with it: the seconds each
direction's scores and circuits took in the process that ran them (pairedges.py records them), the forward and
backward passes, the top three edges with their exact values, how EAP-IG and EAP agree with exact edge patching, the
circuits' MIB areas; then the FLOP projection of the same directions to a 2B, a 9B and a 70B model.

    pytest --gotchas cases/ -k sets --gotchas-patch-edges --gotchas-json /tmp/edges.json
    python -m bench.edges /tmp/edges.json
    python -m bench.edges /tmp/edges.json --post-norm [--model NAME]   # Gemma: what a frozen post-norm would cost
    python -m bench.edges /tmp/edges.json --recompute [--model NAME]   # each direction again: wall and CPU seconds

The FLOP count (matrix products only; attention's T-squared terms left out, as in bench/patching.py): a forward
pass is N layers over T tokens and the head over one row; the members' own passes, two; the scores, steps + 1 rows
of a forward and a backward pass (about three passes a row) and the products of every node's write change with
every input's gradient (nodes x inputs x positions x hidden, twice: EAP and EAP-IG); the circuits, one forward pass
per row (the full model, the empty circuit, a circuit and its complement per size, k edges alone) plus each row's
corrections (each input's share of nodes x positions x hidden).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_gotchas.results.edges import agreement, reproduces_at
from pytest_gotchas.results.faithfulness import circuit_sizes
from pytest_gotchas.results.reading import read_report
from pytest_gotchas.results.schema import Patching
from pytest_gotchas.report.wording_edges import edge_name, percent

from .components import BIGGER
from .patching import Shape


def graph_counts(shape: Shape, positions: int) -> tuple[int, int, int, int]:
    """(nodes, inputs, edges, node-reads per position summed over the inputs but the logits) of a direction's
    graph on ``shape`` (scoring/edgegraph.Graph's numbering)."""
    heads, kv, n = shape.heads, shape.kv_heads, shape.layers
    nodes = 1 + n * (heads + 1)
    reads = sum((heads + 2 * kv) * (1 + (layer - 1) * (heads + 1)) + (1 + (layer - 1) * (heads + 1) + heads)
                for layer in range(1, n + 1))
    return nodes, n * (heads + 2 * kv + 1) + 1, positions * reads + nodes, reads


def forward_flops(shape: Shape, tokens: int) -> float:
    return shape.layers * tokens * 2 * shape.layer_params + 2 * shape.hidden * shape.vocab


def edge_parts(shape: Shape, tokens: int, positions: int, steps: int, k: int) -> tuple[float, float, float]:
    """One direction's FLOPs: (the passes: the members', the scores' forward and backward passes, the circuits' rows;
    the scores' products; the circuits' corrections)."""
    nodes, inputs, count, reads = graph_counts(shape, positions)
    rows = 2 + 2 * len(circuit_sizes(count)) + k
    passes = (2 + (steps + 1) * 3 + rows) * forward_flops(shape, tokens)
    products = 2 * 2 * nodes * inputs * positions * shape.hidden
    return passes, products, rows * 2 * (reads * positions + nodes) * shape.hidden


def edge_flops(shape: Shape, tokens: int, positions: int, steps: int, k: int) -> float:
    """One direction: the members' passes, the scores, the circuits and the verification."""
    return sum(edge_parts(shape, tokens, positions, steps, k))


def rows(entries: list[Patching]) -> list[str]:
    lines = ["| direction | T | positions | edges | fwd / bwd passes | scores s | circuits s | top three (exact, "
             "EAP-IG) | EAP-IG signs | EAP signs | model from | CPR | CMD |",
             "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
    for p in entries:
        e = p.edges
        assert e is not None
        name = f"{p.source} -> {p.target}{f' [{p.primer}]' if p.primer else ''}"
        if e.under_floor:
            lines.append(f"| {name} | {len(p.target_ids)} | {len(p.positions)} | {e.count} | 0 / 0 | | | under the "
                         "floor: not ranked | | | | | |")
            continue
        top = "; ".join(f"{edge_name(p, x)} {percent(x.exact, e)} ({percent(x.eap_ig, e)})" for x in e.top[:3])
        ig, eap = agreement(e), agreement(e, "eap")
        shown = lambda v: "" if v is None else f"{v:.2f}"  # noqa: E731
        lines.append(f"| {name} | {len(p.target_ids)} | {len(p.positions)} | {e.count} | {e.forward_passes} / "
                     f"{e.backward_passes} | {e.score_seconds:.1f} | {e.circuit_seconds:.1f} | {top} | "
                     f"{ig.signs}/{ig.verified} | {eap.signs}/{eap.verified} | {reproduces_at(e) or ''} | "
                     f"{shown(e.cpr)} | {shown(e.cmd)} |")
    ranked = [p.edges for p in entries if p.edges is not None and not p.edges.under_floor]
    score, circuit = sum(e.score_seconds for e in ranked), sum(e.circuit_seconds for e in ranked)
    lines.append(f"| {len(ranked)} ranked of {len(entries)} directions | | | | | {score:.1f} | {circuit:.1f} | "
                 f"per ranked direction {(score + circuit) / max(1, len(ranked)):.1f} s | | | | | |")
    return lines


def projection(entries: list[Patching]) -> list[str]:
    lines = ["| model (FLOP count, same directions and token counts) | edges per direction (median) | TFLOP | "
             "of which passes | scores' products | circuits' corrections |", "|---|---:|---:|---:|---:|---:|"]
    for shape in BIGGER:
        counts = sorted(graph_counts(shape, len(p.positions))[2] for p in entries)
        parts = [edge_parts(shape, len(p.target_ids), len(p.positions), p.edges.steps if p.edges else 5,
                            p.edges.verified if p.edges else 10) for p in entries]
        sums = [sum(part[n] for part in parts) / 1e12 for n in range(3)]
        lines.append(f"| {shape.name} | {counts[len(counts) // 2]:,} | {sum(sums):.1f} | "
                     + " | ".join(f"{x:.1f}" for x in sums) + " |")
    return lines


def post_norm_costs(entries: list[Patching], model_name: str | None) -> list[str]:
    """Per direction, on a model with post-norms: the heads' additivity gap of the exact definition (what the run
    recorded, recomputed), and what a linearisation would cost instead: each head's change with the post-norm frozen
    at the target's scale, against its exact single-head change (summed norms of the differences over summed norms
    of the exact changes, every layer, head and aligned position)."""
    import torch

    from pytest_gotchas.model.load import ModelSpec, load_model
    from pytest_gotchas.scoring.align import align
    from pytest_gotchas.scoring.edgegraph import deltas, edge_blocks, graph_of, member_writes
    from pytest_gotchas.settings.options import Settings

    model = load_model(ModelSpec(name=model_name, device="cpu"), Settings().model_cache).model
    lines = ["| direction | head gap (exact edges' additivity) | frozen post-norm's error per head edge |",
             "|---|---:|---:|"]
    torch.set_grad_enabled(False)
    for p in entries:
        graph = graph_of(model, align(tuple(p.source_ids), tuple(p.target_ids)).pairs)
        if not graph.post_norms:
            return ["the model has no post-norms: its heads' writes add up exactly"]
        source, target = member_writes(model, graph, tuple(p.source_ids)), member_writes(model, graph,
                                                                                      tuple(p.target_ids))
        exact, gap = deltas(model, graph, source, target)
        s, t = [a for a, _ in graph.positions], [b for _, b in graph.positions]
        missed = moved = 0.0
        for layer, b in enumerate(edge_blocks(model), start=1):
            first = graph.head_node(layer, 0)
            own = target.o[0, t, layer - 1]
            scale = torch.rsqrt(own.pow(2).mean(-1, keepdim=True) + b.post_attn.eps)[:, None]
            change = source.nodes[0, s, first:first + graph.heads] - target.nodes[0, t, first:first + graph.heads]
            frozen = change * scale * (1.0 + b.post_attn.weight.float())
            wanted = exact[:, first:first + graph.heads]
            missed += float((frozen - wanted).norm(dim=-1).sum())
            moved += float(wanted.norm(dim=-1).sum())
        lines.append(f"| {p.source} -> {p.target} | {gap:.3f} | {missed / moved:.3f} |")
    return lines


def recompute(entries: list[Patching], model_name: str | None) -> list[str]:
    """Each direction's edges computed again in this process on the report's token ids (the members' own passes
    included), with wall and CPU seconds: what a loaded machine's wall seconds cannot say."""
    import time

    from pytest_gotchas.model.load import ModelSpec, load_model
    from pytest_gotchas.results.effects import Floor
    from pytest_gotchas.scoring.pairedges import EdgeConfig
    from pytest_gotchas.scoring.pairpatch import _edges
    from pytest_gotchas.scoring.patching import member_pass
    from pytest_gotchas.settings.options import Settings

    model = load_model(ModelSpec(name=model_name, device="cpu"), Settings().model_cache).model
    lines = ["| direction | wall s | CPU s | forward / backward passes (the members' own included) | under the "
             "floor |", "|---|---:|---:|---:|---|"]
    for p in entries:
        assert p.edges is not None
        wall, cpu = time.perf_counter(), time.process_time()
        source, target = member_pass(model, tuple(p.source_ids)), member_pass(model, tuple(p.target_ids))
        found = _edges(model, source, target, (p.candidate_ids[0], p.candidate_ids[1]),
                       EdgeConfig(p.edges.steps, max(1, p.edges.verified)), Floor(), {})
        lines.append(f"| {p.source} -> {p.target} | {time.perf_counter() - wall:.1f} | "
                     f"{time.process_time() - cpu:.1f} | {found.forward_passes + (2 if found.under_floor else 4)} / "
                     f"{found.backward_passes} | "
                     f"{'yes' if found.under_floor else 'no'} |")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.edges", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("report", type=Path, help="a JSON report written with --gotchas-patch-edges")
    parser.add_argument("--post-norm", action="store_true", help="recompute, on the report's model, what the post-norm "
                        "costs each direction's head edges (exact and frozen)")
    parser.add_argument("--recompute", action="store_true", help="compute each direction's edges again here, with "
                        "wall and CPU seconds")
    parser.add_argument("--model", default=None, help="the model the report ran (default: the embedded default)")
    args = parser.parse_args(argv)
    entries = [p for case in read_report(args.report).cases for p in case.patching if p.edges is not None]
    if not entries:
        sys.exit("bench: the report has no direction with edges (run it with --gotchas-patch-edges)")
    print("\n".join(rows(entries)))
    print()
    print("\n".join(projection(entries)))
    if args.post_norm:
        print()
        print("\n".join(post_norm_costs(entries, args.model)))
    if args.recompute:
        print()
        print("\n".join(recompute(entries, args.model)))


if __name__ == "__main__":
    main()
