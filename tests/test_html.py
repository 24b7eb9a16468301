"""The HTML page: rendered from a recorded JSON result, opened in headless Chromium, and written by the plugin
(with --junitxml properties) on a tiny model."""

from __future__ import annotations

import copy
import html as htmllib
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_gotchas.report import html
from pytest_gotchas.report.junit import properties
from pytest_gotchas.results import CaseResult

DATA = Path(__file__).parent / "data" / "result.json"
CHROMIUM = shutil.which("chromium")


@pytest.fixture(scope="module")
def data() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def page(data: dict) -> str:
    return html.render(data)


def text_of(page: str) -> str:
    """The page as a reader sees it: tags dropped, entities decoded."""
    return htmllib.unescape(re.sub(r"<[^>]+>", "", page))


# -- content --------------------------------------------------------------------------------------------------


def test_the_recorded_result_covers_what_the_page_must_show(data: dict) -> None:
    """The fixture is a real run of the default model on cases/: check it still has every kind of case."""
    kinds = {c["verdict"] if c["status"] == "scored" else c["status"] for c in data["cases"]}
    assert {"ok", "MISS", "prime-dep", "unscored"} <= kinds
    assert any(len(c["runs"]) == 2 for c in data["cases"])
    assert {r["reading"] for c in data["cases"] for r in c["runs"]} >= {"plain", "healed", "chain"}


def test_page_is_self_contained(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>")
    assert page.rstrip().endswith("</html>")
    lowered = page.lower()
    for forbidden in ("<script", "<link", "<img", "<iframe", "@import", "url(", "src=", "http://", "https://"):
        assert forbidden not in lowered, forbidden


def test_header_carries_the_model_and_the_run(data: dict, page: str) -> None:
    model, run = data["model"], data["run"]
    shown = text_of(page)
    for value in (model["name"], model["weights_sha256"], model["dtype"], model["device"], model["torch_version"],
                  model["transformers_version"], run["python"], run["pytest"], run["command"],
                  run["date"].replace("T", " ")):
        assert value in shown, value
    softmax = {r["softmax_dtype"] for c in data["cases"] for r in c["runs"]}
    assert f"softmax dtype{', '.join(sorted(softmax))}" in shown


def test_every_case_appears_with_its_verdict_badge(data: dict, page: str) -> None:
    for case in data["cases"]:
        key = case["verdict"] if case["status"] == "scored" else case["status"]
        anchor = f'id="case-{case["chapter"]}-{case["id"]}"'
        assert page.count(anchor) == 1, anchor
        article = page[page.index(anchor):page.index("</article>", page.index(anchor))]
        assert f'>{case["id"]}</a></h3><span class="badge b-{key.lower()}">{key}</span>' in article


def test_primed_cases_show_every_primer_run(data: dict, page: str) -> None:
    primed = [c for c in data["cases"] if len(c["runs"]) > 1]
    assert primed
    for case in primed:
        anchor = f'id="case-{case["chapter"]}-{case["id"]}"'
        article = page[page.index(anchor):page.index("</article>", page.index(anchor))]
        assert 'class="runs many"' in article
        for run in case["runs"]:
            assert f"primer <b>{run['primer']}</b>" in article
            assert f"<b>{html.pct(run['p_correct'])}</b>" in article


def test_prompts_are_escaped_and_end_in_a_cursor(data: dict, page: str) -> None:
    shown = text_of(page)
    for case in data["cases"]:
        for run in case["runs"]:
            assert run["prompt"] + html.CURSOR in shown
            assert html.e(run["prompt"].split("\n")[-1]) + '<span class="cursor"' in page


def test_hostile_text_is_escaped_everywhere(data: dict) -> None:
    """Prompts hold Python reprs such as <tuple_iterator object at 0x7f...>: text, never markup."""
    evil = "<tuple_iterator object at 0x7f3a> & \"q\" 'x' </pre><script>alert(1)</script>"
    hostile = copy.deepcopy(data)
    first = next(c for c in hostile["cases"] if c["runs"])
    first["runs"][0]["prompt"] = ">>> iter(())\n" + evil + "\n"
    first["runs"][0]["top"][0][0] = evil
    first["note"] = evil
    first["id"] = "id<&>"
    unscored = next(c for c in hostile["cases"] if c["status"] == "unscored")
    unscored["message"] = evil
    unscored["outputs"][0][1] = evil
    hostile["model"]["name"] = evil
    hostile["run"]["command"] = "pytest -k '" + evil + "'"
    hostile["chapters"][0]["label"] = evil
    page = html.render(hostile)
    assert "<script" not in page
    assert "<tuple_iterator" not in page
    assert "&lt;tuple_iterator object at 0x7f3a&gt; &amp; &quot;q&quot; &#x27;x&#x27; &lt;/pre&gt;" in page
    assert text_of(page).count("<tuple_iterator object at 0x7f3a>") >= 7
    assert 'id="case-pep289-id&lt;&amp;&gt;"' in page


def test_pair_lines(data: dict, page: str) -> None:
    shown = text_of(page)
    for pair in data["pairs"]:
        state = "pass" if pair["passed"] else "not scored" if pair["passed"] is None else "FAIL"
        members = " + ".join(f"{m} {v}" for m, v in zip(pair["members"], pair["verdicts"]))
        assert f"{state} pair {pair['id']} {members}" in re.sub(r"\s+", " ", shown), pair["key"]
    for chapter in data["chapters"]:
        assert chapter["line"] in shown
        if chapter["pairs_total"]:
            assert f"{chapter['pairs_passed']}/{chapter['pairs_counted']} pairs" in shown


def test_twins_agree_or_disagree(data: dict, page: str) -> None:
    twins = [t for c in data["chapters"] for t in c["twins"]]
    assert twins
    shown = re.sub(r"\s+", " ", text_of(page))
    for twin in twins:
        state = "agree" if twin["agree"] else "disagree"
        assert f"{state} {twin['id']} {twin['members'][0]} {twin['verdicts'][0]} / {twin['members'][1]}" in shown


def test_verdict_counts_in_the_summary(data: dict, page: str) -> None:
    summary = page[page.index('<section class="summary">'):page.index("</section>")]
    counts: dict[str, int] = {}
    for case in data["cases"]:
        key = case["verdict"] if case["status"] == "scored" else case["status"]
        counts[key] = counts.get(key, 0) + 1
    for key in html.KEYS:
        assert f'<span class="badge b-{key.lower()}">{key}</span><b>{counts.get(key, 0)}</b>' in summary


def test_healed_and_multi_token_cuts_show_their_tokens_and_the_plain_reading(data: dict, page: str) -> None:
    shown = text_of(page)
    for case in data["cases"]:
        for run in case["runs"]:
            if run["reading"] == "plain":
                continue
            label = "healed cut" if run["reading"] == "healed" else "multi-token cut"
            tokens = " + ".join(repr(t) for t in run["correct_tokens"])
            assert f"{label} {tokens} vs" in shown
            assert (f"plain reading at the full prompt: correct {html.pct(run['plain_p_correct'])}, "
                    f"wrong {html.pct(run['plain_p_wrong'])} {run['plain_verdict']}") in shown


def test_unscored_cases_show_their_outputs_per_seed(data: dict, page: str) -> None:
    shown = text_of(page)
    case = next(c for c in data["cases"] if c["status"] == "unscored")
    assert case["message"] in shown
    for seed, output in case["outputs"]:
        assert f"PYTHONHASHSEED={seed}{output}" in shown


def test_baseline_is_optional_and_rendered_when_present(data: dict, page: str) -> None:
    assert "Compared with the baseline" not in page
    with_baseline = dict(data, baseline={"path": "baselines/x.yaml", "regressions": ["sets/dict-vs-set-int"],
                                          "improvements": [{"key": "floats/inexact-vs-exact-sum"}]})
    page = html.render(with_baseline)
    shown = re.sub(r"\s+", " ", text_of(page))
    assert "regressions 1 sets/dict-vs-set-int" in shown
    assert "improvements 1 floats/inexact-vs-exact-sum" in shown
    assert "pair dict-vs-set-int dict-int ok + set-int MISS regressed" in shown
    assert "pair inexact-vs-exact-sum inexact-sum MISS + exact-sum prime-dep improved" in shown


def test_render_tolerates_a_run_without_a_model() -> None:
    page = html.render({"format": 1, "run": {}, "model": None, "cases": [], "pairs": [], "chapters": []})
    assert "no model was loaded" in page


def test_write_is_atomic_and_readable(tmp_path: Path, data: dict) -> None:
    target = tmp_path / "out" / "report.html"
    html.write(target, data)
    assert target.read_text(encoding="utf-8") == html.render(data)
    assert target.stat().st_mode & 0o444 == 0o444
    assert [p.name for p in target.parent.iterdir()] == ["report.html"]


def test_junit_properties_of_recorded_cases(data: dict) -> None:
    single = next(c for c in data["cases"] if len(c["runs"]) == 1)
    primed = next(c for c in data["cases"] if len(c["runs"]) == 2)
    unscored = next(c for c in data["cases"] if c["status"] == "unscored")

    def result(case: dict) -> CaseResult:
        chapter = next(ch for ch in data["chapters"] if ch["name"] == case["chapter"])
        info = {"name": chapter["name"], "label": chapter["label"], "title": chapter["title"],
                "path": chapter["path"], "implementation_defined": chapter["implementation_defined"],
                "case_ids": [], "pairs": {}, "twins": {}}
        return CaseResult.from_dict(dict(case, chapter=info))

    run = single["runs"][0]
    assert properties(result(single)) == [("verdict", single["verdict"]), ("p_correct", run["p_correct"]),
                                          ("p_wrong", run["p_wrong"]), ("coverage", run["coverage"]),
                                          ("margin", run["margin"])]
    props = dict(properties(result(primed)))
    assert props["verdict"] == primed["verdict"]
    for run in primed["runs"]:
        assert props[f"{run['primer']}.verdict"] == run["verdict"]
        assert props[f"{run['primer']}.p_correct"] == run["p_correct"]
        assert props[f"{run['primer']}.margin"] == run["margin"]
    assert properties(result(unscored)) == [("verdict", "unscored")]


# -- in a browser -------------------------------------------------------------------------------------------


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install chromium; "
                                             ".ci/run installs it): cannot take the page's screenshot")
def test_chromium_renders_a_screenshot(tmp_path: Path, data: dict) -> None:
    page = tmp_path / "report.html"
    html.write(page, data)
    shot = tmp_path / "shot.png"
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1280,2000",
         page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
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
# After "\n" the model says T (True) over F (False); after "<" it says "&" over ">".
RULES = {"\n": {"T": 2.0, "F": 1.0}, "<": {"&": 2.0, ">": 1.0}}


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tinymodel import build_tiny_model

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
    assert page == html.render(data)  # the page is a view of the JSON, nothing more
    shown = re.sub(r"\s+", " ", text_of(page))
    by_id = {c["id"]: c for c in data["cases"]}
    for case_id in ("eq-true", "eq-false", "amp", "eq-primed"):
        assert f'<a href="#case-{by_id[case_id]["chapter"]}-{case_id}">{case_id}</a></h3>' in page
    assert ">>> \"<\" + \"&\" '<" + html.CURSOR in shown
    assert "&gt;&gt;&gt; &quot;&lt;&quot; + &quot;&amp;&quot;\n&#x27;&lt;" in page
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
    assert (pytester.path / "out" / "report.html").read_text(encoding="utf-8") == html.render(data)
