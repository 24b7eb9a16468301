"""The bench's pure parts: medians and ratios, the order of interleaved scenarios, the renamed chapters, the overlap
of logged executions, and the markdown rendered from fixed figures. Nothing here starts a process or times
anything: speed is measured by `python -m bench.run`, never asserted in a test."""

from __future__ import annotations

import math

import pytest

from bench import render, scenarios
from bench.executions import max_overlap
from bench.figures import (BenchFigures, Comparison, ExecCheck, Executions, FeatureFigures, Growth, Machine, Memory,
                           Ratio, RunFigures, Same, Stat, median)
from bench.scenarios import Group, Scenario

MACHINE = Machine("today", 2, "1 kB", "CPU", "3.11", "2.13", "5.24", "9.2", "2", "False", "1.00 1.00 1.00")


def run(name: str, walls: list[float], rss: float = 1000.0, forward: float = 4.0, passes: int = 49,
        **phases: float) -> RunFigures:
    seconds = {"collection": 0.1, "model_load": 3.0, "tokenizer_load": 0.0, "cuts": 0.0, "forward": forward,
               "report": 0.0, **phases}
    return RunFigures(name, Stat.of(walls), Stat.of([rss] * len(walls)),
                      {k: Stat.of([v] * len(walls)) for k, v in seconds.items()},
                      cases=36, scored=34, prompts=46, passes=passes, calls=passes, tokens=2000)


def test_medians_and_ratios() -> None:
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert math.isnan(median([]))
    stat = Stat.of([5, 1, 3])
    assert (stat.median, stat.low, stat.high) == (3.0, 1.0, 5.0)
    # per repetition, paired by index, and the ratio of the medians: not the same number
    r = Ratio.of([10.0, 6.0, 8.0], [5.0, 12.0, 10.0])
    assert r.each == (2.0, 0.5, 0.8)
    assert r.median == 0.8
    assert r.of_medians == 0.8
    assert Ratio.of([1.0, 2.0], [2.0, 2.0]).each == (0.5, 1.0)
    assert math.isnan(Ratio.of([1.0], [0.0]).each[0])


def test_rest_of_the_process_is_the_wall_outside_the_phases() -> None:
    figures = run("warm", [10.0, 12.0])
    assert figures.rest.values == pytest.approx((2.9, 4.9))
    assert figures.per_pass == 4.0 / 49


def test_comparison_rows_against_the_reference() -> None:
    table = Comparison.of(run("plain", [10.0], rss=1000.0), [run("layers", [18.0], rss=1100.0, forward=8.0,
                                                                    layers=6.0)])
    assert [row.run.name for row in table.rows] == ["plain", "layers"]
    assert (table.rows[0].wall, table.rows[1].wall, table.rows[1].rss, table.rows[1].per_pass) == (1.0, 1.8, 1.1, 2.0)
    text = "\n".join(render.comparison(table))
    assert "| layers | 46 | 49 | 18.00 | 1.80 | 1100 | 1.10 | 2.00 | forward 8.00 s, layers 6.00 s |" in text
    assert "| plain | 46 | 49 | 10.00 | 1.00 | 1000 | 1.00 | 1.00 | forward 4.00 s |" in text


def test_group_order_cycles_and_appends_unnamed_scenarios() -> None:
    group = Group((scenarios.NAIVE, scenarios.COLD_RUN, scenarios.WARM_RUN, Scenario("extra")), 4, scenarios.ORDERS)
    names = [[s.name for s in group.order(rep)] for rep in range(4)]
    assert names == [["cold", "warm", "naive", "extra"], ["naive", "cold", "warm", "extra"],
                     ["cold", "naive", "warm", "extra"], ["cold", "warm", "naive", "extra"]]
    assert all(n.index("cold") < n.index("warm") for n in names)  # warm runs in its repetition's cold copy
    assert [s.name for s in Group((Scenario("a"), Scenario("b")), 1).order(3)] == ["a", "b"]


def test_bench_plan_follows_the_options() -> None:
    plan = scenarios.bench_plan(scenarios.BenchOptions(reps=1, batch_sizes=(), scales=(1, 4), scale_reps=2))
    assert [[s.name for s in g.scenarios] for g in plan] == [
        ["naive", "cold", "warm"], ["bare python", "imports"], ["collect-only"],
        ["-n 2 shared cores", "-n 2 all cores"], ["4x cold"], ["4x warm"]]
    assert [g.reps for g in plan] == [1, 2, 3, 1, 1, 2]


def test_renamed_chapter() -> None:
    text = "chapter: sets\ncases:\n  - id: a\n    x: 1\npairs:\n  p: [a, b]\n"
    assert scenarios.renamed_chapter(text, 0) == text
    assert scenarios.renamed_chapter(text, 2) == "chapter: sets-r2\ncases:\n  - id: a-r2\n    x: 1\npairs:\n" \
                                                 "  p: [a-r2, b-r2]\n"


def test_max_overlap() -> None:
    assert max_overlap([(0.0, 2.0, ()), (1.0, 3.0, ()), (2.5, 4.0, ()), (5.0, 6.0, ())]) == 2
    assert max_overlap([]) == 0


def bench_figures() -> BenchFigures:
    naive = RunFigures("naive", Stat.of([12.0, 12.5, 11.5]), Stat.of([1227.0] * 3),
                       {k: Stat.of([v] * 3) for k, v in
                        {"imports": 2.0, "tokenizer_load": 2.6, "weights": 1.0, "forward": 5.0}.items()},
                       prompts=46, passes=46, calls=46, tokens=1858)
    cold, warm = run("cold", [15.0, 16.0, 15.5], rss=1219.0), run("warm", [9.0, 10.0, 9.5], rss=960.0)
    same = Same(True, 98, ())
    exec_serial = Executions("serial", 135, 123, 3, 4, 11.0, 5.2, 17.7)
    return BenchFigures(
        MACHINE, "1.00 1.00 1.00", "/models/gemma", ("0-pep289.yaml",), 3, naive, cold, warm,
        Ratio.of(warm.wall.values, naive.wall.values), Ratio.of(cold.wall.values, naive.wall.values),
        (same,) * 3, 43, 43, Memory(511.0, Stat.of([19.0]), Stat.of([242.0])), RunFigures(
            "collect-only", Stat.of([0.65]), Stat.of([44.0])), (),
        run("-n 2 shared cores", [9.9]), run("-n 2 all cores", [14.2]), (True, True),
        (Growth(1, cold, warm), Growth(4, cold, warm)), None,
        ExecCheck(exec_serial, Executions("-n 2", 135, 123, 3, 4, 10.5, 5.1, 16.8), True, 3))


def test_bench_markdown_from_fixed_figures() -> None:
    text = render.bench_markdown(bench_figures())
    assert "| warm run <= 1.0x the naive reference | **0.80x** (ratio of the medians 0.79) | yes |" in text
    assert "| full forward passes per run <= 1.05 | 1.065 (49 for 46 runs; 0 incremental steps apart) | **no** |" \
           in text
    assert "| peak memory <= 1.3x (weights + interpreter baseline) | warm 1.27x, cold 1.62x (511 + 242 MB) | " \
           "warm yes, cold **no** |" in text
    assert "warm / naive: median of per-repetition ratios 0.80 (each: 0.75, 0.80, 0.83)" in text
    assert "| naive | 12.00 (11.50-12.50) | 1227 |" in text
    assert "| imports+weights | 3.00 | 3.00 | 3.00 | plugin: model_load |" in text
    assert "| 1x | 36 | 49 | 15.50 | 9.50 | 4.00 | 0.10 | 0.082 | 960 |" in text
    assert "-n 2 executed exactly what the serial run executed: True" in text
    assert "More whole runs" not in text  # no scenarios.EXTRA


def test_features_markdown_without_a_second_model() -> None:
    table = Comparison.of(run("plain", [10.0]), [run("variants", [23.5], forward=12.0)])
    text = render.features_markdown(FeatureFigures(MACHINE, ("0-pep289.yaml",), 2, table, None))
    assert "| variants | 46 | 49 | 23.50 | 2.35 |" in text
    assert "two models: not measured" in text
