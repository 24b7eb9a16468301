"""A report's figures where its chapters have families (results/familyshares.py, results/pairwise.py, the report's
sections), each against a computation written apart from the product's: the pairs grouped by family here, their
interval, test and Holm correction from statsmodels and an enumeration of signs; and, with the families taken away,
every figure is today's (Wilson, exact McNemar, the t interval)."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
import statsmodels.api as sm
from helpers.familyreports import pair_chapter, pair_report, without_families
from helpers.results import SCHEMA
from jsonschema import validate
from scipy.stats import binomtest
from scipy.stats import t as student
from statsmodels.stats.multitest import multipletests

from pytest_gotchas import read_report
from pytest_gotchas.results.merging import Inconsistent, checked_report
from pytest_gotchas.results.pairwise import log_ratio
from pytest_gotchas.results.reading import ReportDocument, UnreadableReport, report_of
from pytest_gotchas.results.report import from_data, to_data
from pytest_gotchas.results.stats import mcnemar, smallest_difference, t_interval, wilson
from pytest_gotchas.results.vocabulary import IntervalMethod

from .test_clustering import reference_design_effect, reference_sign_flip

rng = np.random.default_rng(54)
SIZES = {"hash-order": 12, "late-binding": 10, "aliasing": 15, "rounding": 8, "identity": 9, "defaults": 11,
         "iterators": 7}
CHAPTER = pair_chapter("families", SIZES, lone=3)
SMALL = pair_chapter("small", {"one": 4}, lone=2)
PAIRS = list(CHAPTER.pairs)


def draws(rates: dict[str, float], lone: list[bool]) -> list[bool]:
    """A pass for each pair of CHAPTER: each family's instances at its own rate, then the lone pairs."""
    return [bool(rng.random() < rates[f]) for f, size in SIZES.items() for _ in range(size)] + lone


A = draws({"hash-order": 0.9, "late-binding": 0.8, "aliasing": 0.95, "rounding": 0.7, "identity": 0.9,
           "defaults": 0.85, "iterators": 0.8}, [True, True, False])
B = draws({"hash-order": 0.2, "late-binding": 0.4, "aliasing": 0.3, "rounding": 0.1, "identity": 0.5,
           "defaults": 0.2, "iterators": 0.3}, [False, True, False])
# instance zero of hash-order passes under b while its instances mostly fail: surface dependence
B[0] = True
PASSED = {"model-a": {"families": A, "small": [True, False, True, True, False, True]},
          "model-b": {"families": B, "small": [False, False, True, False, False, True]}}
REPORT = pair_report([CHAPTER, SMALL], PASSED)


def family_of(pair: str) -> str:
    """The cluster of a pair, read off its id as the chapter was built (not through the product's clusters)."""
    return pair if pair.startswith("lone-") else pair.rsplit("-", 1)[0]


def by_family(passed: list[bool], pairs: list[str]) -> dict[str, list[bool]]:
    grouped: dict[str, list[bool]] = {}
    for pair, ok in zip(pairs, passed):
        grouped.setdefault(family_of(pair), []).append(ok)
    return grouped


def rollup(report, chapter: str, model: str):
    return next(c for c in report.chapters if c.info.name == chapter and c.model == model)


def test_the_chapters_instances_passed_with_the_interval_of_their_families() -> None:
    for model, passed in (("model-a", A), ("model-b", B)):
        found = REPORT.clustered(rollup(REPORT, "families", model))
        counts = [(sum(v), len(v)) for v in by_family(passed, PAIRS).values()]
        assert (found.k, found.n, found.clusters) == (sum(passed), len(passed), len(SIZES) + 3)
        assert found.design_effect == pytest.approx(reference_design_effect(counts), rel=1e-9)
        assert found.method == IntervalMethod.WILSON_CLUSTERED
        naive = wilson(sum(passed), len(passed))
        assert found.low < naive.low and found.high > naive.high  # type: ignore[operator]


def test_the_comparison_is_the_sign_flip_test_over_families_and_holm_corrects_the_run() -> None:
    found = next(c for c in REPORT.comparisons if c.chapter == "families" and c.unit == "pairs")
    differences = [sum(a) - sum(b) for a, b in zip(by_family(A, PAIRS).values(), by_family(B, PAIRS).values())]
    assert found.p_value == pytest.approx(reference_sign_flip(differences), rel=1e-12)
    assert (found.clusters, found.clustered) == (len(SIZES) + 3, True)
    assert (found.a_only, found.b_only) == (sum(a and not b for a, b in zip(A, B)),
                                            sum(b and not a for a, b in zip(A, B)))
    raw = [c.p_value for c in REPORT.comparisons]
    assert [c.p_adjusted for c in REPORT.comparisons] == pytest.approx(list(multipletests(raw, method="holm")[1]))
    # every family that differs is ahead for model-a: the exact test gives 2 / 2**families before correction
    moved = [d for d in differences if d]
    assert all(d > 0 for d in moved) and len(moved) >= 8
    assert found.p_value == pytest.approx(2 / 2 ** len(moved)) and found.shown and found.ahead == "model-a"


def test_the_families_needed_for_the_difference_seen() -> None:
    small = next(c for c in REPORT.comparisons if c.chapter == "small" and c.unit == "pairs")
    # the small chapter: family "one" (4 pairs) differs by 2, each lone pair by 0: mean 2/3, sd 1.155
    assert small.clusters == 3 and small.p_value == pytest.approx(reference_sign_flip([2, 0, 0]))
    mean, sd = 2 / 3, np.std([2, 0, 0], ddof=1)
    expected = next(g for g in range(6, 10_000) if mean * math.sqrt(g) / sd >= student.ppf(0.975, g - 1))
    assert small.families_needed == expected
    assert small.units_needed == math.ceil(expected * 6 / 3)


def test_the_log_ratios_take_the_cluster_robust_interval() -> None:
    found = next(m for m in REPORT.log_ratios if m.chapter == "families")
    cases = {c.id: log_ratio(c) for c in rollup(REPORT, "families", "model-b").cases}
    y, groups = [], []
    for c in rollup(REPORT, "families", "model-a").cases:
        y.append(log_ratio(c) - cases[c.id])  # type: ignore[operator]
        # a family's cases are its cluster; a case of a lone pair is a cluster of its own, as cases were before
        groups.append(c.id if c.id.startswith("lone-") else family_of(c.id.rsplit("-", 1)[0]))
    labels = np.unique(groups, return_inverse=True)[1]
    fit = sm.OLS(np.array(y), np.ones(len(y))).fit(cov_type="cluster", cov_kwds={"groups": labels})
    clusters = len(SIZES) + 6
    half = student.ppf(0.975, clusters - 1) * fit.bse[0]
    d = found.difference
    assert (d.mean, d.low, d.high) == (pytest.approx(fit.params[0]), pytest.approx(fit.params[0] - half),
                                       pytest.approx(fit.params[0] + half))
    assert (found.clusters, d.method, found.enough) == (clusters, IntervalMethod.T_CLUSTERED, True)


def test_each_family_beside_its_instance_zero() -> None:
    shares = {(s.model, s.family): s for s in REPORT.family_shares}
    assert len(shares) == 2 * (len(SIZES) + 1)
    grouped = by_family(B, PAIRS)["hash-order"]
    surface = shares["model-b", "hash-order"]
    assert (surface.zero, surface.instances.k, surface.instances.n) == (True, sum(grouped[1:]), len(grouped) - 1)
    assert surface.instances == wilson(sum(grouped[1:]), len(grouped) - 1)
    assert surface.surface_dependent and not surface.zero_alone_fails
    named = {f for (m, f), s in shares.items() if m == "model-b" and s.surface_dependent}
    expected = {f for f, v in by_family(B, PAIRS).items() if not f.startswith("lone-") and v[0]
                and wilson(sum(v[1:]), len(v) - 1).high < 0.5}  # type: ignore[operator]
    assert named == expected and "hash-order" in named


def test_without_families_every_figure_is_todays() -> None:
    """Every unit its own cluster: Wilson, exact McNemar, Holm and the t interval as results/stats.py computes them."""
    plain = without_families(REPORT)
    for chapter in plain.chapters:
        found, naive = plain.clustered(chapter), plain.intervals(chapter)[0]
        assert (found.k, found.n, found.low, found.high) == (naive.k, naive.n, naive.low, naive.high)
        assert (found.clusters, found.design_effect, found.method) == (naive.n, 1.0, IntervalMethod.WILSON)
    for c in plain.comparisons:
        assert c.p_value == mcnemar(c.a_only, c.b_only) == pytest.approx(
            binomtest(c.a_only, c.a_only + c.b_only).pvalue if c.a_only + c.b_only else 1.0)
        assert not c.clustered and c.clusters == c.a_only + c.b_only + c.both + c.neither
    for m in plain.log_ratios:
        theirs = {c.id: log_ratio(c) for c in rollup(plain, m.chapter, m.b).cases}
        diffs = [log_ratio(c) - theirs[c.id] for c in rollup(plain, m.chapter, m.a).cases]  # type: ignore[operator]
        assert m.difference == t_interval(diffs) and m.clusters == len(diffs)
    assert plain.family_shares == []
    summaries = to_data(plain)["rollups"]
    for s in summaries:
        assert s["smallest_difference"] == smallest_difference(s["pairs_counted"])


def test_the_json_carries_them_typed_and_reads_back(tmp_path) -> None:
    data = to_data(REPORT)
    validate(data, SCHEMA)
    assert data["format"] == 8
    rollups = {(r["chapter"], r["model"]): r for r in data["rollups"]}
    clustered = rollups["families", "model-a"]["pairs_clustered"]
    assert clustered["method"] == "wilson-design-effect" and clustered["clusters"] == len(SIZES) + 3
    assert data["chapters"][0]["families"]["hash-order"]["instances"][0] == {"unit": "hash-order-0",
                                                                            "slots": {"n": "0"}, "index": 0}
    surface = [s["family"] for s in data["family_shares"] if s["surface_dependent"]]
    assert "hash-order" in surface
    path = tmp_path / "families.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    again = read_report(path)
    assert to_data(again) == data


def test_an_edited_family_share_is_refused() -> None:
    edited = copy.deepcopy(to_data(REPORT))
    edited["family_shares"][0]["instances"]["k"] += 1
    with pytest.raises(Inconsistent) as refusal:
        checked_report(ReportDocument("a.json", edited))
    found = refusal.value.found[0]
    assert (found.field, found.subject) == ("family_shares[0].instances.k", "family families/hash-order")


FORMAT_8_FIELDS = {"comparisons": ("clusters", "clustered", "families_needed", "units_needed"),
                   "twin_splits": ("clusters", "clustered"), "log_ratios": ("clusters",),
                   "rollups": ("pairs_clustered",)}


def as_format_7(data: dict) -> dict:
    """The document as format 7 wrote it: no families, no family shares, none of the fields format 8 added to the
    computed sections' entries."""
    older = copy.deepcopy(data)
    older["format"] = 7
    for chapter in older["chapters"]:
        del chapter["families"]
    older.pop("family_shares")
    for section, fields in FORMAT_8_FIELDS.items():
        for entry in older[section]:
            for name in fields:
                entry.pop(name)
    return older


def test_a_format_7_report_reads_with_every_unit_its_own_family() -> None:
    data = to_data(without_families(REPORT))
    assert to_data(from_data(as_format_7(data))) == data


def test_a_format_7_reports_computed_sections_are_checked_as_far_as_they_go() -> None:
    """`gotchas merge` checks every computed section against the numbers: the fields format 7 did not record are not
    inconsistencies, what it did record still is."""
    older = as_format_7(to_data(without_families(REPORT)))
    checked_report(ReportDocument("old.json", older))
    older["comparisons"][0]["p_value"] = 0.5
    with pytest.raises(Inconsistent) as refusal:
        checked_report(ReportDocument("old.json", older))
    assert [i.field for i in refusal.value.found] == ["comparisons[0].p_value"]


def test_a_family_drawing_a_unit_its_chapter_does_not_list_is_refused() -> None:
    edited = copy.deepcopy(to_data(REPORT))
    edited["chapters"][0]["families"]["rounding"]["instances"][2]["unit"] = "rounding-99"
    with pytest.raises(UnreadableReport) as refusal:
        report_of(ReportDocument("a.json", edited))
    assert str(refusal.value) == ("a.json is not a gotchas report of format 8: at chapters[0].families.rounding."
                                  "instances[2].unit: family 'rounding' of chapter 'families' draws pair "
                                  "'rounding-99', which the chapter does not list")
