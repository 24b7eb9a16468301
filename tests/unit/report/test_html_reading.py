"""How the page helps a reader (issue "a researcher's first hour"): the legend covers the layer chart and the
heatmap, a low layer chart is drawn on its own scale and says so, and the chapters a partial run left out of its
baseline comparison fold under their count."""

from __future__ import annotations

import re

from helpers.browser import between, text_of
from helpers.results import TINY_MODEL, make_run, report_of

from pytest_gotchas.report import html
from pytest_gotchas.report.page import change_lists
from pytest_gotchas.report.page_runs import chart_top, layer_chart
from pytest_gotchas.results.baselines import BaselineOutcome, Comparison
from pytest_gotchas.results.schema import LayerReading


def test_a_low_layer_chart_is_drawn_on_its_own_scale_and_says_so() -> None:
    run = make_run(0.04, 0.03)
    run.layers = [LayerReading(1, 0.01, 0.02), LayerReading(2, 0.04, 0.03)]
    chart = layer_chart(run)
    assert chart is not None and chart.scale == "0 to 5%, scaled"
    # y is the frame's top (4) at 5% and its bottom (78) at 0: 4% sits a fifth of 74 below the top
    assert [line.points for line in chart.lines] == ["14.0,63.2 246.0,18.8", "14.0,48.4 246.0,33.6"]
    run.layers = [LayerReading(1, 0.01, 0.6)]
    high = layer_chart(run)
    assert high is not None and high.scale == "0 to 1"
    assert [chart_top([v]) for v in (0.0, 0.01, 0.011, 0.3, 0.5, 0.51, 1.0)] == [0.01, 0.01, 0.02, 0.5, 0.5, 1.0, 1.0]


def test_the_not_run_list_folds_and_the_others_do_not() -> None:
    lists = change_lists(Comparison(not_run=["floats", "sets"], new_cases=["sets/x"]))
    assert [(c.title, c.folded) for c in lists if c.items] == [("new cases", False), ("not run", True)]
    outcome = BaselineOutcome(model="tiny", path="b.yaml", comparison=Comparison(not_run=["floats", "sets"]))
    report = report_of(TINY_MODEL)
    report.baselines.append(outcome)
    page = html.render(report)
    folded = between(page, "<h4>not run <b>2</b></h4>", "</details>")
    assert "<summary>show 2</summary>" in folded and "<code>floats</code>" in folded


def test_the_baseline_box_names_its_lists_as_the_count_line_does() -> None:
    outcome = BaselineOutcome(model="tiny", path="b.yaml", comparison=Comparison(unchanged=10))
    report = report_of(TINY_MODEL)
    report.baselines.append(outcome)
    box = between(html.render(report), '<div class="baseline">', '<p class="small bline')
    assert "<h4>not checked <b>0</b></h4>" in box and "unchecked" not in box.lower()


def test_the_legend_covers_the_layer_chart_and_the_heatmap() -> None:
    legend = text_of(between(html.render(report_of(TINY_MODEL)), '<details class="legend"', "</details>"))
    for words in ("The layer chart (--gotchas-layers)", "0 to 5%, scaled", "The heatmap (--gotchas-patch",
                  "how many steps its effect is"):
        assert words in re.sub(r"\s+", " ", legend), words
