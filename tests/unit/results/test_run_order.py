"""rollup.in_run_order: the results as the run ordered them (the models as given, then chapters by their files'
numbers, then cases in file order), whatever order xdist's workers sent them in."""

from __future__ import annotations

import dataclasses

from helpers.baselines import case, info

from pytest_gotchas.results.rollup import in_run_order


def test_results_come_back_in_model_chapter_and_case_order() -> None:
    sets = dataclasses.replace(info("sets", ("b", "a")), path="cases/2-sets.yaml")
    rounding = dataclasses.replace(info("rounding", ("c",), pairs={}), path="cases/10-rounding.yaml")
    chapters = {"rounding": rounding, "sets": sets}
    arrived = [case("c", chapter="rounding", model="m1"), case("a", model="m2"), case("a", model="m1"),
               case("b", model="m2"), case("b", model="m1"), case("x", model="other")]
    ordered = in_run_order(arrived, chapters, ["m1", "m2"])
    assert [(r.model, r.chapter, r.id) for r in ordered] == [
        ("m1", "sets", "b"), ("m1", "sets", "a"), ("m1", "rounding", "c"), ("m2", "sets", "b"), ("m2", "sets", "a"),
        ("other", "sets", "x")]  # a model the run does not name comes last
