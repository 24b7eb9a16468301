"""What the text reading's tree (issue #52 item 1) changed between two JSON reports of the same run, and what a run's
forward calls were: `python -m bench.tree BEFORE.json AFTER.json`; and what looking ahead costs:
`python -m bench.tree --ahead 0,1 REPORT.json [--model smollm2-135m]` scores every run of the report again, case by
case as the scorer does (the model in bfloat16 on the CPU, torch's default threads), once per AHEAD (readings.py: the
levels of a prompt's trie computed before the readings know they need them), and prints the forward calls, the
contexts and nodes the trees computed, and the CPU and wall seconds of each.

Prints, for each reading of each run whose probabilities differ, nothing but a count per reading name and the
largest move of P(correct) or P(wrong); every run verdict, case verdict (by each reading) and pair that moved; and
each report's forward calls against its runs and prompts: full passes (`forward_calls`), trees (`tree_calls`) and
per-context steps (`incremental_steps` less `tree_contexts`; a report written before the tree counts every step a
call). bench.same_report lists every differing field; this says what they come to (bench/RESULTS.md, "The text
reading's chains in one call per prompt").
"""

from __future__ import annotations

import json
import sys
from typing import Any


def runs(report: dict[str, Any]) -> dict[tuple[str, str, int], dict[str, Any]]:
    return {(c["chapter"], c["id"], n): run for c in report["cases"] for n, run in enumerate(c.get("runs", []))}


def reading_moves(before: dict[str, Any], after: dict[str, Any]) -> dict[str, tuple[int, float]]:
    """Per reading name: how many runs' readings have other probabilities, and the largest move."""
    moves: dict[str, tuple[int, float]] = {}
    old, new = runs(before), runs(after)
    for key in old.keys() & new.keys():
        for name, reading in old[key]["readings"].items():
            other = new[key]["readings"].get(name)
            if other is None:
                continue
            delta = max(abs(reading["p_correct"] - other["p_correct"]), abs(reading["p_wrong"] - other["p_wrong"]))
            if delta:
                count, worst = moves.get(name, (0, 0.0))
                moves[name] = (count + 1, max(worst, delta))
    return moves


def verdict_moves(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Every run verdict (by each reading), case verdict (by each reading) and pair that moved."""
    moved = []
    old, new = runs(before), runs(after)
    for key in sorted(old.keys() & new.keys()):
        for name, reading in old[key]["readings"].items():
            now = new[key]["readings"].get(name, {}).get("verdict")
            if now is not None and now != reading["verdict"]:
                moved.append(f"run {key[0]}/{key[1]}[{key[2]}] {name}: {reading['verdict']} -> {now}")
    cases = {(c["chapter"], c["id"]): c for c in after["cases"]}
    for case in before["cases"]:
        now = cases.get((case["chapter"], case["id"]))
        if now is None:
            continue
        if case["verdict"] != now["verdict"]:
            moved.append(f"case {case['chapter']}/{case['id']}: {case['verdict']} -> {now['verdict']}")
        for name, verdict in case.get("reading_verdicts", {}).items():
            if now.get("reading_verdicts", {}).get(name, verdict) != verdict:
                moved.append(f"case {case['chapter']}/{case['id']} by {name}: {verdict} -> "
                             f"{now['reading_verdicts'][name]}")
    pairs = {(p["chapter"], p["id"]): p["passed"] for p in after.get("pairs", [])}
    moved += [f"pair {p['chapter']}/{p['id']}: {p['passed']} -> {pairs[(p['chapter'], p['id'])]}"
              for p in before.get("pairs", []) if pairs.get((p["chapter"], p["id"]), p["passed"]) != p["passed"]]
    return moved


def calls(report: dict[str, Any]) -> str:
    t = report["run"]["timings"]
    every = runs(report).values()
    prompts = len({(run["prompt"], run["primer"]) for run in every})
    steps = t["incremental_steps"] - t.get("tree_contexts", 0)
    total = t["forward_calls"] + t.get("tree_calls", 0) + steps
    return (f"{len(every)} runs, {prompts} distinct prompts: {total} forward calls = {t['forward_calls']} full "
            f"({t['forward_passes']} passes) + {t.get('tree_calls', 0)} trees ({t.get('tree_contexts', 0)} contexts, "
            f"{t['incremental_tokens']} tokens fed) + {steps} per-context steps; {t['incremental_steps']} contexts "
            "on a KV cache")


def ahead_costs(path: str, model: str, aheads: list[int]) -> None:
    import time

    from pytest_gotchas.backends.transformers import TransformersBackend
    from pytest_gotchas.model.load import ModelSpec, load_model
    from pytest_gotchas.results.vocabulary import ReadingName
    from pytest_gotchas.scoring import readings
    from pytest_gotchas.scoring.cut import plan_cut
    from pytest_gotchas.scoring.vocab import build
    from pytest_gotchas.settings.options import Settings

    loaded = load_model(ModelSpec(name=model, dtype="bfloat16", device="cpu"), Settings().model_cache)
    backend, table = TransformersBackend(loaded), build(loaded.tokenizer)
    cases = [[readings.Cut(plan_cut(loaded.tokenizer, r["prompt"], r["correct"], r["wrong"]), r["prompt"],
                           r["correct"], r["wrong"]) for r in c["runs"]]
             for c in json.loads(open(path, encoding="utf-8").read())["cases"] if c.get("runs")]
    print(f"{model}: {len(cases)} cases, {sum(map(len, cases))} runs")
    for ahead in aheads:
        readings.AHEAD = ahead
        full = trees = steps = contexts = nodes = 0
        cpu, wall = time.process_time(), time.perf_counter()
        for cuts in cases:
            batch = readings.score_batch(backend, cuts, vocab=lambda: table, main=ReadingName.TEXT)
            full, trees = full + batch.calls, trees + batch.tree_calls
            steps += batch.steps - batch.tree_contexts
            contexts, nodes = contexts + batch.steps, nodes + batch.step_tokens
        print(f"AHEAD {ahead}: {full + trees + steps} forward calls = {full} full + {trees} trees + {steps} steps; "
              f"{contexts} contexts on a KV cache, {nodes} nodes fed; {time.process_time() - cpu:.1f} s CPU, "
              f"{time.perf_counter() - wall:.1f} s wall")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--ahead"]:
        model = argv[argv.index("--model") + 1] if "--model" in argv else "gemma-3-270m"
        ahead_costs(argv[2], model, [int(a) for a in argv[1].split(",")])
        return 0
    before, after = (json.loads(open(path, encoding="utf-8").read()) for path in argv[:2])
    for name, (count, worst) in sorted(reading_moves(before, after).items()):
        print(f"reading {name}: {count} runs' probabilities differ, by at most {worst:.3g}")
    moved = verdict_moves(before, after)
    for line in moved:
        print(line)
    print(f"{len(moved)} verdicts moved")
    print(f"before: {calls(before)}")
    print(f"after:  {calls(after)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
