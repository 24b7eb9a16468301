"""The pure rules of merging reports (results/merging.py): each refusal is a type that carries what is wrong, and
report/wording_merge.py words it as `gotchas merge` prints it (tests/unit/cli/test_merge.py checks the command's
messages on real reports)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from helpers.results import SETS_CHAPTER, TINY_MODEL, report_of

from pytest_gotchas.report.wording_merge import difference_text, merge_refusal_text
from pytest_gotchas.results.merging import (ChapterDraws, ChapterVersions, DifferentResults, FieldDiffers,
                                            ModelDescribedTwice, NotOneModel, NothingToMerge, OneModelTwoNames,
                                            ProbabilitiesDiffer,
                                            RunCounts, difference, merge, recorded_order, rename_model, shared_level,
                                            versioned)
from pytest_gotchas.results.reading import ReportDocument
from pytest_gotchas.results.schema import FamilyInfo, Instance
from pytest_gotchas.results.vocabulary import FamilyKind
from pytest_gotchas.results.report import Report, to_data

DATE = "2026-12-01T12:00:00+00:00"


def document(name: str, report: Report) -> ReportDocument:
    return ReportDocument(name, json.loads(json.dumps(to_data(report))))


def test_nothing_to_merge_is_refused_and_said() -> None:
    with pytest.raises(NothingToMerge) as refusal:
        merge([], "gotchas merge", DATE)
    assert merge_refusal_text(refusal.value) == "nothing to merge: name at least one report"


def test_one_report_merges_into_itself_under_the_merge_command() -> None:
    merged = merge([document("a.json", report_of(TINY_MODEL))], "gotchas merge a.json", DATE)
    assert [r.key for r in merged.results] == ["sets/a", "sets/b"]
    assert (merged.run.command, merged.run.date) == ("gotchas merge a.json", DATE)
    assert [run.file for run in merged.run.merged_from] == ["a.json"]


def test_an_identical_duplicate_is_kept_once() -> None:
    a = document("a.json", report_of(TINY_MODEL))
    assert len(merge([a, replace(a, name="b.json")], "gotchas merge", DATE).results) == 2


def test_different_probabilities_for_one_case_are_a_typed_refusal() -> None:
    a = document("a.json", report_of(TINY_MODEL))
    b = document("b.json", report_of(TINY_MODEL, ((0.5, 0.25), (0.125, 0.75))))
    with pytest.raises(DifferentResults) as refusal:
        merge([a, b], "gotchas merge", DATE)
    found = refusal.value
    assert (found.first, found.second, found.model, found.case) == ("a.json", "b.json", "tiny", "sets/a")
    assert found.difference == ProbabilitiesDiffer(None, (0.75, 0.5), (0.125, 0.25))
    assert merge_refusal_text(found) == (
        "a.json and b.json hold different results for model 'tiny', case sets/a: P(correct) 75.00% vs 50.00%, "
        "P(wrong) 12.50% vs 25.00%; only identical duplicates (an overlapping shard) can be merged")


def test_one_model_described_two_ways_names_each_fact() -> None:
    a = document("a.json", report_of(TINY_MODEL))
    b = document("b.json", report_of(replace(TINY_MODEL, dtype="float32", source="/elsewhere")))
    with pytest.raises(ModelDescribedTwice) as refusal:
        merge([a, b], "gotchas merge", DATE)
    assert refusal.value.differ == [("dtype", "bfloat16", "float32")]  # where it was loaded from is no difference


def test_one_model_under_two_names_is_a_typed_refusal() -> None:
    a = document("a.json", report_of(TINY_MODEL))
    b = document("b.json", report_of(replace(TINY_MODEL, id="other")))
    with pytest.raises(OneModelTwoNames) as refusal:
        merge([a, b], "gotchas merge", DATE)
    assert (refusal.value.known.id, refusal.value.model.id) == ("tiny", "other")


def test_two_versions_of_one_chapter_file_are_refused() -> None:
    a = document("a.json", report_of(TINY_MODEL))
    other = report_of(replace(TINY_MODEL, id="other", weights_sha256="b" * 64))
    other.chapter_infos = [replace(SETS_CHAPTER, sha256="d" * 64)]
    with pytest.raises(ChapterVersions) as refusal:
        merge([a, document("b.json", other)], "gotchas merge", DATE)
    assert merge_refusal_text(refusal.value) == (
        "a.json and b.json ran different versions of chapter 'sets' (sets.yaml: sha256 cccccccccccc... vs "
        "dddddddddddd...): their results are not of the same cases; run both on the same chapter files")


def test_other_instances_of_one_chapter_file_are_refused() -> None:
    """The file's sha256 is the same whatever --gotchas-instances drew: the families say what was drawn."""
    drawn = {"ab": FamilyInfo(FamilyKind.PAIR, 7, [Instance("ab", {}, 0), Instance("ab-1", {"n": "4"}, 1)])}
    a = report_of(TINY_MODEL)
    pairs = {"ab": ["a", "b"], "ab-1": ["c", "d"]}
    a.chapter_infos = [replace(SETS_CHAPTER, case_ids=["a", "b", "c", "d"], pairs=pairs, families=drawn)]
    other = report_of(replace(TINY_MODEL, id="other", weights_sha256="b" * 64))
    with pytest.raises(ChapterDraws) as refusal:
        merge([document("a.json", a), document("b.json", other)], "gotchas merge", DATE)
    assert merge_refusal_text(refusal.value) == (
        "a.json and b.json drew other instances of the families of chapter 'sets' (1 vs 0 drawn): their results are "
        "not of the same cases; run both with the same --gotchas-instances")


def test_only_a_hashed_chapter_file_has_a_version() -> None:
    assert versioned(SETS_CHAPTER)
    assert not versioned(replace(SETS_CHAPTER, sha256=None))
    assert not versioned(replace(SETS_CHAPTER, path="tests/test_probe.py"))


def run(**values: Any) -> dict[str, Any]:
    return {"primer": None, "p_correct": 0.75, "p_wrong": 0.125, "prompt": ">>> x\n", **values}


@pytest.mark.parametrize(("old", "new", "found", "text"), [
    ({"status": "scored", "verdict": "ok"}, {"status": "scored", "verdict": "MISS"},
     FieldDiffers("verdict", "ok", "MISS"), "verdict ok vs MISS"),
    ({"runs": [run()]}, {"runs": [run(), run()]}, RunCounts(1, 2), "1 vs 2 runs"),
    ({"runs": [run(primer="p1")]}, {"runs": [run(primer="p1", p_wrong=0.25)]},
     ProbabilitiesDiffer("p1", (0.75, 0.75), (0.125, 0.25)),
     "primer p1: P(correct) 75.00% vs 75.00%, P(wrong) 12.50% vs 25.00%"),
    ({"runs": [run()]}, {"runs": [run(prompt=">>> y\n")]},
     FieldDiffers("prompt", ">>> x\n", ">>> y\n", None, quoted=True), "prompt '>>> x\\n' vs '>>> y\\n'"),
    ({"runs": [], "qualifiers": []}, {"runs": [], "qualifiers": ["noise"]},
     FieldDiffers("qualifiers", [], ["noise"], quoted=True), "qualifiers [] vs ['noise']"),
])
def test_the_first_difference_of_two_results_and_its_words(old: dict[str, Any], new: dict[str, Any], found: Any,
                                                           text: str) -> None:
    assert difference(old, new) == found
    assert difference_text(found) == text


def test_renaming_a_report_s_one_model_renames_it_everywhere() -> None:
    data = json.loads(json.dumps(to_data(report_of(TINY_MODEL))))
    rename_model(data, "ckpt-100")
    assert data["models"][0]["id"] == "ckpt-100"
    assert {c["model"] for c in data["cases"]} == {"ckpt-100"}
    assert "'tiny'" not in json.dumps(data) and '"tiny"' not in json.dumps(data)


def test_only_a_report_of_one_model_can_be_renamed() -> None:
    with pytest.raises(NotOneModel) as refusal:
        rename_model({"models": [], "cases": []}, "x")
    assert refusal.value.models == 0


def test_the_level_and_order_the_inputs_recorded() -> None:
    assert shared_level([{"run": {"level": 0.01}}, {"run": {"level": 0.01}}]) == 0.01
    assert shared_level([{"run": {"level": 0.01}}, {"run": {}}]) == 0.05
    assert recorded_order([{"run": {"order": [{"model": "a", "label": "100"}]}},
                           {"run": {"order": [{"model": "a", "label": "200"}, {"model": "b", "label": "300"}]}}]
                          ) == ["a=100", "b=300"]
