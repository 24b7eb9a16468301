#!/usr/bin/env python
"""Are the one-pass readings the separate full passes they replace, bit for bit? Row by row, for several refeeds.

    python bench/onepass.py --report out.json [--model smollm2-135m] [--chapters 0-,1-,2-,3-,4-] [--refeeds 1,2,4,8]

Takes the prompts of a plugin run (its JSON report), plans every cut again with the model's tokenizer, and for each
case (the runs the plugin scores together): computes every reading with separate full passes (Rows: one pass per
context, as before one-pass scoring), then with one pass per prompt (OnePassRows) once for each refeed, sharing the
main passes. Every context the separate passes computed is compared bit for bit with the one-pass row for it, split
into the main pass's earlier positions and the incremental steps; and every reading and run verdict. One process,
the model in bfloat16 on the CPU, torch's default threads.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report", type=Path, required=True, help="a plugin run's JSON report (its prompts)")
    parser.add_argument("--model", default="gemma-3-270m", help="embedded model name, hub id or folder")
    parser.add_argument("--chapters", default="", help="comma-separated chapter file prefixes (default: every one)")
    parser.add_argument("--refeeds", default="1,2,4,8")
    parser.add_argument("--reading", default="text", choices=("text", "token"))
    args = parser.parse_args()

    import torch

    from pytest_gotchas.model.load import ModelSpec, load_model
    from pytest_gotchas.plugin.options import Settings
    from pytest_gotchas.scoring.cut import plan_cut
    from pytest_gotchas.scoring.readings import Cut, OnePassRows, Rows, read_cut
    from pytest_gotchas.scoring.vocab import build

    report = json.loads(args.report.read_text())
    prefixes = [p for p in args.chapters.split(",") if p]
    files = {c["name"]: Path(c["path"]).name for c in report["chapters"]}
    cases = [c for c in report["cases"] if c.get("runs")
             and (not prefixes or any(files.get(c["chapter"], "").startswith(p) for p in prefixes))]
    loaded = load_model(ModelSpec(name=args.model, dtype="bfloat16", device="cpu"), Settings().model_cache)
    tokenizer = loaded.tokenizer
    table = build(tokenizer)
    refeeds = [int(r) for r in args.refeeds.split(",")]
    decode_cache: dict[int, str] = {}

    def decode(token: int) -> str:
        if token not in decode_cache:
            decode_cache[token] = tokenizer.decode([token])
        return decode_cache[token]

    rows_differ = {r: collections.Counter() for r in refeeds}  # refeed -> {"earlier": n, "step": n}
    rows_total: collections.Counter = collections.Counter()
    readings_differ = {r: [] for r in refeeds}
    verdicts_differ = {r: [] for r in refeeds}
    readings_total = 0
    passes = {"separate": 0, "main": 0, "full": 0}
    steps = {r: 0 for r in refeeds}
    seconds = {"separate": 0.0, "main": 0.0, **{f"steps@{r}": 0.0 for r in refeeds}}
    runs = 0
    for case in cases:
        cuts = [Cut(plan_cut(tokenizer, r["prompt"], r["correct"], r["wrong"]), r["prompt"], r["correct"], r["wrong"])
                for r in case["runs"]]
        plans = [c.plan for c in cuts]
        runs += len(cuts)
        dtype = "bfloat16"
        started = time.perf_counter()
        separate = Rows(loaded.model, dtype, 1, 5)
        expected = [read_cut(c, separate, dtype, separate.other_dtype, table, decode, args.reading) for c in cuts]
        seconds["separate"] += time.perf_counter() - started
        passes["separate"] += separate.full
        started = time.perf_counter()
        base = OnePassRows(loaded.model, dtype, 1, 5)
        base.prompts(plans)
        seconds["main"] += time.perf_counter() - started
        passes["main"] += base.full
        earlier = set(base.main)
        for context in separate.main:
            rows_total["earlier" if context in earlier else "step"] += 1
        for refeed in refeeds:
            rows = OnePassRows(loaded.model, dtype, 1, 5, refeed)
            rows.main, rows.other, rows.top = dict(base.main), dict(base.other), dict(base.top)
            rows.caches, rows.full_contexts = dict(base.caches), list(base.full_contexts)
            rows.full = base.full
            started = time.perf_counter()
            got = [read_cut(c, rows, dtype, rows.other_dtype, table, decode, args.reading) for c in cuts]
            rows.need(list(separate.main))  # every context the separate passes computed, also those not read here
            seconds[f"steps@{refeed}"] += time.perf_counter() - started
            steps[refeed] += rows.steps
            passes["full"] += rows.full - base.full
            for context, row in separate.main.items():
                same = torch.equal(rows.main[context], row) and torch.equal(rows.other[context], separate.other[context])
                if not same:
                    rows_differ[refeed]["earlier" if context in earlier else "step"] += 1
            for run, a, b in zip(case["runs"], got, expected):
                label = f"{case['chapter']}/{case['id']}" + (f"[{run['primer']}]" if run.get("primer") else "")
                for name in b:
                    if a[name] != b[name]:
                        readings_differ[refeed].append(f"{label} {name}")
                        if a[name].verdict != b[name].verdict:
                            verdicts_differ[refeed].append(f"{label} {name} {a[name].verdict} -> {b[name].verdict}")
        readings_total += sum(len(e) for e in expected)
    print(f"model {args.model}; {len(cases)} cases, {runs} runs; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, cpu capability {torch.backends.cpu.get_cpu_capability()}")
    print(f"separate passes: {passes['separate']} full passes ({seconds['separate']:.1f} s); one pass: "
          f"{passes['main']} full passes ({seconds['main']:.1f} s: one per prompt, and the token readings' contexts "
          f"outside them), {passes['full']} more over the refeeds (contexts no cache could be extended to)")
    print(f"contexts compared: {rows_total['earlier']} at earlier positions of a main pass (the last included), "
          f"{rows_total['step']} as incremental steps; {readings_total} readings")
    for refeed in refeeds:
        print(f"refeed {refeed}: rows differing: earlier positions {rows_differ[refeed]['earlier']}/"
              f"{rows_total['earlier']}, steps {rows_differ[refeed]['step']}/{rows_total['step']} "
              f"({steps[refeed]} steps, {seconds[f'steps@{refeed}']:.1f} s); readings differing "
              f"{len(readings_differ[refeed])}/{readings_total}; verdicts differing {len(verdicts_differ[refeed])}")
        for line in readings_differ[refeed]:
            print(f"    reading: {line}")
        for line in verdicts_differ[refeed]:
            print(f"    verdict: {line}")


if __name__ == "__main__":
    main()
