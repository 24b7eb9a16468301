"""The plugin writes the HTML page (--gotchas-html) as a view of its JSON report's data, with each case's numbers
as --junitxml properties; without the option there is no page; under xdist the controller writes it once."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers.browser import between, row, text_of
from helpers.results import read_report

from pytest_gotchas.report import html
from pytest_gotchas.report.page_runs import CURSOR
from pytest_gotchas.results.report import from_data


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

    data = read_report(pytester.path / "out" / "result.json")
    page = (pytester.path / "out" / "report.html").read_text(encoding="utf-8")
    assert page == html.render(from_data(data))  # the page is a view of the JSON's data, nothing more
    shown = text_of(page)
    by_id = {c["id"]: c for c in data["cases"]}
    for case_id in ("eq-true", "eq-false", "amp", "eq-primed"):
        assert f'<a href="#case-{by_id[case_id]["chapter"]}-{case_id}">{case_id}</a></h3>' in page
    assert ">>> \"<\" + \"&\" '<" + CURSOR in shown
    assert "&gt;&gt;&gt; &#34;&lt;&#34; + &#34;&amp;&#34;\n&#39;&lt;" in page
    assert "demo: &lt;b&gt;escaped&lt;/b&gt; &amp; shown" in page
    assert row(between(page, "<h3>Pairs</h3>", "</table>"), "pair eq-pair") == \
        "pair eq-pair eq-true + eq-false FAIL ok + MISS"
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
    data = read_report(pytester.path / "out" / "result.json")
    assert data["run"]["xdist_workers"] == 2
    assert len(data["cases"]) == 4
    assert (pytester.path / "out" / "report.html").read_text(encoding="utf-8") == html.render(from_data(data))
