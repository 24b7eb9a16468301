"""The HTML page: rendered from a report made in the session on a tiny model (tests/reportdata.py), opened in
headless Chromium, and written by the plugin (with --junitxml properties)."""

from __future__ import annotations

import copy
import html as htmllib
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import markupsafe
import pytest
from helpers.browser import CHROMIUM, screenshot

from helpers.reportdata import build_report

from pytest_gotchas.report import html
from pytest_gotchas.results.report import Report
from pytest_gotchas.report.junit import properties



@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    return build_report(tmp_path_factory.mktemp("report"))


@pytest.fixture(scope="module")
def page(report: Report) -> str:
    return html.render(report)


def text_of(page: str) -> str:
    """The page as a reader sees it: tags dropped, entities decoded."""
    return htmllib.unescape(re.sub(r"<[^>]+>", "", page))


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


def test_junit_properties_of_the_cases(report: Report) -> None:
    single = next(c for c in report.cases if c.scored and len(c.runs) == 1)
    primed = next(c for c in report.cases if len(c.runs) == 2)
    unscored = next(c for c in report.cases if c.status == "unscored")
    run = single.runs[0]
    assert properties(single) == [("verdict", single.verdict), ("p_correct", run.p_correct),
                                  ("p_wrong", run.p_wrong), ("coverage", run.coverage), ("margin", run.margin)]
    props = dict(properties(primed))
    assert props["verdict"] == primed.verdict
    for run in primed.runs:
        assert props[f"{run.primer}.verdict"] == run.verdict
        assert props[f"{run.primer}.p_correct"] == run.p_correct
        assert props[f"{run.primer}.margin"] == run.margin
    assert properties(unscored) == [("verdict", "unscored")]


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


# -- the plugin writes it -----------------------------------------------------------------------------------

HEADER = """\
chapter: demo
title: "demo: <b>escaped</b> & shown"
interpreter: "3.12"
cases:
"""
CASES = """\
- id: eq-true
  transcript: |-
    >>> 1 == 1
    █
  correct: "True"
  wrong: "False"
- id: eq-false
  transcript: |-
    >>> 2 == 3
    █
  correct: "False"
  wrong: "True"
- id: amp
  transcript: |-
    >>> "<" + "&"
    '<█
  correct: "&"
  wrong: ">"
"""
FOOTER = """\
pairs:
  eq-pair: [eq-true, eq-false]
"""
PRIMED = """\
chapter: primed
title: "primed"
interpreter: "3.12"
primers:
  A-first: |
    >>> 1 == 1
    True
  B-first: |
    >>> 2 == 2
    True
cases:
  - id: eq-primed
    transcript: |-
      >>> 3 == 3
      █
    correct: "True"
    wrong: "False"
"""
# After "\n" the model says T (True) over F (False), and spells each word out; after "<" it says "&" over ">".
SPELLED = {"T": {"r": 8.0}, "r": {"u": 8.0}, "u": {"e": 8.0}, "F": {"a": 8.0}, "a": {"l": 8.0}, "l": {"s": 8.0},
           "s": {"e": 8.0}}
RULES = {"\n": {"T": 2.0, "F": 1.0}, "<": {"&": 2.0, ">": 1.0}, **SPELLED}


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from helpers.tinymodel import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", RULES)


def test_plugin_writes_html_and_junit_properties(pytester: pytest.Pytester, write_chapter, tiny_model: Path,
                                                 py312) -> None:
    write_chapter(CASES, name="demo.yaml", header=HEADER, footer=FOOTER)
    (pytester.path / "primed.yaml").write_text(PRIMED, encoding="utf-8")
    result = pytester.runpytest(
        "--gotchas", "--gotchas-model", str(tiny_model), "--gotchas-device", "cpu",
        "--gotchas-cache-dir", str(pytester.path / "cache"), "--gotchas-json", "out/result.json",
        "--gotchas-html", "out/report.html", "--junitxml", "out/junit.xml",
    )
    assert result.ret == 0
    assert result.parseoutcomes() == {"ok": 3, "MISS": 1}

    data = json.loads((pytester.path / "out" / "result.json").read_text(encoding="utf-8"))
    page = (pytester.path / "out" / "report.html").read_text(encoding="utf-8")
    assert page == html.render(Report.from_dict(data))  # the page is a view of the JSON's data, nothing more
    shown = re.sub(r"\s+", " ", text_of(page))
    by_id = {c["id"]: c for c in data["cases"]}
    for case_id in ("eq-true", "eq-false", "amp", "eq-primed"):
        assert f'<a href="#case-{by_id[case_id]["chapter"]}-{case_id}">{case_id}</a></h3>' in page
    assert ">>> \"<\" + \"&\" '<" + html.CURSOR in shown
    assert "&gt;&gt;&gt; &#34;&lt;&#34; + &#34;&amp;&#34;\n&#39;&lt;" in page
    assert "demo: &lt;b&gt;escaped&lt;/b&gt; &amp; shown" in page
    assert "FAIL pair eq-pair eq-true ok + eq-false MISS" in shown
    assert "primer A-first" in shown and "primer B-first" in shown

    tree = ET.parse(pytester.path / "out" / "junit.xml")
    props = {case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")}
             for case in tree.iter("testcase")}
    for case_id in ("eq-true", "eq-false", "amp"):
        run = by_id[case_id]["runs"][0]
        assert props[case_id] == {"verdict": by_id[case_id]["verdict"], "p_correct": str(run["p_correct"]),
                                  "p_wrong": str(run["p_wrong"]), "coverage": str(run["coverage"]),
                                  "margin": str(run["margin"])}
    assert props["eq-false"]["verdict"] == "MISS"
    primed = props["eq-primed"]
    assert primed["verdict"] == "ok"
    for run in by_id["eq-primed"]["runs"]:
        for name in ("verdict", "p_correct", "p_wrong", "coverage", "margin"):
            assert primed[f"{run['primer']}.{name}"] == str(run[name])
    assert len(primed) == 1 + 2 * 5


def test_no_html_without_the_option(pytester: pytest.Pytester, write_chapter, tiny_model: Path, py312) -> None:
    write_chapter(CASES, name="demo.yaml", header=HEADER, footer=FOOTER)
    result = pytester.runpytest("--gotchas", "--gotchas-model", str(tiny_model), "--gotchas-device", "cpu",
                                "--gotchas-cache-dir", str(pytester.path / "cache"))
    assert result.ret == 0
    assert result.parseoutcomes() == {"ok": 2, "MISS": 1}
    assert not list(pytester.path.rglob("*.html"))


def test_under_xdist_the_controller_writes_the_page_once(pytester: pytest.Pytester, write_chapter, tiny_model: Path,
                                                        py312) -> None:
    write_chapter(CASES, name="demo.yaml", header=HEADER, footer=FOOTER)
    (pytester.path / "primed.yaml").write_text(PRIMED, encoding="utf-8")
    result = pytester.runpytest(
        "-n", "2", "--gotchas", "--gotchas-model", str(tiny_model), "--gotchas-device", "cpu",
        "--gotchas-cache-dir", str(pytester.path / "cache"), "--gotchas-json", "out/result.json",
        "--gotchas-html", "out/report.html",
    )
    assert result.ret == 0
    assert result.parseoutcomes() == {"ok": 3, "MISS": 1}
    assert sorted(p.name for p in (pytester.path / "out").iterdir()) == ["report.html", "result.json"]
    data = json.loads((pytester.path / "out" / "result.json").read_text(encoding="utf-8"))
    assert data["run"]["xdist_workers"] == 2
    assert len(data["cases"]) == 4
    assert (pytester.path / "out" / "report.html").read_text(encoding="utf-8") == html.render(Report.from_dict(data))
