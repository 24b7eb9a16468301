"""The HTML page of one model, rendered from a report made in the session on a tiny model (helpers/reportdata.py):
every kind of case, pairs, twins and the baseline comparison shown, text escaped, the page self-contained and
written atomically, and opened in headless Chromium. tests/plugin/test_html.py has the plugin write it."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import markupsafe
import pytest
from helpers.browser import CHROMIUM, screenshot, text_of
from helpers.reportdata import build_report

from pytest_gotchas.report import html
from pytest_gotchas.results.report import Report


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    return build_report(tmp_path_factory.mktemp("report"))


@pytest.fixture(scope="module")
def page(report: Report) -> str:
    return html.render(report)


def article(page: str, chapter: str, case_id: str) -> str:
    anchor = f'id="case-{chapter}-{case_id}"'
    assert page.count(anchor) == 1, anchor
    return page[page.index(anchor):page.index("</article>", page.index(anchor))]


# -- content --------------------------------------------------------------------------------------------------


def test_the_report_covers_what_the_page_must_show(report: Report) -> None:
    """Every kind of case the page draws differently is in the report it is tested on."""
    assert {c.outcome for c in report.cases} >= {"ok", "MISS", "prime-dep", "unscored"}
    assert any(len(c.runs) == 2 for c in report.cases)
    assert {r.readings["token"].kind for c in report.cases for r in c.runs} >= {"plain", "healed", "chain"}
    assert {r.main for c in report.cases for r in c.runs} == {"text"}


def test_the_report_reads_back_from_its_json(report: Report) -> None:
    data = json.loads(json.dumps(report.to_dict()))
    again = Report.from_dict(data)
    assert again.to_dict() == data
    assert html.render(again) == html.render(report)


def test_page_is_self_contained(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>")
    assert page.rstrip().endswith("</html>")
    lowered = page.lower()
    for forbidden in ("<script", "<link", "<img", "<iframe", "@import", "url(", "src=", "http://", "https://"):
        assert forbidden not in lowered, forbidden


def test_header_carries_the_model_and_the_run(report: Report, page: str) -> None:
    model, run = report.model, report.run
    assert model is not None
    shown = text_of(page)
    for value in (model["name"], model["weights_sha256"], model["dtype"], model["device"], model["hardware"],
                  model["torch_version"], model["transformers_version"], run["python"], run["pytest"],
                  run["command"], run["date"].replace("T", " ")):
        assert value in shown, value
    assert "softmax dtypebfloat16" in shown


def test_every_case_appears_with_its_verdict_badge(report: Report, page: str) -> None:
    for case in report.cases:
        key = case.outcome
        assert (f'>{case.id}</a></h3><span class="badge b-{key.lower()}">{key}</span>'
                in article(page, case.chapter.name, case.id))


def test_primed_cases_show_every_primer_run(report: Report, page: str) -> None:
    primed = [c for c in report.cases if len(c.runs) > 1]
    assert primed
    for case in primed:
        shown = article(page, case.chapter.name, case.id)
        assert 'class="runs many"' in shown
        for run in case.runs:
            assert f"primer <b>{run.primer}</b>" in shown
            assert f"<b>{html.pct(run.p_correct)}</b>" in shown


def test_prompts_are_escaped_and_end_in_a_cursor(report: Report, page: str) -> None:
    shown = text_of(page)
    for case in report.cases:
        for run in case.runs:
            assert run.prompt + html.CURSOR in shown
            assert str(markupsafe.escape(run.prompt.split("\n")[-1])) + '<span class="cursor"' in page


def test_hostile_text_is_escaped_everywhere(report: Report) -> None:
    """Prompts hold Python reprs such as <tuple_iterator object at 0x7f...>: text, never markup."""
    evil = "<tuple_iterator object at 0x7f3a> & \"q\" 'x' </pre><script>alert(1)</script>"
    hostile = copy.deepcopy(report)
    first = next(c for c in hostile.results if c.runs)
    first.runs[0].prompt = ">>> iter(())\n" + evil + "\n"
    first.runs[0].top[0][0] = evil
    first.note = evil
    first.id = "id<&>"
    unscored = next(c for c in hostile.results if c.status == "unscored")
    unscored.message = evil
    unscored.outputs[0][1] = evil
    assert first.model is not None
    first.model["name"] = evil
    hostile.run["command"] = "pytest -k '" + evil + "'"
    first.chapter.label = evil
    page = html.render(hostile)
    assert "<script" not in page
    assert "<tuple_iterator" not in page
    assert "&lt;tuple_iterator object at 0x7f3a&gt; &amp; &#34;q&#34; &#39;x&#39; &lt;/pre&gt;" in page
    assert text_of(page).count("<tuple_iterator object at 0x7f3a>") >= 7
    assert 'id="case-demo-id&lt;&amp;&gt;"' in page


def test_pair_lines(report: Report, page: str) -> None:
    shown = re.sub(r"\s+", " ", text_of(page))
    for chapter in report.chapters:
        for pair in chapter.pairs:
            state = "pass" if pair.passed else "not scored" if pair.passed is None else "FAIL"
            members = " + ".join(f"{m} {v}" for m, v in zip(pair.members, pair.verdicts))
            assert f"{state} pair {pair.id} {members}" in shown, pair.key
        assert chapter.line() in shown
        if chapter.pairs:
            assert f"{chapter.passed}/{chapter.counted} pairs" in shown


def test_twins_agree_or_disagree(report: Report, page: str) -> None:
    twins = [t for c in report.chapters for t in c.twins]
    assert twins
    shown = re.sub(r"\s+", " ", text_of(page))
    for twin in twins:
        state = "agree" if twin.agree else "disagree"
        assert f"{state} {twin.id} {twin.members[0]} {twin.verdicts[0]} / {twin.members[1]}" in shown


def test_verdict_counts_in_the_summary(report: Report, page: str) -> None:
    summary = page[page.index('<section class="summary">'):page.index("</section>")]
    counts = report.counts()
    for key in html.KEYS:
        assert f'<span class="badge b-{key.lower()}">{key}</span><b>{counts.get(key, 0)}</b>' in summary


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
            assert (f"plain reading at the full prompt: correct {html.pct(plain.p_correct)}, "
                    f"wrong {html.pct(plain.p_wrong)} {plain.verdict}") in shown
            checked += 1
    assert checked == 2


def test_unscored_cases_show_their_outputs_per_seed(report: Report, page: str) -> None:
    shown = text_of(page)
    case = next(c for c in report.cases if c.status == "unscored")
    assert case.message in shown
    assert len(case.outputs) == 3
    for seed, output in case.outputs:
        assert f"PYTHONHASHSEED={seed}{output}" in shown


def test_the_baseline_comparison_is_shown_and_marks_its_pairs(report: Report, page: str) -> None:
    shown = re.sub(r"\s+", " ", text_of(page))
    assert "Compared with the baseline baselines/tiny.yaml" in shown
    assert "regressions 1 demo/bad-pair pass → fail" in shown
    assert "improvements 1 demo/good-pair fail → pass" in shown
    assert "pair bad-pair right ok + wrong MISS regressed" in shown
    assert "pair good-pair right ok + healed ok improved" in shown
    without = html.render(Report(report.results, report.run))
    assert "Compared with the baseline" not in without


def test_render_tolerates_a_run_without_a_model() -> None:
    page = html.render(Report([]))
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
