"""The HTML page: rendered from a report made in the session on a tiny model (tests/helpers/reportdata.py), opened in
headless Chromium; and its view model (report/page*.py),
built without rendering from results made by hand.
"""

from __future__ import annotations

import copy
import dataclasses
import html as htmllib
import json
import re
from pathlib import Path

import markupsafe
import pytest
from helpers.browser import CHROMIUM, article, between, row, screenshot, text_of, words_of
from helpers.hostile import ESCAPED, UNSAFE, hostile_report
from helpers.results import make_case, make_run

from helpers.reportdata import build_report

from pytest_gotchas.report import html
from pytest_gotchas.report.page import build_page
from pytest_gotchas.report.page_chapters import KEYS, Chip, PairsCount, chips, model_rollup
from pytest_gotchas.report.page_runs import CURSOR, answer, layer_chart, pct, prompts, variants
from pytest_gotchas.report.terminal import layer_note
from pytest_gotchas.report.wording import chapter_line
from pytest_gotchas.results.baselines import BaselineOutcome, Comparison, PairChange
from pytest_gotchas.results.report import Report, from_data, to_data
from pytest_gotchas.results.rollup import rollup
from pytest_gotchas.results.schema import ChapterInfo, LayerReading, Reading, SeedOutput, TopToken
from pytest_gotchas.results.vocabulary import ReadingName


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    return build_report(tmp_path_factory.mktemp("report"))


@pytest.fixture(scope="module")
def page(report: Report) -> str:
    return html.render(report)


# -- content --------------------------------------------------------------------------------------------------


def test_the_report_covers_what_the_page_must_show(report: Report) -> None:
    """Every kind of case the page draws differently is in the report it is tested on."""
    assert {c.outcome for c in report.cases} >= {"ok", "MISS", "prime-dep", "unscored"}
    assert any(len(c.runs) == 2 for c in report.cases)
    assert {r.readings["token"].kind for c in report.cases for r in c.runs} >= {"plain", "healed", "chain"}
    assert {r.main for c in report.cases for r in c.runs} == {"text"}
    assert report.model_ids == ["model"]


def test_the_report_reads_back_from_its_json(report: Report) -> None:
    data = json.loads(json.dumps(to_data(report)))
    again = from_data(data)
    assert to_data(again) == data
    assert html.render(again) == html.render(report)


def test_page_is_self_contained(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>")
    assert page.rstrip().endswith("</html>")
    lowered = page.lower()
    for forbidden in ("<script", "<link", "<img", "<iframe", "@import", "url(", "src=", "http://", "https://"):
        assert forbidden not in lowered, forbidden


def test_header_carries_the_model_and_the_run(report: Report, page: str) -> None:
    [model] = report.model_infos
    run = report.run
    shown = text_of(page)
    for value in (model.name, model.weights_sha256, model.dtype, model.device, model.hardware, model.torch_version,
                  model.transformers_version, run.python, run.pytest, run.command, run.date.replace("T", " ")):
        assert value and value in shown, value
    assert "softmax dtypebfloat16" in shown
    assert f"<h1>1 model: {model.id}</h1>" in page
    assert f"<title>gotchas: {model.id}, 2026-11-30</title>" in page


def test_every_case_appears_with_its_verdict_badge(report: Report, page: str) -> None:
    for case in report.cases:
        key = case.outcome
        assert (f'>{case.id}</a></h3><span class="mverdict"><span class="mname">{case.model}</span>'
                f'<span class="badge b-{key.lower()}">{key}</span></span>' in article(page, case.chapter, case.id))
        assert f'<article class="case k-{key.lower()}" id="case-{case.chapter}-{case.id}">' in page


def test_primed_cases_show_every_primer_run(report: Report, page: str) -> None:
    primed = [c for c in report.cases if len(c.runs) > 1]
    assert primed
    for case in primed:
        shown = article(page, case.chapter, case.id)
        assert 'class="runs many prompts"' in shown and 'class="mruns many"' in shown
        for run in case.runs:
            assert shown.count(f"primer <b>{run.primer}</b>") == 2  # over its prompt and over its answer
            assert f"<b>{pct(run.p_correct)}</b>" in shown


def test_prompts_are_escaped_and_end_in_a_cursor(report: Report, page: str) -> None:
    shown = htmllib.unescape(re.sub(r"<[^>]+>", "", page))
    for case in report.cases:
        for run in case.runs:
            assert run.prompt + CURSOR in shown
            assert str(markupsafe.escape(run.prompt.split("\n")[-1])) + '<span class="cursor"' in page


def test_hostile_text_is_escaped_everywhere(report: Report) -> None:
    """Prompts hold Python reprs such as <tuple_iterator object at 0x7f...>: text, never markup."""
    evil = "<tuple_iterator object at 0x7f3a> & \"q\" 'x' </pre><script>alert(1)</script>"
    results = copy.deepcopy(report.results)
    first = next(c for c in results if c.runs)
    first.runs[0].prompt = ">>> iter(())\n" + evil + "\n"
    first.runs[0].top[0] = TopToken(evil, first.runs[0].top[0].p)
    first.note = evil
    first.id = "id<&>"
    unscored = next(c for c in results if c.status == "unscored")
    unscored.message = evil
    unscored.outputs[0] = SeedOutput(unscored.outputs[0].seed, evil)
    models = [dataclasses.replace(m, name=evil) for m in report.model_infos]
    chapters = [dataclasses.replace(c, label=evil) if c.name == first.chapter else c for c in report.chapter_infos]
    run = dataclasses.replace(report.run, command="pytest -k '" + evil + "'")
    page = html.render(Report(results, chapters, models, run, report.baselines))
    assert "<script" not in page
    assert "<tuple_iterator" not in page
    assert "&lt;tuple_iterator object at 0x7f3a&gt; &amp; &#34;q&#34; &#39;x&#39; &lt;/pre&gt;" in page
    assert htmllib.unescape(re.sub(r"<[^>]+>", "", page)).count("<tuple_iterator object at 0x7f3a>") >= 7
    assert 'id="case-demo-id&lt;&amp;&gt;"' in page


def test_pair_lines(report: Report, page: str) -> None:
    marks = {"demo/bad-pair": " regressed", "demo/good-pair": " improved"}
    shown = text_of(page)
    for chapter in report.chapters:
        table = between(between(page, f'id="ch-{chapter.info.name}"', "</section>"), "<h3>Pairs</h3>", "</table>")
        for pair in chapter.pairs:
            state = "pass" if pair.passed else "not scored" if pair.passed is None else "FAIL"
            members, verdicts = " + ".join(pair.members), " + ".join(v or "not run" for v in pair.verdicts)
            assert row(table, f"pair {pair.id}") == f"pair {pair.id} {members} {state} {verdicts}" + \
                marks.get(pair.key, ""), pair.key
        assert f"[{chapter.model}] {chapter_line(chapter)}" in shown
        if chapter.pairs:
            assert f"{chapter.passed}/{chapter.counted} pairs" in shown


def test_twins_agree_or_disagree(report: Report, page: str) -> None:
    twins = [t for c in report.chapters for t in c.twins]
    assert twins
    table = between(page, '<div class="pairs twins">', "</table>")
    for twin in twins:
        state = "agree" if twin.agree else "disagree"
        assert row(table, twin.id) == (f"{twin.id} {twin.members[0]} / {twin.members[1]} {state} "
                                       f"{twin.verdicts[0]} / {twin.verdicts[1]}")


def test_verdict_counts_in_the_summary(report: Report, page: str) -> None:
    """Every outcome's count, zeros included, per model."""
    summary = between(page, '<section class="summary">', "</section>")
    table = between(summary, '<table class="chapters permodel">', "</table>")
    assert words_of(between(table, "<thead>", "</thead>")) == "model cases " + " ".join(KEYS)
    for key in KEYS:
        assert f'<th class="num"><span class="badge b-{key.lower()}">{key}</span></th>' in table
    counts = report.counts()
    numbers = " ".join(str(counts.get(key, 0)) for key in KEYS)
    assert row(between(table, "<tbody>", "</tbody>"), "model") == f"model {len(report.cases)} {numbers}"


def test_healed_and_multi_token_cuts_show_their_tokens_and_the_plain_reading(report: Report, page: str) -> None:
    shown = text_of(page)
    checked = 0
    for case in report.cases:
        for run in case.runs:
            token = run.readings["token"]
            if token.kind == "plain":
                continue
            label = "healed cut" if token.kind == "healed" else "multi-token cut"
            tokens = " + ".join(repr(t) for t in token.correct_tokens)
            assert f"{label} {tokens} vs" in shown
            plain = run.readings["plain"]
            assert (f"plain reading at the full prompt: correct {pct(plain.p_correct)}, "
                    f"wrong {pct(plain.p_wrong)} {plain.verdict}") in shown
            checked += 1
    assert checked == 2


def test_unscored_cases_show_their_outputs_per_seed(report: Report, page: str) -> None:
    shown = text_of(page)
    case = next(c for c in report.cases if c.status == "unscored")
    assert case.message in shown
    assert len(case.outputs) == 3
    for output in case.outputs:
        assert re.sub(r"\s+", " ", f"PYTHONHASHSEED={output.seed} {output.text}") in shown


def test_the_baseline_comparison_is_shown_and_marks_its_pairs(report: Report, page: str) -> None:
    shown = text_of(page)
    assert "Compared with the baseline baselines/tiny.yaml" in shown
    assert "regressions 1 demo/bad-pair pass → fail" in shown
    assert "improvements 1 demo/good-pair fail → pass" in shown
    table = between(between(page, 'id="ch-demo"', "</section>"), "<h3>Pairs</h3>", "</table>")
    assert row(table, "pair bad-pair") == "pair bad-pair right + wrong FAIL ok + MISS regressed"
    assert row(table, "pair good-pair") == "pair good-pair right + healed pass ok + ok improved"
    assert "REGRESSION demo/bad-pair: pass -&gt; FAIL (right ok, wrong MISS)" in page  # wording's line
    without = html.render(Report(report.results, report.chapter_infos, report.model_infos, report.run))
    assert "Compared with the baseline" not in without
    assert 'class="tag regressed"' not in without and 'class="tag improved"' not in without


def test_render_tolerates_a_run_without_a_model() -> None:
    page = html.render(Report([], []))
    assert "no model was loaded" in page


def test_write_is_atomic_and_readable(tmp_path: Path, report: Report) -> None:
    target = tmp_path / "out" / "report.html"
    html.write(target, report)
    assert target.read_text(encoding="utf-8") == html.render(report)
    assert target.stat().st_mode & 0o444 == 0o444
    assert [p.name for p in target.parent.iterdir()] == ["report.html"]




# -- in a browser -------------------------------------------------------------------------------------------


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install chromium; "
                                             ".ci/run installs it): cannot take the page's screenshot")
def test_chromium_renders_a_screenshot(tmp_path: Path, report: Report) -> None:
    page = tmp_path / "report.html"
    html.write(page, report)
    shot = tmp_path / "shot.png"
    proc = screenshot(page, shot, tmp_path / "profile")
    assert proc.returncode == 0, proc.stderr[-3000:]
    head = shot.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    assert (width, height) == (1280, 2000)
    assert shot.stat().st_size > 50_000  # a blank 1280x2000 PNG is a few kB; this page is not blank


# -- the view model, without rendering ----------------------------------------------------------------------

INFO = ChapterInfo("demo", "ch.0 demo", "demo", "demo.yaml", False, ["a", "b", "c"], {"p": ["a", "b"]},
                   {"t": ["a", "c"]})


def test_the_layer_chart_is_drawn_in_python() -> None:
    """x runs over the frame's width by layer; y is 1 at the frame's top (4) and 0 at its bottom (4 + 96 - 22)."""
    run = make_run(0.9, 0.1)
    run.layers = [LayerReading(1, 0.0, 1.0), LayerReading(2, 0.5, 0.5), LayerReading(3, 1.0, 0.0)]
    chart = layer_chart(run)
    assert chart is not None
    assert (chart.width, chart.height, chart.frame) == (260, 96, (14, 4, 232, 74))
    assert [(line.cls, line.points) for line in chart.lines] == [("pc", "14.0,78.0 130.0,41.0 246.0,4.0"),
                                                                 ("pw", "14.0,4.0 130.0,41.0 246.0,78.0")]
    assert (chart.first.x, chart.first.anchor, chart.first.text) == (14, "start", "layer 1")
    assert (chart.last.x, chart.last.anchor, chart.last.text) == (246, "end", "3")
    assert chart.legend == (130, 91) and chart.first.y == chart.last.y == 91
    assert chart.note == layer_note(run) and chart.note
    run.layers = [LayerReading(5, 0.25, 0.75)]  # one layer: at the frame's left edge, not divided by zero
    one = layer_chart(run)
    assert one is not None and one.lines[0].points == "14.0,59.5" and one.first.text == "layer 5"
    run.layers = []
    assert layer_chart(run) is None


def test_the_answer_of_a_run() -> None:
    run = make_run(0.5, 0.1)
    run.top = [TopToken("2", 0.2), TopToken("1", 0.5), TopToken("x", 0.1)]
    shown = answer(run, primed=False)
    assert [(s.cls, s.p, s.label, s.labelled) for s in shown.segments] == [
        ("pc", 0.5, "'1'", True), ("pw", 0.1, "'2'", False), ("rest", pytest.approx(0.4), "rest", True)]
    assert shown.aria == "P(correct) 50.00%, P(wrong) 10.00%, rest 40.00%"
    assert [a.cls for a in shown.top] == ["t-wrong", "t-correct", ""]
    assert shown.show_verdict and shown.verdict == "ok" and shown.cut is None and shown.chart is None
    assert not answer(run, primed=True).show_verdict  # a primed run's verdict is in its head
    healed = make_run(0.5, 0.1, kind="healed")
    healed.readings["plain"] = Reading(0.01, 0.0, "noise", "plain", "bfloat16")
    cut = answer(healed, primed=False).cut
    assert cut is not None and cut.label == "healed cut" and cut.correct == ["'1'"] and cut.plain is not None
    healed.readings[ReadingName.TEXT] = Reading(0.4, 0.3, "ok", "text", "bfloat16", ["'1' 40%"], [], neglected=0.01)
    healed.main = ReadingName.TEXT
    read = answer(healed, primed=False)
    assert read.text is not None
    assert (read.text.correct, read.text.wrong, read.text.neglected) == ("'1' 40%", "–", 0.01)
    assert [(o.name, o.differs) for o in read.others] == [("token", False)]


def test_primed_prompts_split_at_the_lines_every_order_shares() -> None:
    runs = [make_run(0.5, 0.1, primer="A"), make_run(0.5, 0.1, primer="B")]
    runs[0].prompt, runs[1].prompt = ">>> 1\n1\n>>> x\n", ">>> 2\n2\n>>> x\n"
    assert [(p.primer, p.own) for p in prompts(runs)] == [(">>> 1\n1\n", ">>> x\n"), (">>> 2\n2\n", ">>> x\n")]
    assert [(p.primer, p.own) for p in prompts(runs[:1])] == [("", ">>> 1\n1\n>>> x\n")]


def test_variants_list_every_run_and_say_surface_dep() -> None:
    own, varied = make_run(0.6, 0.1), make_run(0.1, 0.6)
    varied.variant = "renamed"
    case = make_case("a", "demo", [own, varied])
    shown = variants(case)
    assert shown is not None and shown.surface_dep
    assert [(r.label, r.verdict) for r in shown.rows] == [("the case", "ok"), ("renamed", "MISS")]
    assert variants(make_case("a", "demo", [own])) is None


def test_chips_in_the_summary_order() -> None:
    assert chips({"unscored": 1, "ok": 2, "zzz": 1}, False) == [Chip("ok", 2), Chip("unscored", 1), Chip("zzz", 1)]
    assert [c.key for c in chips({}, True)] == list(KEYS)


def two_models() -> list:
    """Model a passes pair p, model b fails it; c is unscored under both."""
    results = []
    for model, p in (("a", (0.7, 0.2)), ("b", (0.2, 0.7))):
        results += [make_case("a", "demo", [make_run(0.7, 0.2)], model=model),
                    make_case("b", "demo", [make_run(*p)], model=model),
                    make_case("c", "demo", [], status="unscored", model=model)]
    return results


def test_the_matrix_cells_count_pairs_per_chapter_and_model() -> None:
    other = ChapterInfo("other", "ch.1 other", "other", "other.yaml", False, ["x"], {}, {})
    results = [*two_models(), make_case("x", "other", [make_run(0.7, 0.2)], model="a")]
    page = build_page(Report(results, [INFO, other]))
    demo, only_a = page.summary.matrix
    assert (demo.label, demo.anchor, demo.cases) == ("ch.0 demo", "ch-demo", 3)
    assert [c.model for c in demo.cells] == ["a", "b"]
    assert [c.pairs for c in demo.cells] == [PairsCount(1, 1, 1.0, 0), PairsCount(0, 1, 0.0, 0)]
    assert [(c.twins.agree, c.twins.counted) for c in demo.cells if c.twins] == [(0, 0), (0, 0)]
    assert demo.cells[1].chips == [Chip("ok", 1), Chip("MISS", 1), Chip("unscored", 1)]
    assert [(c.ran, c.pairs) for c in only_a.cells] == [(True, None), (False, None)]  # no pairs; not run by b
    assert [r.counts[:2] for r in page.summary.rows] == [[Chip("ok", 3), Chip("MISS", 0)],
                                                         [Chip("ok", 1), Chip("MISS", 1)]]


def test_a_pair_not_counted_is_said_so() -> None:
    [only] = rollup([make_case("a", "demo", [make_run(0.7, 0.2)], model="a")], {"demo": INFO})
    assert model_rollup("a", only).pairs == PairsCount(0, 0, 0.0, 1)


def test_regressed_and_improved_pairs_are_marked_for_their_model_only() -> None:
    change = PairChange("demo/p", "pass", "fail", [])
    baselines = [BaselineOutcome(model="b", path="b.yaml", comparison=Comparison(regressions=[change])),
                 BaselineOutcome(model="a", path="a.yaml", comparison=Comparison(improvements=[change]))]
    page = build_page(Report(two_models(), [INFO], baselines=baselines))
    [chapter] = page.chapters
    assert chapter.pairs is not None
    [pair] = chapter.pairs.rows
    assert [(c.word, c.verdicts, c.mark) for c in pair.cells if c] == [("pass", ["ok", "ok"], "improved"),
                                                                       ("FAIL", ["ok", "MISS"], "regressed")]
    assert [m.id for m in pair.members] == ["a", "b"] and pair.members[1].anchor == "case-demo-b"
    assert [b.title for b in page.baselines] == ["Compared with the baseline"] * 2
    assert [[(x.title, len(x.items)) for x in b.lists][:2] for b in page.baselines] == [
        [("regressions", 1), ("improvements", 0)], [("regressions", 0), ("improvements", 1)]]
    assert chapter.twins is not None and [c.word for c in chapter.twins.rows[0].cells if c] == ["not scored"] * 2


def test_one_model_is_the_case_n_1_of_the_same_layout() -> None:
    results = two_models()
    one = build_page(Report([r for r in results if r.model == "a"], [INFO]))
    two = build_page(Report(results, [INFO]))
    for page, n in ((one, 1), (two, 2)):
        [chapter] = page.chapters
        case = chapter.cases[0]
        assert len(case.cells) == len(case.verdicts) == len(chapter.models) == n
        assert case.solo is (n == 1)
        assert [p.prompt.own for p in case.prompts] == [">>> x\n"]  # shared: shown once, above the cells
        assert all(r.prompt is None for c in case.cells for r in c.runs)
        assert (case.kind, [v.outcome for v in case.verdicts]) == ("ok", ["ok"] * n)
        assert chapter.cases[1].kind == ("ok" if n == 1 else "mixed")
        unscored = chapter.cases[2]  # not scored by any model, for the same reason: shown once
        assert unscored.cells == [] and unscored.unscored is not None
        assert len(page.header.models) == len(page.summary.rows) == n
        assert ("each case once, with one answer per model side by side" in chapter.notes) is (n == 2)
    assert one.summary.comparisons is None  # nothing to compare
    assert two.summary.comparisons is not None and len(two.summary.comparisons) == 2
    assert (one.header.title, two.header.title) == ("1 model: a", "2 models: a, b")


def test_a_model_that_did_not_run_a_case_gets_an_empty_cell() -> None:
    results = [r for r in two_models() if not (r.model == "b" and r.id == "c")]
    [chapter] = build_page(Report(results, [INFO])).chapters
    unscored = chapter.cases[2]
    assert [(c.ran, c.unscored is not None) for c in unscored.cells] == [(True, True), (False, False)]
    assert [v.outcome for v in unscored.verdicts] == ["unscored", None]


# -- text from other people's files, escaped (hostile input round two) -----------------------------------------------


@pytest.mark.parametrize("seen", ["title", "note", "reason", "output"])
def test_the_page_shows_them_escaped_too(seen: str) -> None:
    """Autoescaping makes them safe as HTML, not as text: the page escapes the control characters as well."""
    page = html.render(hostile_report())
    assert not any(char in page for char in UNSAFE)
    expected = {"title": f"ch.1 {ESCAPED}", "note": f"note {ESCAPED}", "reason": f"why {ESCAPED}",
                "output": f"{{&#39;b&#39;, &#39;a&#39;}} {ESCAPED}"}[seen]
    assert expected in page
