"""The one-pass cost (issue #26) in the bench's pure parts: --cost-only's plan, the counts read from a typed format-3
report (`run.timings`, and each worker's under `run.workers`), the per-run figures and their markdown. Nothing
here starts a process or loads a model."""

from __future__ import annotations

import math

from helpers.results import SETS_CHAPTER, TINY_MODEL, make_case, make_run

from bench import render, run, scenarios
from bench.child import Child, read_report
from bench.figures import BenchFigures, Growth, Machine, Memory, PerRun, Ratio, RunFigures, Same, Stat
from bench.measure import figures_if_run, run_figures
from pytest_gotchas.results.report import Report, to_json
from pytest_gotchas.results.schema import Invocation, Timings

MACHINE = Machine("today", 2, "1 kB", "CPU", "3.11", "2.13", "5.24", "9.2", "2", "False", "1.00 1.00 1.00")


def names(plan: list[scenarios.Group]) -> list[list[str]]:
    return [[s.name for s in g.scenarios] for g in plan]


def test_cost_only_plan_is_cold_warm_and_naive_and_the_memory_baseline() -> None:
    options = scenarios.cost_only(scenarios.BenchOptions(reps=2))
    assert (options.reps, options.batch_sizes, options.scales, options.xdist, options.collect_only) == \
        (2, (), (1,), False, False)
    plan = scenarios.bench_plan(options)
    assert names(plan) == [["naive", "cold", "warm"], ["bare python", "imports"]]
    assert [g.reps for g in plan] == [2, 2]
    assert all(g.orders == scenarios.ORDERS for g in plan[:1])  # still interleaved, naive at each place in turn


def test_no_xdist_leaves_out_only_the_n_2_runs() -> None:
    plan = scenarios.bench_plan(scenarios.BenchOptions(reps=1, batch_sizes=(4,), scales=(1,), xdist=False))
    assert names(plan) == [["naive", "cold", "warm"], ["bare python", "imports"], ["collect-only"], ["batch 4"]]


def test_cost_only_option() -> None:
    args = run.parse(["--cost-only", "--reps", "2"])
    assert (args.cost_only, args.no_exec_count, args.reps) == (True, True, 2)
    assert run.parse(["--no-xdist"]).no_xdist and not run.parse([]).no_exec_count


def report(timings: Timings, workers: dict[str, Timings] | None = None) -> Report:
    results = [make_case(case_id, "sets", [make_run(0.75, 0.125), make_run(0.5, 0.25, primer="p")],
                         model=TINY_MODEL.id) for case_id in "ab"]
    return Report(results, [SETS_CHAPTER], [TINY_MODEL], Invocation(command="pytest --gotchas", timings=timings,
                                                                 workers=workers or {}))


def child(r: Report, tmp_path, wall: float = 10.0) -> Child:  # type: ignore[no-untyped-def]
    """A Child whose report went through JSON and back, as child.run_child reads it."""
    path = tmp_path / "report.json"
    path.write_text(to_json(r))
    return Child([], wall, 900.0, 0, "", "", read_report(path))


def test_counts_come_from_run_timings(tmp_path) -> None:  # type: ignore[no-untyped-def]
    timings = Timings(seconds={"forward": 3.0, "collection": 0.2}, forward_passes=4, forward_calls=4,
                      prompt_tokens=120, incremental_steps=3, incremental_tokens=5, check_passes=0,
                      torch_threads=2, transcript_cache={"hits": 2, "misses": 0})
    figures = run_figures("warm", [child(report(timings), tmp_path)])
    assert (figures.cases, figures.scored, figures.prompts) == (2, 2, 4)
    assert (figures.passes, figures.calls, figures.tokens, figures.steps, figures.step_tokens) == (4, 4, 120, 3, 5)
    assert figures.phase("forward") == 3.0 and figures.torch_threads == (2,)


def test_under_xdist_each_workers_counts_are_added(tmp_path) -> None:  # type: ignore[no-untyped-def]
    def worker(passes: int, steps: int) -> Timings:
        return Timings(forward_passes=passes, forward_calls=passes, prompt_tokens=10 * passes,
                       incremental_steps=steps, incremental_tokens=steps, check_passes=passes, torch_threads=1,
                       transcript_cache={"misses": 1})

    controller = Timings(seconds={"forward": 0.0})
    figures = run_figures("-n 2", [child(report(controller, {"gw0": worker(2, 1), "gw1": worker(3, 2)}), tmp_path)])
    assert (figures.passes, figures.tokens, figures.steps, figures.step_tokens, figures.check_passes) == \
        (5, 50, 3, 3, 5)
    assert figures.misses == 2 and figures.torch_threads == (1,)


def test_a_scenario_not_run_has_no_figures() -> None:
    assert figures_if_run({}, scenarios.XDIST_SHARED) is None
    assert figures_if_run({"collect-only": []}, scenarios.COLLECT_ONLY) is None


def plugin_run(name: str, walls: list[float], forward: float, passes: int, steps: int) -> RunFigures:
    return RunFigures(name, Stat.of(walls), Stat.of([960.0] * len(walls)),
                      {"collection": Stat.of([0.1] * len(walls)), "model_load": Stat.of([3.0] * len(walls)),
                       "forward": Stat.of([forward] * len(walls))},
                      cases=36, scored=34, prompts=46, passes=passes, calls=passes, tokens=1900, steps=steps,
                      step_tokens=2 * steps)


def cost_only_figures() -> BenchFigures:
    naive = RunFigures("naive", Stat.of([12.0, 14.0]), Stat.of([1227.0] * 2),
                       {k: Stat.of([v] * 2) for k, v in
                        {"imports": 2.0, "tokenizer_load": 2.6, "weights": 1.0, "forward": 6.9}.items()},
                       prompts=46, passes=46, calls=46, tokens=1858)
    cold = plugin_run("cold", [15.0, 16.0], 4.6, 46, 40)
    warm = plugin_run("warm", [9.0, 11.5], 4.6, 46, 40)
    return BenchFigures(
        MACHINE, "2.00 2.00 2.00", "/models/gemma", ("0-pep289.yaml",), 2, naive, cold, warm,
        Ratio.of(warm.wall.values, naive.wall.values), Ratio.of(cold.wall.values, naive.wall.values),
        (Same(True, 98, ()),) * 2, 43, 43, Memory(511.0, Stat.of([19.0]), Stat.of([242.0])), None, (), None, None,
        (), (Growth(1, cold, warm),), None, None)


def test_per_run_figures() -> None:
    f = cost_only_figures()
    per = PerRun.of(f.warm, f.naive)
    assert per == f.per_run
    assert (per.runs, per.passes, per.naive_passes) == (46, 1.0, 1.0)
    assert math.isclose(per.steps, 40 / 46) and math.isclose(per.forward, 0.1) and math.isclose(per.naive_forward, 0.15)
    assert math.isclose(per.forward_ratio, 4.6 / 6.9) and math.isclose(per.wall, 10.25 / 46)
    assert math.isnan(PerRun.of(f.warm, RunFigures("empty", Stat(()), Stat(()))).passes)


def test_cost_only_markdown() -> None:
    text = render.bench_markdown(cost_only_figures())
    assert "the plugin runs 46 full forward passes (1900 tokens) and 40 incremental steps on their KV caches (80 " \
           "tokens fed), the naive script 46 full passes (1858 tokens). 2 repetitions" in text
    assert "per run: the plugin 1.000 full passes and 0.870 steps, the naive script 1.000 passes; forward seconds " \
           "per run: plugin warm 0.100, naive 0.150 (ratio of medians 0.67); whole run per prompt: plugin warm " \
           "0.223 s, naive 0.283 s" in text
    assert "| warm run <= 1.0x the naive reference | **0.79x** (ratio of the medians 0.79) | yes |" in text
    assert "| full forward passes per run <= 1.05 | 1.000 (46 for 46 runs; 40 incremental steps apart) | yes |" in text
    assert "warm / naive: median of per-repetition ratios 0.79 (each: 0.75, 0.82); ratio of medians 0.79   " \
           "target <= 1.0\n" in text
    assert "| batch sizes bit-identical to batch 1 | not run | n/a |" in text
    assert "whole `pytest --gotchas cases --collect-only` process: not run" in text
    for absent in ("## Batching", "## pytest-xdist", "## Growth", "## Cold ground truth"):
        assert absent not in text
