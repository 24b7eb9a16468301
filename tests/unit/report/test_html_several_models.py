"""The HTML page of several models: a block per model in the header, the chapters x models matrix of pairs passed,
the per-chapter comparisons, each case once with one bar per model, pairs with a state per model, and escaping.

The report is two tiny models' results of tests/helpers/reportdata.py's chapters (reportdata.score_models); a page of one
model is the case N = 1 of the same layout (tests/test_html.py checks it in full).
"""

from __future__ import annotations

import copy
import dataclasses
import html as htmllib
import re
from pathlib import Path

import markupsafe
import pytest
from helpers.browser import CHROMIUM, screenshot
from helpers.results import make_case, make_run
from helpers.reportdata import MODELS, RUN, Scored, score_models

from pytest_gotchas.report import html
from pytest_gotchas.report.page_chapters import KEYS
from pytest_gotchas.report.page_runs import pct
from pytest_gotchas.report.wording import chapter_line, comparison_line, comparison_outcome
from pytest_gotchas.results.baselines import BaselineOutcome
from pytest_gotchas.results.report import Report
from pytest_gotchas.results.schema import ChapterInfo, Invocation


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Scored:
    return score_models(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="module")
def report(scored: Scored) -> Report:
    return scored.report()


@pytest.fixture(scope="module")
def page(report: Report) -> str:
    return html.render(report)


def text_of(fragment: str) -> str:
    """As a reader sees it: tags dropped, entities decoded, white space folded."""
    return re.sub(r"\s+", " ", htmllib.unescape(re.sub(r"<[^>]+>", " ", fragment))).strip()


def between(page: str, start: str, end: str) -> str:
    assert page.count(start) == 1, start
    at = page.index(start)
    return page[at:page.index(end, at)]


def article(page: str, chapter: str, case_id: str) -> str:
    anchor = f'id="case-{chapter}-{case_id}"'
    assert page.count(anchor) == 1, anchor
    at = page.rindex("<article", 0, page.index(anchor))
    return page[at:page.index("</article>", at)]


def cells(article: str) -> list[str]:
    """The per-model cells of a case, in the models' order."""
    return re.split(r'<div class="mcell[^"]*">', article)[1:]


def row(table: str, head: str) -> str:
    """The text of the table row whose header cell links or reads `head`."""
    for found in re.findall(r"<tr>.*?</tr>", table, flags=re.S):
        if f">{head}<" in found:
            return text_of(found)
    raise AssertionError(f"no row {head!r}")


def chips(cases: list) -> str:
    """The verdict counts of `cases` as a matrix cell reads them: the outcomes found, in the summary's order."""
    found = [c.outcome for c in cases]
    return "".join(f" {key} {found.count(key)}" for key in KEYS if key in found)


def test_the_header_describes_every_model(report: Report, page: str) -> None:
    header = between(page, '<header class="top">', "</header>")
    assert "<h1>2 models: tiny-a, tiny-b</h1>" in header
    assert "<title>gotchas: tiny-a, tiny-b, 2026-11-30</title>" in page
    assert len(report.model_infos) == 2
    for model in report.model_infos:
        block = text_of(between(header, f'id="model-{model.id}"', "</dl>"))
        for label, key in (("weights sha256", "weights_sha256"), ("dtype", "dtype"), ("device", "device"),
                           ("hardware", "hardware"), ("bos", "bos"), ("torch", "torch_version")):
            assert f"{label} {getattr(model, key)}" in block, (model.id, label)
        assert model.name in block
    shown = text_of(header)
    assert "softmax dtype bfloat16" in shown and f"Python {RUN['python']}" in shown
    assert RUN["command"] in shown


def test_the_matrix_of_pairs_passed_per_chapter_and_model(report: Report, page: str) -> None:
    matrix = between(page, '<table class="chapters matrix">', "</table>")
    assert text_of(between(matrix, "<thead>", "</thead>")) == "chapter cases tiny-a tiny-b"
    for name in ("demo", "primed"):
        rollups = [c for c in report.chapters if c.info.name == name]
        assert [c.model for c in rollups] == list(MODELS)
        label = rollups[0].info.label
        cells = " ".join(f"{c.passed}/{c.counted} pairs" + (" twins agree 0/1" if c.twins else "") + chips(c.cases)
                         for c in rollups)
        assert row(matrix, label) == f"{label} {len(rollups[0].cases)} {cells}"
    assert row(matrix, "demo: every kind of cut") == "demo: every kind of cut 5 1/2 pairs twins agree 0/1 " \
                                                     "ok 2 MISS 2 unscored 1 0/2 pairs twins agree 0/1 " \
                                                     "ok 1 MISS 3 unscored 1"


def test_the_comparisons_per_chapter(report: Report, page: str) -> None:
    table = between(page, '<table class="chapters comparisons">', "</table>")
    rows = [text_of(r) for r in re.findall(r"<tr class=.*?</tr>", table, flags=re.S)]
    labels = {c.info.name: c.info.label for c in report.chapters}
    assert rows == [f"{labels[c.chapter]} {c.a} vs {c.b} {c.unit} {c.a_only} {c.b_only} {c.both} {c.neither} "
                    f"{c.p_value:.3g} {c.p_adjusted:.3g} no difference shown" for c in report.comparisons]
    assert len(rows) == 4 and "demo: every kind of cut tiny-a vs tiny-b cases 2 1 0 1 1 1 no difference shown" in rows


def test_a_difference_the_test_shows_names_the_model_ahead() -> None:
    """Six cases one model gets right and the other does not: p = 2/64, the only test of the report (so Holm leaves
    it as it is), so a difference is shown."""
    info = ChapterInfo("many", "ch.9 many", "many", "many.yaml", False, [f"c{n}" for n in range(6)], {}, {})
    results = [make_case(f"c{n}", "many", [make_run(*p)], model=model)
               for model, p in (("strong", (0.7, 0.2)), ("weak", (0.2, 0.7))) for n in range(6)]
    report = Report(results, [info])
    [comparison] = report.comparisons
    assert comparison.shown and comparison_outcome(comparison) == "strong ahead"
    assert comparison_line(comparison).endswith(": strong ahead")  # the terminal's words
    page = html.render(report)
    table = between(page, '<table class="chapters comparisons">', "</table>")
    assert text_of(between(table, '<tr class="shown">', "</tr>")) == \
        "ch.9 many strong vs weak cases 6 0 0 0 0.0312 0.0312 strong ahead"


def test_each_case_once_with_a_bar_per_model(report: Report, page: str) -> None:
    by_model = {m: {r.key: r for r in report.results if r.model == m} for m in MODELS}
    keys = list(dict.fromkeys(r.key for r in report.cases))
    assert len(keys) == len(report.cases) // 2
    for key in keys:
        chapter, case_id = key.split("/")
        shown = article(page, chapter, case_id)
        cases = [by_model[m][key] for m in MODELS]
        assert text_of(shown.split("</header>")[0]).startswith(
            f"{case_id} " + " ".join(f"{m} {c.outcome}" for m, c in zip(MODELS, cases)))
        if not cases[0].scored:
            assert 'class="mgrid"' not in shown and shown.count(case_id) >= 1
            continue
        per_model = cells(shown)
        assert len(per_model) == len(MODELS)
        for model, case, cell in zip(MODELS, cases, per_model):
            assert text_of(cell).startswith(f"{model} {case.outcome}")
            bars = re.findall(r'aria-label="([^"]*)"', cell)
            assert bars == [f"P(correct) {pct(r.p_correct)}, P(wrong) {pct(r.p_wrong)}, "
                            f"rest {pct(max(0.0, 1.0 - r.coverage))}" for r in case.runs]
        # each prompt once (one per primer order), above the models' answers
        assert shown.count('<span class="cursor"') == len(cases[0].runs)
        for run in cases[0].runs:
            assert str(markupsafe.escape(run.prompt.split("\n")[-1])) + '<span class="cursor"' in shown


def test_the_models_disagree_side_by_side(page: str) -> None:
    shown = article(page, "demo", "right")
    a, b = [text_of(c) for c in cells(shown)]
    assert a.startswith("tiny-a ok") and "correct '7' 73.05%" in a
    assert b.startswith("tiny-b MISS") and "correct '7' 26.95%" in b
    assert 'class="case k-mixed"' in shown
    primed = article(page, "primed", "swayed")
    assert text_of(primed).count("The 2 primer orders differ: case verdict prime-dep") == 2


def test_pairs_and_twins_have_a_state_per_model(report: Report, page: str) -> None:
    section = between(page, 'id="ch-demo"', "</section>")
    pairs = between(section, "<h3>Pairs</h3>", "</table>")
    assert text_of(between(pairs, "<thead>", "</thead>")) == "pair members tiny-a tiny-b"
    assert row(pairs, "pair good-pair") == "pair good-pair right + healed pass ok + ok FAIL MISS + MISS"
    assert row(pairs, "pair bad-pair") == "pair bad-pair right + wrong FAIL ok + MISS FAIL MISS + ok"
    twins = between(section, '<div class="pairs twins">', "</table>")
    assert row(twins, "spelled-twice") == "spelled-twice right / wrong disagree ok / MISS disagree MISS / ok"
    for model in MODELS:
        rollup = next(c for c in report.chapters if c.info.name == "demo" and c.model == model)
        assert f"[{model}] {chapter_line(rollup)}" in text_of(section)


def test_a_model_that_did_not_run_a_chapter(scored: Scored) -> None:
    """Merged shards: tiny-b ran only the demo chapter."""
    results = scored.results["tiny-a"] + [r for r in scored.results["tiny-b"] if r.chapter == "demo"]
    report = Report(results, scored.chapters, list(scored.models.values()))
    page = html.render(report)
    matrix = between(page, '<table class="chapters matrix">', "</table>")
    assert row(matrix, "ch.1 primers decide") == "ch.1 primers decide 2 0/1 pairs ok 1 prime-dep 1 not run"
    assert {c.chapter for c in report.comparisons} == {"demo"}
    assert text_of(cells(article(page, "primed", "steady"))[1]) == "tiny-b not run not run for this model"
    assert text_of(between(page, 'id="ch-primed"', "</section>")).count("pair mixed right") == 0


def test_the_sources_of_a_merged_report_are_listed(report: Report) -> None:
    run = Invocation(command="gotchas merge a.json b.json", date="2026-12-01T08:00:00+00:00",
                  merged_from=[Invocation(file="a.json", command="pytest --gotchas a", date="2026-11-30T10:00:00+00:00"),
                               Invocation(file="b.json", command="pytest --gotchas b")])
    merged = Report(report.results, report.chapter_infos, report.model_infos, run)
    shown = text_of(between(html.render(merged), '<div class="merged">', "</div>"))
    assert shown == ("Merged from 2 reports a.json 2026-11-30 10:00:00+00:00 $ pytest --gotchas a "
                     "b.json $ pytest --gotchas b")


def test_a_one_model_page_is_the_same_layout_with_one_column(scored: Scored) -> None:
    """One model is the case N = 1: one column in the matrix and the pair tables, one cell per case, the prompt
    beside the answer; no comparison of models, as there is nothing to compare."""
    page = html.render(scored.report(["tiny-a"]))
    matrix = between(page, '<table class="chapters matrix">', "</table>")
    assert text_of(between(matrix, "<thead>", "</thead>")) == "chapter cases tiny-a"
    section = between(page, 'id="ch-demo"', "</section>")
    assert text_of(between(section, "<h3>Pairs</h3>", "</thead>")) == "Pairs pair members tiny-a"
    shown = article(page, "demo", "right")
    assert len(cells(shown)) == 1 and 'class="cbody solo"' in shown
    assert text_of(shown.split("</header>")[0]) == "right tiny-a ok python 3.11.7"
    assert 'class="cbody solo primed"' in article(page, "primed", "swayed")
    for several in ("Models compared", "one answer per model side by side"):
        assert several not in page
    assert "<h1>1 model: tiny-a</h1>" in page


def test_page_is_self_contained(page: str) -> None:
    lowered = page.lower()
    for forbidden in ("<script", "<link", "<img", "<iframe", "@import", "url(", "src=", "http://", "https://"):
        assert forbidden not in lowered, forbidden


def test_hostile_text_is_escaped_everywhere(scored: Scored) -> None:
    """Model ids, chapter labels, prompts, notes, messages, baselines and the merged sources' commands are text."""
    evil = "<i>x</i> & \"q\" </pre><script>alert(1)</script>"
    hostile = copy.deepcopy([r for m in MODELS for r in scored.results[m]])
    for result in hostile:
        result.model = f"{result.model}{evil}"
        result.note = evil
        if result.runs:
            result.runs[0].prompt = evil + "\n"
        if result.message:
            result.message = evil
    models = [dataclasses.replace(m, id=m.id + evil, bos=evil) for m in scored.models.values()]
    chapters = [dataclasses.replace(c, label=evil) for c in scored.chapters]
    run = Invocation(command=evil, merged_from=[Invocation(file=evil, command=evil, date=evil)])
    baselines = [BaselineOutcome(model=models[0].id, path=evil, report=evil)]
    page = html.render(Report(hostile, chapters, models, run, baselines))
    assert "<script" not in page and "<i>x</i>" not in page
    escaped = "&lt;i&gt;x&lt;/i&gt; &amp; &#34;q&#34; &lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;"
    assert page.count(escaped) >= 20
    assert f'id="model-tiny-a{escaped}"' in page


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install chromium; "
                                             ".ci/run installs it): cannot take the page's screenshot")
def test_chromium_renders_the_page_of_two_models(tmp_path: Path, report: Report) -> None:
    target = tmp_path / "models.html"
    html.write(target, report)
    shot = tmp_path / "shot.png"
    proc = screenshot(target, shot, tmp_path / "profile")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 50_000
