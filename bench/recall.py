"""How good the screen is, direction by direction, judged as AtP* judges a screen (results/screening.py): for each
pair direction of a JSON report written with --gotchas-patch (its token ids), the exact component grid
(scoring/components.py) and the screen (scoring/screen.py), in the metric asked for; the component that restores most
(exact), the screen's top-k overlap and mass against the exact top-k, its verified-recall curve and area, and where
the exact top-k cells sit (kind, layer band) with the verifications in the screen's order that find them.

    pytest --gotchas cases/ -k sets --gotchas-patch --gotchas-json /tmp/sets.json
    python -m bench.recall /tmp/sets.json --metric float32 --out /tmp/recall.json [--model smollm2-135m]
    python -m bench.recall --summarize /tmp/recall.json [more.json ...]   # the table of --out files, or of
                                                                           # reports run with the component options

Each direction's line is printed as soon as it is computed, and --out is rewritten after each (a JSON list of the
directions' schema.Patching entries, their ``components`` filled, their metric the one asked for, held to the effect
floor at its defaults, and their residual ``cells`` left empty: this does not compute the residual grid), so that a
run stopped early keeps what it finished. The report's ids must be the model's: a report of another model gives a
KeyError-free but meaningless run, so the report's model id is checked against --model.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_gotchas.results.patching import Component, top_components
from pytest_gotchas.results.report import Report, from_data
from pytest_gotchas.results.schema import Components, Patching
from pytest_gotchas.results.screening import CHECKPOINTS, exact_top, found_within, screen_sum
from pytest_gotchas.results.vocabulary import Cell, ComponentKind, ComponentsMethod


def changes(entry: Patching, grid: Components) -> dict[Cell, float]:
    """Every exact cell of the grid as its change of the metric (cell - unpatched), in logits."""
    out: dict[Cell, float] = {}
    for i, layer in enumerate(grid.layers):  # each layer's attention row, MLP row, then each head's row
        rows = [(ComponentKind.ATTN, 0, grid.attn[i]), (ComponentKind.MLP, 0, grid.mlp[i])]
        rows += [(ComponentKind.HEAD, h, row) for h, row in enumerate(grid.head[i])]
        out.update((Cell(kind, layer, h, j), v - entry.unpatched) for kind, h, row in rows for j, v in enumerate(row))
    return out


def named(entry: Patching, c: Component) -> str:
    """A cell as the terminal's lines name it: "MLP 1 at the cut 100%", "head 2.0 at 'x' -> 'y' 25%"."""
    from pytest_gotchas.report.wording_patching import component_name, component_place

    return f"{component_name(c)} at {component_place(entry, c)} {c.fraction * 100:.0f}%"


def band(layer: int, layers: int) -> str:
    return "layer 1" if layer == 1 else "last 3 layers" if layer > layers - 3 else "middle"


def top_bands(entry: Patching, grid: Components) -> Counter[str]:
    """The exact top-k's cells by kind and layer band, and how many of them the first k verifications find."""
    assert grid.score is not None
    top = exact_top(changes(entry, grid), grid.score.k, grid.score.least)
    found: Counter[str] = Counter()
    for cell, place in zip(top, grid.score.found_at):
        where = f"{cell.kind} {band(cell.layer, grid.layers[-1])}"
        found[where] += 1
        found[f"{where} found"] += place <= grid.score.k
    return found


def summary(entries: list[Patching], k: int) -> list[str]:
    """Per direction with an exact grid, above the effect floor: the best component (exact); the screen's top-k
    overlap and mass against the exact top-k; its verified-recall curve (of the exact top-k, how many the first k,
    2k, 5k, 10k verifications in its order find) and the verifications that find them all; the curve's area with
    GradDrop and by |estimate| alone; the exact top-k by kind and layer band, found within k verifications. Then
    the same summed over the directions (results/screening.screen_sum), and those under the floor, by why."""
    head = (f"| direction | effect | best component (exact) | top-{k} overlap | mass | found within "
            + " / ".join(f"{m}k" for m in CHECKPOINTS) + " | all found after | area (&#124;estimate&#124; alone) "
            "| exact top-k by kind and band: found within k |")
    lines = [head, "|---|---:|---|---:|---:|---:|---:|---:|---|"]
    bands: Counter[str] = Counter()
    scores, under = [], Counter()
    for e in entries:
        grid = e.components
        if grid is None or grid.method != ComponentsMethod.EXACT:
            continue
        if grid.score is None:
            under[str(e.under or "no score")] += 1
            continue
        s = grid.score
        scores.append(s)
        here = top_bands(e, grid)
        bands.update(here)
        primer = f" [{e.primer}]" if e.primer else ""
        lines.append(f"| {e.source} -> {e.target}{primer} | {e.source_value - e.unpatched:+.4g} | "
                     f"{named(e, top_components(e, 1)[0])} | {s.overlap}/{s.k} | {s.mass:.2f} | "
                     + " / ".join(str(found_within(s, m * s.k)) for m in CHECKPOINTS) + f" of {s.k} | "
                     f"{max(s.found_at)} of {s.cells} | {s.area:.3f} ({s.area_plain:.3f}) | {_bands(here)} |")
    total = screen_sum(scores)
    if total is not None:
        lines.append(f"| all {total.directions} directions | | | {total.overlap}/{total.k} | {total.mass:.2f} | "
                     + " / ".join(str(found) for _, found in total.curve) + f" of {total.k} | {total.all_found} | "
                     f"{total.area:.3f} ({total.area_plain:.3f}) | {_bands(bands)} |")
    if under:
        lines.append("")
        lines.append("Not scored (under the effect floor, by why): " + ", ".join(f"{w} {n}" for w, n in under.items()))
    return lines


def _bands(found: Counter[str]) -> str:
    return ", ".join(f"{b} {found[b + ' found']}/{n}" for b, n in sorted(found.items()) if not b.endswith("found"))


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


def summarize(files: list[Path], k: int) -> None:
    """The summary of --out files, or of reports run with --gotchas-patch-components; for a report, then each
    chapter's directions together (its `effects` section: under the floor, the screen summed, what recurs)."""
    print("\n".join(summary([e for path in files for e in directions(path)], k)))
    from pytest_gotchas.report.wording_effects import effects_lines

    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict):
            print(f"\n{path}:")
            for chapter in from_data(data).effects:
                print("\n".join(f"[{chapter.model}] {chapter.chapter}: {line}" for line in effects_lines(chapter)))


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
    from pytest_gotchas.results.effects import Floor
    from pytest_gotchas.scoring.components import component_pass, patch_components
    from pytest_gotchas.scoring.pairpatch import components_entry, floored
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
        found = floored(replace(entry, unpatched=grid.unpatched, source_value=grid.source_value,
                                metric_dtype=grid.metric_dtype, step=grid.step, cells=[], prefix_shift=0.0,
                                components=typed), grid.magnitude, Floor())
        done.append(found)
        best = top_components(found, 1)
        strongest = named(found, best[0]) if best else f"no fraction: {found.under}"
        score = found.components.score if found.components is not None else None
        print(f"\n{entry.source} -> {entry.target}: effect {effect:+.5g} ({grid.metric_dtype}); best (exact) "
              f"{strongest}; grid {grid_s:.0f} s, screen + verify {screen_s:.0f} s ({screened.seconds:.1f} s "
              "gradients)")
        if score is not None:
            print(f"  top-{score.k} overlap {score.overlap}, mass {score.mass:.2f}; the exact top-{score.k} found "
                  f"after {sorted(score.found_at)} verifications of {score.cells}; area {score.area:.3f} "
                  f"(|estimate| alone {score.area_plain:.3f}); by band: {_bands(top_bands(found, typed))}")
        print("  top heads at the cut read: " + "; ".join(
            f"{p.layer}.{p.head}: " + ", ".join(f"{p.tokens[n]!r} {w * 100:.0f}%" for n, w in
                                                 sorted(enumerate(p.weights), key=lambda x: -x[1])[:3])
            for p in typed.patterns), flush=True)
        if args.out:
            args.out.write_text(json.dumps(adapter.dump_python(done, mode="json")), encoding="utf-8")


if __name__ == "__main__":
    main()
