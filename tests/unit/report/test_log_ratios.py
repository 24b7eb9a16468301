"""issue 51, items 1 and 2: a log ratio difference states a direction (and is coloured) only from as many cases as
a sign test all one way needs (6 at 0.05; tests/unit/results/test_coverage.py says why), in the terminal, on the
page and in `gotchas merge` alike; and what a chapter can show is said of the pairs the run counted, not of the
file's. Pure: built results, no model."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from helpers import REPO
from helpers.results import TINY_MODEL, make_case, make_run

from pytest_gotchas.cli import main
from pytest_gotchas.report import html, terminal
from pytest_gotchas.report.page_claims import build_claims
from pytest_gotchas.report.wording import GREEN, UNSTYLED
from pytest_gotchas.results.report import Report, to_data
from pytest_gotchas.results.schema import ChapterInfo, Invocation

IDS = [f"c{n}" for n in range(7)]
CHAPTER = ChapterInfo(name="demo", label="ch.1 demo", title="demo", path="1-demo.yaml", implementation_defined=False,
                      case_ids=IDS, pairs={"p": ["c0", "c1"], "q": ["c2", "c3"], "r": ["c4", "c5"]}, twins={})
# a is right and sure of it, b wrong: every case's difference is log(6) - log(1/2) = +2.48 nats, the same each time
A, B = (0.75, 0.125), (0.3, 0.6)
LINE = "  demo: log ratio a - b: +2.48 nats [+2.48, +2.48] over {n} cases (t interval){outcome}"


def scored(model: str, p: tuple[float, float], ids: list[str]) -> list:
    return [make_case(i, "demo", [make_run(*p)], model=model) for i in ids]


def report(ids: list[str], model: str | None = None) -> Report:
    results = ([] if model == "b" else scored("a", A, ids)) + ([] if model == "a" else scored("b", B, ids))
    models = [dataclasses.replace(TINY_MODEL, id=m, weights_sha256=m * 64) for m in ("a", "b") if model in (None, m)]
    return Report(results, [CHAPTER], models, Invocation(command="pytest --gotchas", date="2026-12-01T00:00:00+00:00"))


def styled(r: Report) -> list[tuple[str, dict[str, bool]]]:
    return list(terminal.summary_lines(r, []))


def test_two_cases_give_the_numbers_without_a_direction_or_a_colour() -> None:
    r = report(IDS[:2])
    [found] = r.log_ratios
    assert found.difference.low is not None and found.difference.low > 0  # the interval leaves 0 out ...
    assert not found.enough and not found.shown  # ... but two cases state no direction
    line = LINE.format(n=2, outcome=": too few cases for a direction (6 needed)")
    assert (line, UNSTYLED) in styled(r)
    [row] = build_claims(r).log_ratios
    assert (row.difference, row.outcome, row.shown) == ("+2.48 nats [+2.48, +2.48] over 2 cases (t interval)",
                                                        "too few cases for a direction (6 needed)", False)
    page = html.render(r)
    assert "leans further" not in page and '<tr class="unshown"><th scope="row"><a href="#ch-demo">' in page
    assert "too few cases for a direction (6 needed)" in page


def test_five_cases_are_still_too_few_and_six_state_a_direction_in_green() -> None:
    five = LINE.format(n=5, outcome=": too few cases for a direction (6 needed)")
    assert (five, UNSTYLED) in styled(report(IDS[:5]))
    six = report(IDS[:6])
    assert (LINE.format(n=6, outcome=": a leans further toward the right answers"), GREEN) in styled(six)
    assert build_claims(six).log_ratios[0].outcome == "a leans further toward the right answers"
    data = to_data(six)["log_ratios"][0]
    assert (data["cases_needed"], data["enough"], data["shown"], data["difference"]["method"]) == (6, True, True, "t")


def test_a_merge_states_no_direction_from_two_cases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    for model in ("a", "b"):
        (tmp_path / f"{model}.json").write_text(json.dumps(to_data(report(IDS[:2], model))), encoding="utf-8")
    assert main(["merge", "a.json", "b.json", "--html", "out.html"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert LINE.format(n=2, outcome=": too few cases for a direction (6 needed)") in out
    assert not any("leans further" in line for line in out)
    assert "leans further" not in (tmp_path / "out.html").read_text(encoding="utf-8")


def test_a_chapter_with_nothing_counted_says_so_not_what_its_file_could_show() -> None:
    r = report(IDS[:1])  # one case scored under each model: no pair has both members
    text = [line for line, _ in styled(r)]
    assert "  demo: nothing counted (0 of 3 pairs): no pass counts to compare" in text
    assert not any("discordant" in line for line in text)
    [row] = build_claims(r).table
    assert row.can_show == "nothing counted"


def test_what_a_chapter_can_show_counts_the_pairs_counted_under_every_model() -> None:
    both = report(IDS[:4])  # pairs p and q counted, r not
    assert ("  demo: 2 of 3 pairs counted: fewer than the 6 discordant pairs, all one way, the exact test needs; no "
            "difference in pass counts can be shown") in [line for line, _ in styled(both)]
    assert build_claims(both).table[0].can_show == "nothing: fewer than 6 pairs (2 of 3 counted)"


def test_margin_and_log_ratio_are_two_names_everywhere() -> None:
    """The case's margin is |P(correct) - P(wrong)|, a percentage; the nats that compare models are a log ratio."""
    r = report(IDS[:6])
    text = [line for line, _ in styled(r)]
    assert any("log ratio" in line and "nats" in line for line in text)
    assert not [line for line in text if "nats" in line and "margin" in line.lower()]
    page = html.render(r)
    assert "mean log ratio +" in page and "Log ratios compared, per chapter" in page
    assert not [part for part in page.split("<") if "nats" in part and "margin" in part.lower()]
    data = to_data(r)
    assert "log_ratios" in data and "margins" not in data
    documents = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    assert not [f"{path.name}: {line}" for path in documents for line in path.read_text(encoding="utf-8").splitlines()
                if "nats" in line and "margin" in line.lower() and "log ratio" not in line]


def test_a_report_written_with_margins_reads_and_computes_its_log_ratios_again() -> None:
    from pytest_gotchas.results.report import from_data

    data = to_data(report(IDS[:6]))
    old = {"chapter": "demo", "a": "a", "b": "b", "shown": True, "difference": {
        "n": 6, "mean": 2.48, "low": 2.48, "high": 2.48, "confidence": 0.95, "resamples": 2000, "seed": 0}}
    data["margins"] = [old]  # the section's name (and a bootstrap's fields) before the rename, within format 6
    del data["log_ratios"]
    again = from_data(data)
    assert to_data(again)["log_ratios"] == to_data(report(IDS[:6]))["log_ratios"]
