"""The report's claims (results/pairwise.py, results/stats.py; report/claims.py, report/wording_claims.py): every
chapter count with its interval, the run's tests as one Holm-corrected family at its level, each model's twins
tested for which spelling it gets right, the paired log ratio difference of two models, what a chapter can show, and
the models x chapters table in the user's order. Pure: built results, no model."""

from __future__ import annotations

import dataclasses

import pytest
from helpers.results import make_case, make_run

from pytest_gotchas.report import terminal
from pytest_gotchas.report.claims import columns, rows
from pytest_gotchas.results.pairwise import compare_models, corrected, twin_splits
from pytest_gotchas.results.report import Report, from_data, to_data
from pytest_gotchas.results.schema import ChapterInfo, ModelLabel, Invocation
from pytest_gotchas.results.stats import holm, smallest_difference

OK, MISS = (0.7, 0.2), (0.2, 0.7)
SETS = ChapterInfo(name="sets", label="ch.2 sets", title="sets", path="2-sets.yaml", implementation_defined=False,
                   case_ids=[f"{p}-{m}" for p in range(7) for m in "ab"],
                   pairs={str(p): [f"{p}-a", f"{p}-b"] for p in range(7)}, twins={})
TWINS = ChapterInfo(name="pep289", label="PEP 289", title="twins", path="0-pep289.yaml", implementation_defined=False,
                    case_ids=[f"{t}-{s}" for t in range(8) for s in ("sugar", "plain")], pairs={},
                    twins={str(t): [f"{t}-sugar", f"{t}-plain"] for t in range(8)})
EMPTY = ChapterInfo(name="empty", label="ch.9 empty", title="empty", path="9-empty.yaml", implementation_defined=False,
                    case_ids=["x", "y"], pairs={"xy": ["x", "y"]}, twins={})


def results(model: str, sets_ok: int, sugar_right: int) -> list:
    """`sets_ok` pairs of 7 pass; of 8 twins, `sugar_right` have only the sugared spelling ok, the rest agree."""
    out = [make_case(f"{p}-{m}", "sets", [make_run(*(OK if p < sets_ok else MISS))], model=model)
           for p in range(7) for m in "ab"]
    for t in range(8):
        out.append(make_case(f"{t}-sugar", "pep289", [make_run(*OK)], model=model))
        out.append(make_case(f"{t}-plain", "pep289", [make_run(*(MISS if t < sugar_right else OK))], model=model))
    out += [make_case(c, "empty", [], status="unscored", model=model) for c in ("x", "y")]
    return out


def report(*models: tuple[str, int, int], run: Invocation | None = None) -> Report:
    found = [r for m in models for r in results(*m)]
    return Report(found, [SETS, TWINS, EMPTY], run=run or Invocation())


def summary(r: Report) -> str:
    return "\n".join(text for text, _ in terminal.summary_lines(r, []))


def test_every_chapter_count_carries_its_interval_and_an_empty_one_says_so() -> None:
    text = summary(report(("a", 2, 0)))
    assert "ch.2 sets: 2/7 pairs [8.2%, 64.1%]; 4/14 cases ok [11.7%, 54.6%]" in text
    assert ("ch.9 empty: 0/0 pairs (nothing counted, no interval); 0/0 cases ok (nothing counted, no interval)"
            in text)


def test_one_model_prints_no_comparison() -> None:
    r = report(("a", 2, 6))
    text = summary(r)
    assert r.comparisons == [] and r.log_ratios == []
    assert "models compared" not in text and "log ratios compared" not in text
    assert "pairs passed per chapter" not in text
    # its twins are still tested: a claim about one model
    assert ("pep289: twins agree 2/8; right in one spelling only: sugared 6, desugared 0 (disagree, neither ok: 0); "
            "p = 0.0312, Holm-adjusted 0.0312: the sugared spelling is right more often") in text
    assert "1 test in this report, one family, Holm-corrected" in text


def test_the_family_is_every_test_of_the_run_corrected_together() -> None:
    r = report(("a", 7, 6), ("b", 0, 0))
    raw = compare_models(r.chapters)
    splits = twin_splits(r.chapters)
    adjusted = holm([c.p_value for c in raw] + [s.p_value for s in splits])
    assert [c.p_adjusted for c in r.comparisons] + [s.p_adjusted for s in r.twin_splits] == adjusted
    pairs = next(c for c in r.comparisons if c.chapter == "sets" and c.unit == "pairs")
    # 7 discordant pairs all one way: p = 2/128, raw below 0.05; the family of 7 tests lifts it
    assert pairs.p_value == pytest.approx(2 / 128) and pairs.p_adjusted > pairs.p_value
    text = summary(r)
    assert f"p = 0.0156, Holm-adjusted {pairs.p_adjusted:.3g}" in text
    assert "5 tests in this report, one family" in text  # sets on pairs and cases, pep289 on cases, 2 twin tests
    # the chapter where no case was scored makes no test
    assert not any(c.chapter == "empty" for c in r.comparisons)


def test_a_model_is_named_ahead_only_below_the_level_after_correction() -> None:
    loose = report(("a", 7, 0), ("b", 0, 0), run=Invocation(level=0.2))
    strict = report(("a", 7, 0), ("b", 0, 0), run=Invocation(level=0.001))
    pick = [next(c for c in r.comparisons if c.chapter == "sets" and c.unit == "pairs") for r in (loose, strict)]
    assert pick[0].ahead == "a" and pick[1].ahead is None
    assert "sets: pairs: a only 7, b only 0, both 0, neither 0" in summary(strict)
    assert corrected([], [], 0.05) == ([], [])


def test_log_ratios_of_two_models_per_chapter_with_a_t_interval() -> None:
    r = report(("a", 7, 0), ("b", 0, 0))
    sets = next(m for m in r.log_ratios if m.chapter == "sets")
    assert sets.difference.n == 14 and sets.difference.method == "t" and sets.cases_needed == 6
    assert sets.difference.mean == pytest.approx(2 * 1.252763, abs=1e-5)  # log(0.7/0.2) - log(0.2/0.7)
    assert sets.shown
    text = summary(r)
    assert ("sets: log ratio a - b: +2.51 nats [+2.51, +2.51] over 14 cases (t interval): a leans further toward the "
            "right answers") in text
    assert "sets: 7 pairs: a difference shows only from 6 discordant pairs all one way" in text
    # the empty chapter's pair was never counted: nothing to say what it could show
    assert "  empty: nothing counted (0 of 1 pair): no pass counts to compare" in text.split("\n")


def test_the_table_of_models_and_chapters_in_the_users_order() -> None:
    order = [ModelLabel("c", "step 300"), ModelLabel("a", "step 100"), ModelLabel("gone", "step 0")]
    r = report(("a", 2, 0), ("b", 6, 0), ("c", 7, 0), run=Invocation(order=order))
    assert [(c.model, c.label) for c in columns(r)] == [("c", "step 300"), ("a", "step 100"), ("b", None)]
    lines = summary(r).split("\n")
    head = lines.index("pairs passed per chapter and model, with 95% Wilson intervals (never pooled over chapters):")
    assert lines[head + 1].split() == ["chapter", "c", "(step", "300)", "a", "(step", "100)", "b"]
    assert lines[head + 3].split() == ["sets", "7/7", "[65-100%]", "2/7", "[8-64%]", "6/7", "[49-97%]"]


def test_the_json_states_intervals_tests_and_log_ratios_and_reads_back() -> None:
    r = report(("a", 7, 6), ("b", 7, 6), run=Invocation(level=0.2))
    data = to_data(r)
    sets = next(x for x in data["rollups"] if x["chapter"] == "sets" and x["model"] == "a")
    assert sets["pairs_interval"]["k"] == 7 and sets["pairs_interval"]["confidence"] == pytest.approx(0.8)
    # at 0.2: 4 discordant pairs one way give p = 0.125
    assert sets["smallest_difference"] == pytest.approx(4 / 7) and sets["discordant_needed"] == 4
    empty = next(x for x in data["rollups"] if x["chapter"] == "empty")
    assert empty["pairs_interval"] == {"k": 0, "n": 0, "low": None, "high": None, "confidence": 0.8,
                                       "method": "wilson"}
    twins = next(x for x in data["twin_splits"] if x["model"] == "a")
    assert (twins["sugared_only"], twins["desugared_only"], twins["ahead"]) == (6, 0, "sugared")
    assert {m["chapter"] for m in data["log_ratios"]} == {"sets", "pep289"}
    assert "margins" not in data
    assert all("p_adjusted" in c and "shown" in c for c in data["comparisons"])
    again = from_data(data)
    assert again.run.level == 0.2 and again.comparisons == r.comparisons


def test_an_older_report_without_the_new_fields_reads() -> None:
    data = to_data(report(("a", 2, 0)))
    for key in ("twin_splits", "log_ratios"):
        del data[key]
    for rollup in data["rollups"]:
        for key in ("pairs_interval", "cases_interval", "smallest_difference", "discordant_needed"):
            del rollup[key]
    del data["run"]["level"], data["run"]["order"]
    assert from_data(data).run.level == 0.05


def test_what_a_chapter_can_show_is_computed_once_by_the_report_for_the_json_and_the_views() -> None:
    r = report(("a", 2, 6), ("b", 5, 0))
    assert list(r.can_show) == ["pep289", "sets", "empty"]  # the report's chapter order
    sets = r.can_show["sets"]
    assert (sets.counted, sets.pairs, sets.discordant_needed) == (7, 7, 6)
    assert sets.smallest_difference == smallest_difference(7, r.run.level) and r.can_show["pep289"].counted == 0
    assert r.intervals(r.chapters[0]) is r.intervals(r.chapters[0])
    assert [row.can_show_short for row in rows(r)] == [
        "no pairs", "a pass rate 86+ points apart (6 of 7 pairs one way)", "nothing counted"]
    assert to_data(r)["rollups"] == [dataclasses.asdict(s) for s in r.summaries]


def test_the_page_states_the_claims_and_draws_the_order() -> None:
    from pytest_gotchas.report import html
    from pytest_gotchas.report.page_claims import build_claims

    order = [ModelLabel("a", "100"), ModelLabel("b", "200"), ModelLabel("c", "300")]
    r = report(("a", 2, 6), ("b", 5, 0), ("c", 7, 1), run=Invocation(order=order))
    claims = build_claims(r)
    assert claims.columns == ["a (100)", "b (200)", "c (300)"]
    sets = next(row for row in claims.table if row.label == "ch.2 sets")
    assert [c.pairs for c in sets.cells] == ["2/7 pairs [8.2%, 64.1%]", "5/7 pairs [35.9%, 91.8%]",
                                             "7/7 pairs [64.6%, 100.0%]"]
    assert sets.can_show == "a pass rate 86+ points apart (6 of 7 pairs one way)"
    pep = next(row for row in claims.table if row.label == "PEP 289")
    assert pep.cells[0].pairs == "no pairs" and pep.can_show == "no pairs"
    assert [(t.model, t.sugared, t.desugared) for t in claims.twins] == [("a", 6, 0), ("b", 0, 0), ("c", 1, 0)]
    assert {(m.a, m.b) for m in claims.log_ratios} == {("a", "b"), ("a", "c"), ("b", "c")}
    [pep_series, sets_series] = claims.series  # the empty chapter draws nothing
    assert pep_series.count is None and pep_series.log_ratio is not None  # twins only: no pairs to count
    count = sets_series.count
    assert count is not None and [t.text for t in count.ticks] == ["100", "200", "300"]
    # 2/7 at the frame's 2/7 height, its whisker the interval; 7/7 at the top
    top, height = count.frame[1], count.frame[3]
    assert count.points[0].y == round(top + height * (1 - 2 / 7), 1)
    high = count.points[0].high
    assert high is not None and abs(high - (top + height * (1 - 0.6407))) < 0.1
    assert count.points[2].y == top
    page = html.render(r)
    assert "Each chapter across the order given" in page and "<polyline" in page
    assert "12 tests in this report, one family, Holm-corrected" in page


def test_a_page_of_one_model_has_its_intervals_and_no_comparison() -> None:
    from pytest_gotchas.report import html
    from pytest_gotchas.report.page_claims import build_claims

    claims = build_claims(report(("a", 2, 0)))
    assert claims.log_ratios == [] and claims.series == [] and claims.columns == ["a"]
    page = html.render(report(("a", 2, 0)))
    assert "2/7 pairs [8.2%, 64.1%]" in page and "Log ratios compared" not in page


def test_twins_over_the_library_are_a_sum_of_counts_never_a_test() -> None:
    second = ChapterInfo(name="with", label="PEP 343", title="with", path="1-with.yaml", implementation_defined=False,
                         case_ids=["w-sugar", "w-plain"], pairs={}, twins={"w": ["w-sugar", "w-plain"]})
    found = results("a", 2, 3) + [make_case("w-sugar", "with", [make_run(*MISS)], model="a"),
                                  make_case("w-plain", "with", [make_run(*OK)], model="a")]
    r = Report(found, [SETS, TWINS, EMPTY, second])
    assert len(r.twin_splits) == 2
    text = summary(r)
    assert ("twins over 2 chapters (a sum of counts, not tested): agree 5/9; right in one spelling only: sugared 3, "
            "desugared 1") in text
