"""compare.py, pure: a run against its baseline: the update that records what ran and keeps what did not, the pairs
a member breaks, every kind of difference sorted out, and the rounding step (ulp) that tells whether a difference
is one of rounding. Results are built by hand (helpers/baselines.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers.baselines import HEADER, MISS_, SKIPPED, UNSCORED, all_ok, case, info, infos, recorded, run

from pytest_gotchas.baseline import compare as cmp
from pytest_gotchas.baseline import store
from pytest_gotchas.baseline.compare import ulp
from pytest_gotchas.report import wording_baseline as text


def test_update_changes_only_what_ran() -> None:
    chapters = infos(info(), info("floats", cases=("x", "y"), pairs={"xy": ["x", "y"]}))
    old = recorded(all_ok() + [case("x", chapter="floats"), case("y", chapter="floats")], chapters)
    # A `-k` run of one member of sets/ab, still ok but with other numbers: the pair is not known, so kept.
    new, stats = cmp.update(old, [case("a", 0.5, 0.25)], chapters, HEADER)
    assert new.pairs == old.pairs
    assert new.verdicts["sets/a"] == store.Entry("ok", 0.5, 0.25)
    assert {k: v for k, v in new.verdicts.items() if k != "sets/a"} == {k: v for k, v in old.verdicts.items()
                                                                        if k != "sets/a"}
    assert (stats.pairs, stats.verdicts, stats.changed, stats.removed, stats.kept) == (0, 1, 0, 0, 8)  # 3 pairs, 5 cases


def test_update_records_a_pair_that_one_member_run_already_fails() -> None:
    new, stats = cmp.update(recorded(), [case("a", *MISS_)], infos(), HEADER)
    assert new.pairs == {"sets/ab": "fail", "sets/cd": "fail"}
    assert (stats.pairs, stats.verdicts, stats.changed) == (1, 1, 2)


def test_update_removes_what_a_chapter_that_ran_no_longer_has() -> None:
    old = recorded()
    renamed = infos(info(cases=("a", "b", "c", "e"), pairs={"ab": ["a", "b"], "ce": ["c", "e"]}))
    new, stats = cmp.update(old, [case("a"), case("b")], renamed, HEADER)
    assert set(new.pairs) == {"sets/ab"}  # cd is gone from the chapter; ce did not fully run
    assert set(new.verdicts) == {"sets/a", "sets/b", "sets/c"}
    assert stats.removed == 2


def test_update_drops_a_case_that_became_unscored_and_keeps_one_that_was_skipped() -> None:
    old = recorded()
    new, _ = cmp.update(old, [case("a", status=UNSCORED), case("b", status=SKIPPED)], infos(), HEADER)
    assert "sets/a" not in new.verdicts and new.verdicts["sets/b"] == old.verdicts["sets/b"]


def test_update_takes_the_new_header() -> None:
    newer = replace(HEADER, torch="2.14.0")
    new, _ = cmp.update(recorded(), all_ok(), infos(), newer)
    assert new.header == newer


# -- the pairs a member breaks ---------------------------------------------------------------------------------------


def test_a_tie_or_noise_or_prime_dep_breaks_a_pair_too() -> None:
    base = recorded()
    for result in (case("a", 0.25, 0.25), case("a", 0.01, 0.001),
                   case("a", runs=[run(0.5, 0.25, "p1"), run(0.25, 0.5, "p2")])):
        assert cmp.broken_pairs(base, result, info()) == ["ab"], result.verdict


# -- compare ---------------------------------------------------------------------------------------------------


def test_compare_sorts_out_every_kind_of_difference() -> None:
    base = recorded(all_ok() + [case("x", chapter="floats")], infos(info(), info("floats", ("x",), {})))
    base.pairs["sets/gone"] = "pass"
    base.verdicts["sets/old-case"] = store.Entry("ok", 0.5, 0.25)
    now = infos(info(cases=("a", "b", "c", "d", "e", "f"),
                     pairs={"ab": ["a", "b"], "cd": ["c", "d"], "ef": ["e", "f"]}))
    results = [case("a"), case("b", 0.25, 0.25), case("c"), case("d"), case("e"), case("f")]
    c = cmp.compare(base, results, now)
    assert [(p.key, text.describe_change(p)) for p in c.regressions] == [("sets/ab", "a ok, b ok -> tie")]
    assert [(p.key, text.describe_change(p)) for p in c.improvements] == [("sets/cd", "c ok, d MISS -> ok")]
    assert [(p.key, p.new) for p in c.new_pairs] == [("sets/ef", "pass")]
    assert c.gone_pairs == {"sets/gone": "pass"}
    assert [(x.key, x.old.verdict, x.new.verdict) for x in c.changed_cases] == [("sets/b", "ok", "tie"),
                                                                                ("sets/d", "MISS", "ok")]
    assert c.new_cases == ["sets/e", "sets/f"]
    assert c.gone_cases == ["sets/old-case"]
    assert c.not_run == ["floats"]


def test_compare_lists_a_passing_pair_whose_member_was_not_scored() -> None:
    c = cmp.compare(recorded(), [case("a"), case("b", status=SKIPPED)], infos())
    assert [(p.key, text.describe_change(p)) for p in c.unchecked] == [("sets/ab", "a ok, b not scored")]
    assert not c.regressions


# -- rounding --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("p, dtype, step", [(0.5, "bfloat16", 2 ** -8), (0.3, "bfloat16", 2 ** -9),
                                            (0.5, "float32", 2 ** -24), (0.0, "bfloat16", 0.0)])
def test_ulp(p: float, dtype: str, step: float) -> None:
    assert ulp(p, dtype) == step
