"""How good the screen is, direction by direction: for each pair direction of a JSON report written with
--gotchas-patch (its token ids), the exact component grid (scoring/components.py) and the screen (scoring/screen.py,
with and without GradDrop), in the metric asked for; the component that restores most (exact), the screen's recall
of the exact cells of |fraction| >= 10% per kind, and the cells it missed (kind, layer, the cut or not).

    pytest --gotchas cases/ -k sets --gotchas-patch --gotchas-json /tmp/sets.json
    python -m bench.recall /tmp/sets.json --metric float32 --out /tmp/recall.json [--model smollm2-135m]
    python -m bench.recall --summarize /tmp/recall.json [more.json ...]   # the table of --out files, or of
                                                                           # reports run with the component options

Each direction's line is printed as soon as it is computed, and --out is rewritten after each (a JSON list of the
directions' schema.Patching entries, their ``components`` filled, their metric the one asked for and their residual
``cells`` left empty: this does not compute the residual grid), so that a run stopped early keeps what it finished.
The report's ids must be the model's: a report of another model gives a KeyError-free but meaningless run, so the
report's model id is checked against --model.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_gotchas.results.report import Report, from_data
from pytest_gotchas.results.patching import Component, top_components
from pytest_gotchas.results.schema import Components, Patching
from pytest_gotchas.scoring.screen import RECALL_LINE
from pytest_gotchas.results.vocabulary import ComponentsMethod

Cell = tuple[str, int, int, int]  # (kind, layer, head (0 unless a head), aligned pair index), as scoring/screen.py


def fractions(entry: Patching, grid: Components) -> dict[Cell, float]:
    """Every exact cell of the grid as the fraction of the effect it restores (empty without an effect)."""
    effect = entry.source_value - entry.unpatched
    if not effect:
        return {}
    out: dict[Cell, float] = {}
    for i, layer in enumerate(grid.layers):  # each layer's attention row, MLP row, then each head's row
        rows = [("attn", 0, grid.attn[i]), ("mlp", 0, grid.mlp[i])]
        rows += [("head", h, row) for h, row in enumerate(grid.head[i])]
        out.update(((kind, layer, h, j), (v - entry.unpatched) / effect) for kind, h, row in rows
                   for j, v in enumerate(row))
    return out


def named(entry: Patching, c: Component) -> str:
    """A cell as the terminal's lines name it: "MLP 1 at the cut 100%", "head 2.0 at 'x' -> 'y' 25%"."""
    from pytest_gotchas.report.wording_patching import component_name, component_place

    return f"{component_name(c)} at {component_place(entry, c)} {c.fraction * 100:.0f}%"


def _component(entry: Patching, cell: Cell, fraction: float) -> Component:
    kind, layer, head, j = cell
    s, t = entry.positions[j]
    source = entry.source_tokens[j] if entry.source_tokens else None
    return Component(kind, layer, head if kind == "head" else None, (s, t), source, entry.tokens[j], fraction)


def missed(entry: Patching, grid: Components) -> list[str]:
    """The exact cells of |fraction| >= RECALL_LINE that the screen's top-k does not hold, as the lines name them."""
    top = {(s.kind, s.layer, s.head, s.position) for s in grid.screened}
    return [named(entry, _component(entry, c, f)) for c, f in fractions(entry, grid).items()
            if abs(f) >= RECALL_LINE and c not in top]


def recut(tokenizer: Any, report: Report, entry: Patching, cut_again: bool = True) -> Patching:
    """The direction aligned by this version's align.py (its positions and tokens), its members cut again by
    ``tokenizer`` from their primer-less prompt and candidates where ``cut_again``, else with the report's ids."""
    from pytest_gotchas.scoring.align import align
    from pytest_gotchas.scoring.cut import CutPlan, plan_cut

    runs = {c.id: c for c in report.cases}

    def cut(case: str) -> CutPlan:
        run = next(r for r in runs[case].runs if r.primer is None and r.variant is None)
        return plan_cut(tokenizer, run.prompt, run.correct, run.wrong)

    if cut_again:
        source, target = cut(entry.source), cut(entry.target)
        s_ids, t_ids = tuple(source.context_ids), tuple(target.context_ids)
        candidates = [target.correct_ids[0], target.wrong_ids[0]]
    else:
        s_ids, t_ids, candidates = tuple(entry.source_ids), tuple(entry.target_ids), entry.candidate_ids
    a = align(s_ids, t_ids)
    decode = lambda i: tokenizer.decode([i])  # noqa: E731
    return replace(entry, source_ids=list(s_ids), target_ids=list(t_ids), candidate_ids=candidates,
                   positions=[list(p) for p in a.pairs], tokens=[decode(t_ids[t]) for _, t in a.pairs],
                   source_tokens=[decode(s_ids[s]) for s, _ in a.pairs])


def directions(path: Path) -> list[Patching]:
    """The directions of an --out file, or of a run's whole report (each once)."""
    from pydantic import TypeAdapter

    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, list):
        return TypeAdapter(list[Patching]).validate_python(data)
    return list({(p.source, p.target, p.primer): p for c in from_data(data).cases for p in c.patching}.values())


def band(layer: int, layers: int) -> str:
    return "layer 1" if layer == 1 else "last 3 layers" if layer > layers - 3 else "middle"


def _ratios(counts: dict[str, tuple[int, int]] | dict[str, list[int]]) -> str:
    return " / ".join(f"{a}/{b}" for a, b in counts.values())


def summary(entries: list[Patching], k: int) -> list[str]:
    """Per direction with an exact grid and an effect: the best component (exact); of the screen's top-k, how many
    are exact cells of |fraction| >= 10% (precision); how many of the exact grid's k largest cells it holds
    (overlap); recall per kind with and without GradDrop; the missed cells of 10% or more by kind and layer band
    (layer 1, middle, last 3 layers). Then the same summed over the directions."""
    from collections import Counter

    head = (f"| direction | effect | best component (exact) | top-{k}: of 10%+ | top-{k} overlap with exact top-{k} "
            "| recall attn / MLP / head (GradDrop) | (&#124;estimate&#124; alone) | missed / 10%+ cells, by kind and "
            "layer band |")
    lines = [head, "|---|---:|---|---:|---:|---|---|---|"]
    sums: Counter[str] = Counter()
    recalls = {name: {kind: [0, 0] for kind in ("attn", "mlp", "head")} for name in ("graddrop", "plain")}
    bands: Counter[str] = Counter()
    missing: Counter[str] = Counter()
    for e in entries:
        grid = e.components
        frac = fractions(e, grid) if grid is not None and grid.method == ComponentsMethod.EXACT else {}
        if grid is None or not frac:
            continue
        top = {(c.kind, c.layer, c.head, c.position) for c in grid.screened}
        exact_top = sorted(frac, key=lambda c: -abs(frac[c]))[:len(top)]
        precision = sum(abs(frac[c]) >= RECALL_LINE for c in top)
        overlap = len(top & set(exact_top))
        best = top_components(e, 1)[0]
        big = [c for c, f in frac.items() if abs(f) >= RECALL_LINE]
        here = Counter(f"{c[0]} {band(c[1], grid.layers[-1])}" for c in big)
        gone = Counter(f"{c[0]} {band(c[1], grid.layers[-1])}" for c in big if c not in top)
        sums.update(directions=1, precision=precision, overlap=overlap, screened=len(top))
        bands.update(here)
        missing.update(gone)
        for name, found in (("graddrop", grid.recall), ("plain", grid.recall_plain)):
            for kind, (a, b) in found.items():
                recalls[name][kind][0] += a
                recalls[name][kind][1] += b
        primer = f" [{e.primer}]" if e.primer else ""
        lines.append(f"| {e.source} -> {e.target}{primer} | {e.source_value - e.unpatched:+.4g} | "
                     f"{named(e, best)} | {precision}/{len(top)} | {overlap}/{len(top)} | "
                     f"{_ratios(grid.recall)} | {_ratios(grid.recall_plain)} | "
                     + ", ".join(f"{b} {gone[b]}/{n}" for b, n in sorted(here.items())) + " |")
    if not sums:
        return lines
    lines.append(f"| all {sums['directions']} directions | | | {sums['precision']}/{sums['screened']} | "
                 f"{sums['overlap']}/{sums['screened']} | {_ratios(recalls['graddrop'])} | {_ratios(recalls['plain'])} "
                 "| " + ", ".join(f"{b} {missing[b]}/{n}" for b, n in sorted(bands.items())) + " |")
    return lines


def summarize(files: list[Path], k: int) -> None:
    """The summary of --out files, or of reports run with --gotchas-patch-components."""
    print("\n".join(summary([e for path in files for e in directions(path)], k)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.recall", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("report", type=Path, nargs="+", help="a JSON report written with --gotchas-patch (with "
                        "--summarize: --out files)")
    parser.add_argument("--summarize", action="store_true", help="print the table of --out files, compute nothing")
    parser.add_argument("--model", default=None, help="the model the report ran (default: the embedded default)")
    parser.add_argument("--k", type=int, default=20, help="the screen's top-k (default 20)")
    parser.add_argument("--metric", choices=("model", "float32"), default="float32")
    parser.add_argument("--only", default="", help="only directions whose 'source -> target' contains this")
    parser.add_argument("--recut", action="store_true",
                        help="cut each member again with this model's tokenizer from the report's prompt and "
                             "candidates (scoring/cut.plan_cut, as the plugin does): a report of another model's pairs")
    parser.add_argument("--skip", type=int, default=0, help="leave out the first N directions (a run resumed)")
    parser.add_argument("--out", type=Path, help="write the directions' entries here (JSON), after each one")
    args = parser.parse_args(argv)
    if args.summarize:
        summarize(args.report, args.k)
        return

    from pydantic import TypeAdapter

    from pytest_gotchas.model.load import ModelSpec, load_model
    from pytest_gotchas.settings.options import Settings
    from pytest_gotchas.results.effects import spacing
    from pytest_gotchas.scoring.components import component_pass, patch_components
    from pytest_gotchas.scoring.pairpatch import components_entry
    from pytest_gotchas.scoring.screen import screen

    from .child import machine

    report = from_data(json.loads(args.report[0].read_text(encoding="utf-8")))
    seen, entries = set(), []
    for case in report.cases:
        for p in case.patching:
            key = (p.source, p.target, p.primer)
            if key not in seen and args.only in f"{p.source} -> {p.target}":
                seen.add(key)
                entries.append(p)
    entries = entries[args.skip:]
    if not entries:
        sys.exit("bench: no patched direction in the report (run it with --gotchas-patch)")
    loaded = load_model(ModelSpec(name=args.model, device="cpu"), Settings().model_cache)
    ran, name = set(report.models), loaded.info.id if loaded.info else str(args.model)
    if not args.recut and name not in ran:
        sys.exit(f"bench: the report ran {sorted(ran)}, not {name}: its token ids are not this model's")
    # Cut again, by this model's tokenizer with --recut, and aligned by this version's align.py either way.
    entries = [recut(loaded.tokenizer, report, e, args.recut) for e in entries]
    model, decode = loaded.model, (lambda i: loaded.tokenizer.decode([i]))
    done: list[Patching] = []
    adapter = TypeAdapter(list[Patching])
    info = machine()
    print(f"model {name}, metric {args.metric}, top-{args.k}; {info.cpu}, {info.nproc} cores, torch "
          f"{info.torch} ({info.torch_threads} threads), load average {info.load} at the start")
    for entry in entries:
        ids = (entry.candidate_ids[0], entry.candidate_ids[1])
        source, target = component_pass(model, tuple(entry.source_ids)), component_pass(model, tuple(entry.target_ids))
        started = time.perf_counter()
        grid = patch_components(model, source, target, ids, args.metric)
        grid_s = time.perf_counter() - started
        started = time.perf_counter()
        screened = screen(model, source, target, ids, args.k, metric=args.metric)
        screen_s = time.perf_counter() - started
        typed = components_entry(model, target, grid, screened, args.k, decode)
        effect = grid.source_value - grid.unpatched
        found = replace(entry, unpatched=grid.unpatched, source_value=grid.source_value, metric_dtype=grid.metric_dtype,
                        step=spacing(max(abs(grid.unpatched), abs(grid.source_value)), grid.metric_dtype), cells=[],
                        components=typed)
        done.append(found)
        best = top_components(found, 1)
        strongest = named(found, best[0]) if best else "no effect"
        recall = lambda r: " ".join(f"{k} {g}/{o}" for k, (g, o) in r.items())  # noqa: E731
        gained = sum(1 for s in typed.screened if (s.graddrop or 0) > abs(s.estimate))
        print(f"\n{entry.source} -> {entry.target}: effect {effect:+.5g} ({args.metric}); best (exact) {strongest}; "
              f"grid {grid_s:.0f} s, screen + verify {screen_s:.0f} s ({screened.seconds:.1f} s gradients)")
        print(f"  recall with GradDrop: {recall(typed.recall)}; by |estimate| alone: {recall(typed.recall_plain)}; "
              f"{gained} of the top-{args.k} ranked by GradDrop above their |estimate|")
        misses = missed(found, typed)
        print(f"  missed ({len(misses)}): " + "; ".join(misses[:40]) + (" ..." if len(misses) > 40 else ""))
        print("  top heads at the cut read: " + "; ".join(
            f"{p.layer}.{p.head}: " + ", ".join(f"{p.tokens[n]!r} {w * 100:.0f}%" for n, w in
                                                 sorted(enumerate(p.weights), key=lambda x: -x[1])[:3])
            for p in typed.patterns), flush=True)
        if args.out:
            args.out.write_text(json.dumps(adapter.dump_python(done, mode="json")), encoding="utf-8")


if __name__ == "__main__":
    main()
