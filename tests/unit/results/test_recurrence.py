"""results/recurrence.py and results/patched.py: what a chapter's directions share, and the chapter's section, by
hand-made directions; report/wording_effects.py's sentences of them."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_gotchas.report.wording_effects import directions_text, effects_lines, recurrence_text
from pytest_gotchas.results.patched import chapter_effects
from pytest_gotchas.results.recurrence import recurring
from pytest_gotchas.results.rollup import rollup
from pytest_gotchas.results.schema import CaseResult, ChapterInfo, Components, EffectFloor, Patching


def direction(source: str, target: str, unpatched: float, source_value: float, mlp2: list[float],
              head1: list[float], under: str | None = None) -> Patching:
    """Two layers, one head, two aligned positions (the second the cut); MLP 2 and head 1.0 as given, the rest
    unpatched."""
    flat = [unpatched, unpatched]
    grid = Components(layers=[1, 2], heads=1, attn=[flat, flat], mlp=[flat, mlp2], head=[[head1], [flat]],
                      post_norms=False, batched=True)
    return Patching(source=source, target=target, primer=None, source_ids=[1, 2, 3], target_ids=[1, 4, 3],
                    candidate_ids=[5, 6], layers=[1, 2], positions=[[1, 1], [2, 2]], tokens=["x", "="],
                    unpatched=unpatched, source_value=source_value, cells=[flat, flat], method="from-layer",
                    group="ab" if source in "ab" else "cd", metric_dtype="bfloat16", components=grid,
                    floor=EffectFloor(steps=3, logits=0.3, magnitude=4.0, under=under))


# Effects -4, +2 and -2: MLP 2 at the cut restores 100%, 50% and 100%; head 1.0 before the cut 25% in two of them.
DIRECTIONS = [direction("a", "b", 2.0, -2.0, [2.0, -2.0], [1.0, 2.0]),
              direction("b", "a", -1.0, 1.0, [-1.0, 0.0], [-0.5, -1.0]),
              direction("c", "d", 1.0, -1.0, [1.0, -1.0], [1.0, 1.0]),
              direction("d", "c", 1.0, 1.0 + 2 ** -6, [1.0, 3.0], [1.0, 1.0], under="floor")]


def test_the_components_two_directions_name_among_their_top_recur_as_a_ratio_of_means() -> None:
    found = recurring(DIRECTIONS)
    assert [(r.kind, r.layer, r.head, r.at_cut, r.directions, r.of) for r in found] == [
        ("mlp", 2, None, True, 3, 3), ("head", 1, 0, False, 2, 3)]
    # sum of oriented changes / sum of |effects|: (4 + 1 + 2) / 8 and (1 + 0.5 + 0) / 8; the direction under the
    # floor takes no part (its 3 logits on an effect of 1/64 would be 19200%)
    assert found[0].share == pytest.approx(7 / 8) and found[1].share == pytest.approx(1.5 / 8)
    assert recurrence_text("sets", found) == (
        "in the sets chapter, MLP 2 at the cut carries the answer in 3 of 3 directions (88% of the effect over the 3, "
        "a ratio of means); also head 1.0 before the cut in 2 of 3 (19%)")
    assert recurring(DIRECTIONS[:1]) == [] and recurrence_text("sets", []) == ""


def test_the_chapter_section_counts_the_directions_under_the_floor_and_why() -> None:
    info = ChapterInfo(name="sets", label="ch.2 sets", title="t", path="cases/2-sets.yaml",
                       implementation_defined=False, case_ids=["a", "b", "c", "d"],
                       pairs={"ab": ["a", "b"], "cd": ["c", "d"]}, twins={})
    cases = [CaseResult("a", "sets", "scored", "ok"), CaseResult("b", "sets", "scored", "ok", patching=DIRECTIONS[:2]),
             CaseResult("c", "sets", "scored", "ok"), CaseResult("d", "sets", "scored", "ok", patching=DIRECTIONS[2:])]
    (found,) = chapter_effects(rollup(cases, {"sets": info}))
    assert (found.chapter, found.directions, found.under, found.metric_dtypes) == ("sets", 4, {"floor": 1},
                                                                                  ["bfloat16"])
    assert found.screen is None and len(found.recurring) == 2  # no screen ran
    assert directions_text(found) == (
        "4 patched directions (logits in bfloat16); 1 under the effect floor (1 below the floor: "
        "--gotchas-patch-floor-steps and -logits): no percentage, ranking or colour for them, their logit changes in "
        "the JSON")
    assert effects_lines(found)[1].startswith("  in the sets chapter, MLP 2 at the cut carries the answer in 3 of 3")
    older = [dataclasses.replace(p, floor=None) for p in DIRECTIONS[:2]]
    cases[1] = dataclasses.replace(cases[1], patching=older)
    (found,) = chapter_effects(rollup(cases, {"sets": info}))
    assert found.not_recorded == 2 and "2 from a report that did not record the floor" in directions_text(found)
    assert chapter_effects(rollup([dataclasses.replace(c, patching=[]) for c in cases], {"sets": info})) == []
