"""Running the scenarios (interleaved and repeated, as their groups say) and turning the runs into figures.

Every figure comes from whole processes (child.py). Runs are kept by scenario name; the figures are computed from
them afterwards, so that running and reading stay apart.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_gotchas.results.report import Report

from . import scenarios
from .child import Child, load_average, log, plugin, script
from .figures import (Batch, BenchFigures, Comparison, ExecCheck, FeatureFigures, Growth, Machine, Memory, Ratio,
                      RunFigures, Same, Stat, TwoModels)
from .scenarios import COLD, NONE, WARM, Group, Scenario
from pytest_gotchas.results.vocabulary import ReadingName

Runs = dict[str, list[Child]]  # by scenario name, in the order they ran


@dataclass
class Context:
    """Where the scenarios run: the bench's temporary directory, its copies of the cases, the model folder."""

    root: Path
    chapters: Sequence[Path]
    model: Path
    warm_up: tuple[tuple[str, ...], ...] = ((),)  # the uncounted runs that warm a copy no cold run has warmed
    warm_dirs: dict[int, Path] = field(default_factory=dict)  # by scale: the copy warm runs use
    prompt_source: Report | None = None  # a plain run's report: the naive script's prompts
    copies: int = 0

    def fresh(self, scale: int) -> Path:
        self.copies += 1
        return scenarios.make_workdir(self.root, f"cases{self.copies}-{scale}x", self.chapters, scale)

    def warm(self, scale: int) -> Path:
        if scale not in self.warm_dirs:
            workdir = self.fresh(scale)
            for n, options in enumerate(self.warm_up):
                log(f"warming a copy of the cases at {scale}x (not counted): {' '.join(options) or 'plain'}")
                plugin(workdir, f"warm-up{n}", *options)
            self.warm_dirs[scale] = workdir
        return self.warm_dirs[scale]

    def prompts(self) -> Path:
        """Every prompt of a plain plugin run, from its report (a throwaway run if none has run yet)."""
        path = self.root / "prompts.json"
        if not path.exists():
            report = self.prompt_source or plugin(self.fresh(1), "prompts").report
            assert report is not None
            path.write_text(json.dumps(prompts_of(report)))
        return path


def run_scenario(ctx: Context, scenario: Scenario) -> Child:
    cwd = ctx.root if scenario.cache == NONE else ctx.fresh(scenario.scale) if scenario.cache == COLD \
        else ctx.warm(scenario.scale)
    if scenario.script is not None:
        child = script(cwd, *scenario.script(ctx), env=scenario.env)
    else:
        name = "".join(c if c.isalnum() else "-" for c in scenario.name)
        child = plugin(cwd, name, *scenario.options, env=scenario.env)
        if not scenario.options and scenario.scale == 1 and ctx.prompt_source is None:
            ctx.prompt_source = child.report
    if scenario.cache == COLD:
        ctx.warm_dirs[scenario.scale] = cwd  # later warm runs run after this one, in its caches
    return child


def run_plan(ctx: Context, plan: Sequence[Group]) -> Runs:
    runs: Runs = {}
    for group in plan:
        for rep in range(group.reps):
            for scenario in group.order(rep):
                log(f"{scenario.name}, repetition {rep + 1}/{group.reps}")
                runs.setdefault(scenario.name, []).append(run_scenario(ctx, scenario))
    return runs


# -- from runs to figures -----------------------------------------------------------------------------------------


def run_figures(name: str, children: Sequence[Child]) -> RunFigures:
    """A plugin run's figures from its reports and timings; the naive script's from what it printed."""
    first = children[0]
    wall, rss = Stat.of([c.wall for c in children]), Stat.of([c.maxrss_mb for c in children])
    if first.report is None:
        keys = first.extra.get("seconds", {})
        return RunFigures(name, wall, rss, {k: Stat.of([c.extra["seconds"][k] for c in children]) for k in keys},
                          prompts=first.extra.get("passes", 0), passes=first.extra.get("passes", 0),
                          calls=first.extra.get("passes", 0), tokens=first.extra.get("tokens", 0))
    t, results = first.timings, first.report.results
    workers = list(first.workers.values())
    return RunFigures(
        name, wall, rss, {k: Stat.of([c.seconds(k) for c in children]) for k in t.seconds},
        cases=len(results), scored=sum(r.scored for r in results), prompts=sum(len(r.runs) for r in results),
        passes=t.forward_passes + sum(w.forward_passes for w in workers),
        calls=t.forward_calls + sum(w.forward_calls for w in workers),
        tokens=t.prompt_tokens + sum(w.prompt_tokens for w in workers),
        steps=t.incremental_steps + sum(w.incremental_steps for w in workers),
        step_tokens=t.incremental_tokens + sum(w.incremental_tokens for w in workers),
        check_passes=t.check_passes + sum(w.check_passes for w in workers),
        tokenizer_loaded=sum(c.timings.tokenizer_loaded for c in children),
        cut_cache_hits=t.cut_cache.hits, transcript_cache_hits=t.transcript_cache.hits,
        misses=t.transcript_cache.misses + sum(w.transcript_cache.misses for w in workers),
        torch_threads=tuple(sorted({w.torch_threads or 0 for w in workers})) if workers else
        ((t.torch_threads,) if t.torch_threads else ()))


def figures_of(runs: Runs, scenario: Scenario) -> RunFigures:
    return run_figures(scenario.name, runs[scenario.name])


def figures_if_run(runs: Runs, scenario: Scenario) -> RunFigures | None:
    """None for a scenario the plan left out (--cost-only, --no-xdist)."""
    return figures_of(runs, scenario) if runs.get(scenario.name) else None


def comparison(runs: Runs, reference: Scenario, others: Sequence[Scenario]) -> Comparison:
    return Comparison.of(figures_of(runs, reference), [figures_of(runs, s) for s in others if s.name in runs])


def numbers(report: Report) -> dict[str, list[object]]:
    """Every probability (and top-k entry) a report holds, by model and case."""
    return {f"{r.model}:{r.key}" if r.model else r.key:
            [({name: (x.p_correct, x.p_wrong, x.verdict) for name, x in run.readings.items()},
              [(t.token, t.p) for t in run.top]) for run in r.runs] for r in report.results}


def same_numbers(a: Report | None, b: Report | None) -> Same:
    assert a is not None and b is not None
    na, nb = numbers(a), numbers(b)
    differ = sorted(k for k in set(na) | set(nb) if na.get(k) != nb.get(k))
    values = sum(2 * len(run.readings) for r in a.results for run in r.runs)
    return Same(not differ, values, tuple(differ))


def prompts_of(report: Report) -> list[dict[str, object]]:
    return [{"prompt": run.prompt, "correct": run.correct, "wrong": run.wrong, "reading": run.readings[ReadingName.TOKEN].kind,
             "p_correct": run.p_correct, "p_wrong": run.p_wrong}
            for r in report.results for run in r.runs]


def plain_agreement(prompts_file: Path, naive: Child) -> tuple[int, int]:
    """(identical, compared): the naive script's P(correct), P(wrong) against the plugin's where the cut is plain."""
    prompts = json.loads(prompts_file.read_text())
    plain = [(p, q) for p, q in zip(prompts, naive.extra["probs"]) if p["reading"] == "plain"]
    return sum((p["p_correct"], p["p_wrong"]) == tuple(q) for p, q in plain), len(plain)


def bench_figures(ctx: Context, runs: Runs, machine: Machine, plan: scenarios.BenchOptions,
                  executions: ExecCheck | None) -> BenchFigures:
    """Every figure of `bench.run`, from the runs of scenarios.bench_plan."""
    s = scenarios
    naive, cold, warm = runs[s.NAIVE.name], runs[s.COLD_RUN.name], runs[s.WARM_RUN.name]
    batches = [Batch(size, figures_of(runs, s.batch(size)),
                     tuple(same_numbers(warm[-1].report, c.report) for c in runs[s.batch(size).name]))
               for size in plan.batch_sizes]
    xdist = runs.get(s.XDIST_SHARED.name, []) + runs.get(s.XDIST_ALL.name, [])
    growth = [Growth(n, figures_of(runs, s.scaled(n, COLD)), figures_of(runs, s.scaled(n, WARM))) if n != 1
              else Growth(1, figures_of(runs, s.COLD_RUN), figures_of(runs, s.WARM_RUN)) for n in plan.scales]
    plain_same, plain = plain_agreement(ctx.prompts(), naive[0])
    weights_mb = sum(p.stat().st_size for p in ctx.model.glob("*.safetensors")) / 2**20
    return BenchFigures(
        machine, load_average(), str(ctx.model), tuple(p.name for p in ctx.chapters), plan.reps,
        figures_of(runs, s.NAIVE), figures_of(runs, s.COLD_RUN), figures_of(runs, s.WARM_RUN),
        Ratio.of([c.wall for c in warm], [c.wall for c in naive]),
        Ratio.of([c.wall for c in cold], [c.wall for c in naive]),
        tuple(same_numbers(c.report, w.report) for c, w in zip(cold, warm)), plain_same, plain,
        Memory(weights_mb, Stat.of([c.maxrss_mb for c in runs[s.BARE.name]]),
               Stat.of([c.maxrss_mb for c in runs[s.IMPORTS.name]])),
        figures_if_run(runs, s.COLLECT_ONLY), tuple(batches),
        figures_if_run(runs, s.XDIST_SHARED), figures_if_run(runs, s.XDIST_ALL),
        tuple(same_numbers(warm[-1].report, c.report).identical for c in xdist), tuple(growth),
        comparison(runs, s.NAIVE, [s.COLD_RUN, s.WARM_RUN, *s.EXTRA]) if s.EXTRA else None, executions)


def feature_figures(runs: Runs, machine: Machine, chapter_files: Sequence[Path], reps: int) -> FeatureFigures:
    """Every figure of `bench.features`, from the runs of scenarios.features_plan."""
    s = scenarios
    table = comparison(runs, s.PLAIN, [*s.FEATURES[1:], s.TWO_MODELS])
    two = None
    if s.TWO_MODELS.name in runs:
        two = TwoModels(figures_of(runs, s.TWO_MODELS), figures_of(runs, s.SMOLLM2_ALONE),
                        figures_of(runs, s.COLD_ONE).misses, figures_of(runs, s.COLD_TWO).misses)
    return FeatureFigures(machine, tuple(p.name for p in chapter_files), reps, table, two)
