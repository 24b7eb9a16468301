"""Families through the plugin: --gotchas-instances N draws each family's instances as items of their own, with ids
stable across runs (`-k` selects a family or one instance), each executed and cut at collection where its outputs
part, its wrong answer its partner's output there; an instance that cannot be cut is a refused item naming file,
line, family and slots, and the chapter's other items run; without the option nothing is drawn."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.chapters import line_of
from helpers.families import FAMILY_CHAPTER, FAMILY_RULES, REFUSING_FAMILY, TWIN_AND_CASE_FAMILIES
from helpers.output import assert_block
from helpers.results import read_report
from helpers.tinymodel import build_tiny_model

from pytest_gotchas.cases.chapter import Chapter, load_chapter
from pytest_gotchas.cases.families import drawn


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", FAMILY_RULES)


@pytest.fixture
def run(pytester: pytest.Pytester, model: Path, py312):
    def go(*args: str, text: str = FAMILY_CHAPTER) -> pytest.RunResult:
        (pytester.path / "fam.yaml").write_text(text, encoding="utf-8")
        return pytester.runpytest_subprocess("--rootdir", str(pytester.path), "--gotchas", "--gotchas-model",
                                             str(model), "--gotchas-cache-dir", str(pytester.path / "cache"),
                                             "-p", "no:randomly", *args)

    return go


def instances(pytester: pytest.Pytester, n: int, text: str = FAMILY_CHAPTER) -> Chapter:
    path = pytester.path / "fam.yaml"
    path.write_text(text, encoding="utf-8")
    return drawn(load_chapter(path, "fam.yaml"), n)


def collected(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if line.startswith("fam.yaml::")]


def test_the_default_run_draws_no_instance(run, pytester: pytest.Pytester) -> None:
    result = run("--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert collected(result) == ["fam.yaml::list-first", "fam.yaml::set-first"]
    result = run("--gotchas-json", "out.json", "-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"ok": 2}, result.stdout.str()
    report = read_report(pytester.path / "out.json")
    (chapter,) = report["chapters"]
    assert chapter["families"] == {} and list(chapter["pairs"]) == ["list-vs-set"]


def test_each_instance_is_a_pair_of_items_after_the_chapters_own(run, pytester: pytest.Pytester) -> None:
    chapter = instances(pytester, 3)
    result = run("--collect-only", "-q", "--gotchas-instances", "3")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert collected(result) == [f"fam.yaml::{case.id}" for case in chapter.cases]
    assert len(chapter.cases) == 8 and chapter.cases[2].id.startswith("list-first-")
    again = run("--collect-only", "-q", "--gotchas-instances", "3")
    assert collected(again) == collected(result)  # the same ids in every run


def test_k_selects_a_family_or_one_instance(run, pytester: pytest.Pytester) -> None:
    chapter = instances(pytester, 3)
    family = run("--collect-only", "-q", "--gotchas-instances", "3", "-k", "list-vs-set")
    assert len(collected(family)) == 8
    one = chapter.pairs[2]
    instance = run("--collect-only", "-q", "--gotchas-instances", "3", "-k", one.id)
    assert collected(instance) == [f"fam.yaml::{member}" for member in one.members]
    member = run("--collect-only", "-q", "--gotchas-instances", "3", "-k", one.members[1])
    assert member.ret == pytest.ExitCode.OK  # its partner is executed too: its output is this member's wrong answer
    assert collected(member) == [f"fam.yaml::{one.members[1]}"]


def test_each_member_is_cut_at_its_own_divergence_against_its_partners_output(run, pytester: pytest.Pytester) -> None:
    chapter = instances(pytester, 4)
    result = run("--gotchas-instances", "4", "--gotchas-json", "out.json", "-p", "no:cacheprovider")
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()
    report = read_report(pytester.path / "out.json")
    runs = {case["id"]: case["runs"][0] for case in report["cases"]}
    for instance in chapter.instances:
        n = int(dict(instance.slots)["n"])
        first, second = instance.cases
        assert (runs[first]["correct"], runs[first]["wrong"]) == (str(n - 1), "0")
        assert (runs[second]["correct"], runs[second]["wrong"]) == ("0", str(n - 1))
        assert runs[first]["prompt"].endswith(f"in range({n})]))\n[")
    (info,) = report["chapters"]
    assert [i["unit"] for i in info["families"]["list-vs-set"]["instances"]] == [
        "list-vs-set", *(instance.unit for instance in chapter.instances)]
    assert set(info["pairs"]) == {"list-vs-set", *(instance.unit for instance in chapter.instances)}


def test_an_instance_that_cannot_be_cut_is_refused_with_its_family_and_slots(run, pytester: pytest.Pytester) -> None:
    chapter = instances(pytester, 2, REFUSING_FAMILY)
    bad = next(i for i in chapter.instances if dict(i.slots)["n"] == "1")
    good = next(i for i in chapter.instances if i is not bad)
    result = run("--collect-only", "-q", "--gotchas-instances", "2", text=REFUSING_FAMILY)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    assert "ERROR collecting" not in result.stdout.str()
    assert collected(result) == ["fam.yaml::list-first", "fam.yaml::set-first",
                                 *(f"fam.yaml::{case}" for case in chapter.instances[0].cases + chapter.instances[1].cases)]
    first, second = bad.cases
    where = f"fam.yaml:{line_of(REFUSING_FAMILY, '    pair: list-vs-set')}: family 'list-vs-set', instance " \
            f"'{bad.unit}' (x='x', n='1')"
    assert_block(result, [
        f"{where}: case '{first}': its outputs part at ']' against '}}' (another character against another "
        "character), where instance zero's part at '2' against '0' (a digit against a digit): not the family's trap",
        f"case '{second}': its outputs part at '}}' against ']' (another character against another character), "
        "where instance zero's part at '0' against '2' (a digit against a digit): not the family's trap"])
    assert not any(good.unit in line for line in result.outlines if "refuse" in line)


def test_twin_and_case_families_are_cut_where_their_stated_misreading_parts(run, pytester: pytest.Pytester) -> None:
    chapter = instances(pytester, 3, TWIN_AND_CASE_FAMILIES)
    result = run("--gotchas-instances", "3", "--gotchas-json", "out.json", "-p", "no:cacheprovider",
                 text=TWIN_AND_CASE_FAMILIES)
    assert "refuses" not in result.stdout.str(), result.stdout.str()
    report = read_report(pytester.path / "out.json")
    runs = {case["id"]: case["runs"][0] for case in report["cases"]}
    (info,) = report["chapters"]
    twins = [i for i in chapter.instances if i.family == "spelled-twice"]
    assert set(info["twins"]) == {"spelled-twice", *(i.unit for i in twins)}
    for instance in twins:
        d = int(dict(instance.slots)["d"])
        for case in instance.cases:  # both spellings cut at the same point, against the stated misreading
            assert (runs[case]["correct"], runs[case]["wrong"]) == (str(d), str(d + 1))
    for instance in (i for i in chapter.instances if i.family == "doubled"):
        n = int(dict(instance.slots)["n"])
        (case,) = instance.cases
        doubled, tripled = str(2 * n), str(3 * n)
        at = next(k for k in range(len(doubled)) if doubled[k] != tripled[k])
        assert runs[case]["prompt"].endswith(f"{n} * 2\n{doubled[:at]}")
        assert (runs[case]["correct"], runs[case]["wrong"]) == (doubled[at:], tripled[at:])
    assert {name: family["kind"] for name, family in info["families"].items()} == {"spelled-twice": "twin",
                                                                                   "doubled": "case"}
