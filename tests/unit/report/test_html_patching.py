"""The page's heatmaps of --gotchas-patch (report/page_patching.py): one per model, direction and primer under the
pair's row, coloured by the fraction restored, the figures on hover; made from a Patching written by hand."""

from __future__ import annotations

import dataclasses
import re

import markupsafe
from helpers.results import TINY_MODEL, report_of

from pytest_gotchas.report import html
from pytest_gotchas.report.page import build_page
from pytest_gotchas.report.page_patching import colour, heatmap
from pytest_gotchas.report.wording_patching import PATCHING_EXPLAIN
from pytest_gotchas.results.schema import Patching

CELLS = [[-1.0, 2.0, 2.0],  # layer 1: 'list' restores 75%
         [1.0, 2.0, 0.0],  # layer 2: the last position restores 50%
         [2.0, 6.0, -2.0]]  # layer 3: '(' pushes away (-100%), the last position is the source's value


def direction(**values: object) -> Patching:
    base = dict(source="b", target="a", primer=None, source_ids=[2, 5, 9, 7], target_ids=[2, 6, 9, 8],
                candidate_ids=[11, 12], layers=[1, 2, 3], positions=[[1, 1], [2, 2], [3, 3]],
                tokens=["list", "(", "<\n>"], unpatched=2.0, source_value=-2.0, cells=CELLS, method="layer-batch",
                group="ab", prefix=1)
    return Patching(**{**base, **values})  # type: ignore[arg-type]


def test_a_cell_is_coloured_by_the_fraction_restored_and_centred_on_zero() -> None:
    assert colour(0.0) == ("background:rgba(33,102,172,0.00)", False)
    assert colour(0.75) == ("background:rgba(33,102,172,0.75)", True)
    assert colour(-0.25) == ("background:rgba(178,24,43,0.25)", False)
    assert colour(-3.0) == ("background:rgba(178,24,43,1.00)", True)  # clipped at 100%
    assert colour(None) == ("background:#f0f0f0", False)


def test_the_heatmap_has_a_row_per_layer_and_a_column_per_aligned_token() -> None:
    map_ = heatmap("tiny", direction())
    assert map_.tokens == ["'list'", "'('", "'<\\n>'"]
    assert [r.layer for r in map_.rows] == [1, 2, 3]
    assert [[c.text for c in r.cells] for r in map_.rows] == [["75", "0", "0"], ["25", "0", "50"],
                                                             ["0", "-100", "100"]]
    cell = map_.rows[0].cells[0]
    assert cell.title == "layer 1 at 'list': 75.0% of the effect restored; logit difference -1"
    assert map_.caption == "b \u2192 a: logit difference +2 unpatched, -2 on the source (layer-batch)"
    assert map_.line.startswith("b -> a: layer 1 at 'list' (position 1) restores 75% of the effect")
    flat = heatmap("tiny", direction(source_value=2.0, primer="dicts"))
    assert {c.text for r in flat.rows for c in r.cells} == {""}
    assert flat.rows[0].cells[0].title == "layer 1 at 'list': no effect to restore; logit difference -1"
    assert flat.caption.startswith("b \u2192 a, primer dicts: ")


def test_the_page_draws_each_direction_under_its_pair() -> None:
    report = report_of(TINY_MODEL)
    a, b = report.results
    back = direction(source="a", target="b", tokens=["set", "(", ")"])
    report = dataclasses.replace(report, results=[dataclasses.replace(a, patching=[direction()]),
                                                dataclasses.replace(b, patching=[back])])
    (row,) = build_page(report).chapters[0].pairs.rows
    assert [m.caption.split(":")[0] for m in row.heatmaps] == ["b \u2192 a", "a \u2192 b"]
    page = html.render(report)
    assert str(markupsafe.escape(PATCHING_EXPLAIN)) in page
    assert "patched: pair ab (2 directions)" in page
    assert page.count('<table class="heat">') == 2
    assert ('<td style="background:rgba(33,102,172,0.75)" class="dark" title="layer 1 at &#39;list&#39;: 75.0% of '
            'the effect restored; logit difference -1">75</td>') in page
    assert "<code>&#39;&lt;\\n&gt;&#39;</code>" in page  # a token's text is escaped, never markup
    plain = html.render(report_of(TINY_MODEL))
    assert 'class="heat"' not in plain and PATCHING_EXPLAIN[:40] not in plain
    assert not re.search(r"<td[^>]*>None</td>", page)


def test_the_component_grid_draws_beside_the_residual_heatmap() -> None:
    from pytest_gotchas.results.schema import Components

    grid = Components(layers=[1, 2, 3], heads=2, attn=[[2.0, 2.0, -2.0]] * 3, mlp=[[2.0, 0.0, 2.0]] * 3,
                      head=[[[2.0, 2.0, -2.0], [2.0, 2.0, 2.0]]] * 3, post_norms=False, batched=True)
    map_ = heatmap("tiny", direction(components=grid, source_tokens=["set", "(", "<\n>"]))
    assert [m.caption.split(",")[0] for m in map_.components] == [
        "attention writes", "MLP writes", "heads at '<\\n>' -> '<\\n>'"]
    attention, mlp, heads = map_.components
    assert attention.tokens == ["'set' -> 'list'", "'(' -> '('", "'<\\n>' -> '<\\n>'"]
    assert [[c.text for c in r.cells] for r in mlp.rows] == [["0", "50", "0"]] * 3
    assert heads.tokens == ["head 0", "head 1"]
    assert [[c.text for c in r.cells] for r in heads.rows] == [["100", "0"]] * 3
    assert attention.rows[0].cells[2].title.startswith("layer 1 at attention '<\\n>' -> '<\\n>': 100.0% of the effect")
    report = report_of(TINY_MODEL)
    a, b = report.results
    report = dataclasses.replace(report, results=[
        dataclasses.replace(a, patching=[direction(components=grid)]), b])
    page = html.render(report)
    assert page.count('<table class="heat">') == 4 and page.count('class="heatmap components"') == 3


def test_the_top_heads_attention_at_the_cut_draws_under_the_component_maps() -> None:
    from pytest_gotchas.report.page_patching import pattern_map
    from pytest_gotchas.results.schema import Components, HeadPattern

    tokens = ["<bos>", "set", "(", "<\n>"]
    grid = Components(layers=[1, 2, 3], heads=2, attn=[[2.0, 2.0, -2.0]] * 3, mlp=[[2.0, 0.0, 2.0]] * 3,
                      head=[[[2.0, 2.0, -2.0], [2.0, 2.0, 2.0]]] * 3, post_norms=False, batched=True,
                      patterns=[HeadPattern(layer=2, head=0, weights=[0.5, 0.25, 0.25, 0.0], tokens=tokens)])
    assert pattern_map(direction()) is None  # no component grid, no pattern
    found = pattern_map(direction(components=grid))
    assert found is not None and found.tokens == ["'<bos>'", "'set'", "'('", "'<\\n>'"]
    assert [r.label for r in found.rows] == ["2.0"]
    assert [c.text for c in found.rows[0].cells] == ["50", "25", "25", "0"]
    assert found.rows[0].cells[1].title == "head 2.0 at the cut reads 'set' (position 1) with weight 25.0%"
    report = report_of(TINY_MODEL)
    a, b = report.results
    page = html.render(dataclasses.replace(report, results=[
        dataclasses.replace(a, patching=[direction(components=grid)]), b]))
    assert page.count('class="heatmap pattern"') == 1 and "where the heads that move the metric most" in page


def test_the_screen_s_top_k_is_a_table_of_estimate_beside_exact_and_alone_it_says_why_there_is_no_score() -> None:
    from pytest_gotchas.report.wording_patching import SCORE_NEEDS_GRID
    from pytest_gotchas.results.schema import Components, Screened

    top = [Screened(kind="attn", layer=3, head=0, position=2, estimate=-3.0, exact=-2.0, graddrop=4.0),
           Screened(kind="head", layer=1, head=1, position=0, estimate=0.5, exact=1.0)]
    grid = Components(layers=[1, 2, 3], heads=2, attn=[[2.0, 2.0, -2.0]] * 3, mlp=[[2.0, 0.0, 2.0]] * 3,
                      head=[[[2.0, 2.0, -2.0], [2.0, 2.0, 2.0]]] * 3, post_norms=False, batched=True, screened=top)
    beside = heatmap("tiny", direction(components=grid)).screen
    assert beside is not None and beside.line == "" and SCORE_NEEDS_GRID not in beside.caption
    assert beside.columns == ("rank", "component", "tokens", "estimated", "exact", "GradDrop")
    assert beside.rows == [("1", "attention 3", "'<\\n>' (position 3: the cut)", "75%", "100%", "100%"),
                           ("2", "head 1.1", "'list' (position 1)", "-12%", "25%", "")]
    alone = dataclasses.replace(grid, layers=[], attn=[], mlp=[], head=[], method="screen")
    map_ = heatmap("tiny", direction(components=alone))
    assert map_.components == [] and map_.screen is not None and map_.screen.rows == beside.rows
    assert SCORE_NEEDS_GRID in map_.screen.caption and map_.screen.line.startswith("components b -> a: attention 3 at")
    report = report_of(TINY_MODEL)
    a, b = report.results
    page = html.render(dataclasses.replace(report, results=[
        dataclasses.replace(a, patching=[direction(components=alone)]), b]))
    assert page.count('<table class="screen">') == 1 and page.count('<table class="heat">') == 1
    assert str(markupsafe.escape(SCORE_NEEDS_GRID)) in page
    assert "<td>75%</td><td>100%</td>" in page


def test_a_direction_under_the_floor_is_grey_without_a_percentage_and_the_chapter_view_comes_first() -> None:
    """Issue 53: under the effect floor a direction's heatmaps carry no percentage and no colour (its logit changes on
    hover), its screen has no table; the chapter's view of its directions together comes before the heatmaps."""
    from pytest_gotchas.results.schema import Components, EffectFloor, Screened

    grid = Components(layers=[1, 2, 3], heads=2, attn=[[2.0, 2.0, -2.0]] * 3, mlp=[[2.0, 0.0, 2.0]] * 3,
                      head=[[[2.0, 2.0, -2.0], [2.0, 2.0, 2.0]]] * 3, post_norms=False, batched=True,
                      screened=[Screened(kind="attn", layer=3, head=0, position=2, estimate=-3.0, exact=-2.0)])
    under = direction(components=grid, metric_dtype="bfloat16", step=0.125,
                      floor=EffectFloor(steps=3, logits=0.3, magnitude=20.0, under="floor"))
    map_ = heatmap("tiny", under)
    assert {c.text for m in (map_, *map_.components) for r in m.rows for c in r.cells} == {""}
    assert {c.style for m in (map_, *map_.components) for r in m.rows for c in r.cells} == {"background:#f0f0f0"}
    assert map_.rows[0].cells[0].title == ("layer 1 at 'list': no difference to localize, under the effect floor; "
                                           "logit difference -1")
    assert map_.screen is None and "under the effect floor: no colour" in map_.caption
    assert "in bfloat16" in map_.caption
    report = report_of(TINY_MODEL)
    a, b = report.results
    back = direction(source="a", target="b", components=grid)
    page = html.render(dataclasses.replace(report, results=[dataclasses.replace(a, patching=[under]),
                                                          dataclasses.replace(b, patching=[back])]))
    assert page.index("Patched directions together") < page.index("patched: pair ab (")
    assert "2 patched directions (logits in bfloat16); 1 under the effect floor (1 below the floor" in page
