"""results/patching.py and the rollup: what a patched direction says, and where it lands (on its pair)."""

from __future__ import annotations

import dataclasses

from pytest_gotchas.report.wording_patching import patching_line
from pytest_gotchas.results.effects import spacing
from pytest_gotchas.results.patching import carried_from, strongest
from pytest_gotchas.results.rollup import rollup
from pytest_gotchas.results.schema import CaseResult, ChapterInfo, Patching


def direction(cells: list[list[float]], **values: object) -> Patching:
    base = dict(source="set-reversed", target="list-reversed", primer=None, source_ids=[2, 5, 9, 7],
                target_ids=[2, 6, 9, 8], candidate_ids=[11, 12], layers=list(range(1, len(cells) + 1)),
                positions=[[1, 1], [2, 2], [3, 3]], tokens=["list", "(", ")"], unpatched=2.0, source_value=-2.0,
                cells=cells, method="layer-batch", group="list-vs-set", prefix=1)
    return Patching(**{**base, **values})  # type: ignore[arg-type]


CELLS = [[-1.0, 2.0, 2.0],  # layer 1: 'list' restores 75%
         [1.0, 2.0, 0.0],  # layer 2: the last position restores 50%
         [2.0, 2.0, -2.0]]  # layer 3: the last position is the source's value


def test_the_most_restoring_cell_and_where_the_last_position_carries_it() -> None:
    p = direction(CELLS)
    assert p.fractions == [[0.75, 0.0, 0.0], [0.25, 0.0, 0.5], [0.0, 0.0, 1.0]]
    best = strongest(p)
    assert best is not None and (best.layer, best.position, best.token, best.fraction) == (1, (1, 1), "list", 0.75)
    assert carried_from(p) == 2
    assert patching_line(p) == ("set-reversed -> list-reversed: layer 1 at 'list' (position 1) restores 75% of the "
                                "effect (logit difference +2 on list-reversed, -2 from set-reversed); the last "
                                "position carries it from layer 2 of 3")


def test_no_effect_and_unaligned_positions_are_said() -> None:
    p = direction(CELLS, source_value=2.0, unaligned_source=[2, 3, 4], unaligned_target=[2, 3], primer="dicts")
    assert p.fractions[0] == [None, None, None] and carried_from(p) is None
    assert patching_line(p) == ("set-reversed -> list-reversed [dicts]: no effect to restore (logit difference +2 on "
                                "list-reversed, +2 from set-reversed); not aligned by the token diff: source "
                                "positions 2-4, target positions 2-3; 3 aligned")


def test_a_shared_prefix_the_members_computed_differently_is_said_with_its_shift() -> None:
    p = direction(CELLS, prefix_apart=512.0, prefix_shift=0.0625)
    assert patching_line(p).endswith(
        "from layer 2 of 3; shared prefix not checked: the members' own states there differ by up to 512 (lengths 4 "
        "and 4 round it differently on this machine), and patching there moved the logit difference by up to 0.0625 "
        "(1.6% of the effect)")


def test_the_rollup_puts_a_members_patching_on_its_pair() -> None:
    info = ChapterInfo(name="sets", label="ch.2 sets", title="t", path="cases/2-sets.yaml",
                       implementation_defined=False, case_ids=["list-reversed", "set-reversed", "dict"],
                       pairs={"list-vs-set": ["list-reversed", "set-reversed"], "dict-vs-set": ["dict", "set-reversed"]},
                       twins={})
    entries = [direction(CELLS), direction(CELLS, source="list-reversed", target="set-reversed")]
    cases = [CaseResult("list-reversed", "sets", "scored", "ok"),
             CaseResult("set-reversed", "sets", "scored", "ok", patching=entries), CaseResult("dict", "sets", "scored", "ok")]
    (chapter,) = rollup(cases, {"sets": info})
    assert [p.patching for p in chapter.pairs] == [entries, []]


def test_a_cell_names_both_tokens_when_the_report_has_the_sources() -> None:
    p = direction(CELLS, source_tokens=["set", "(", "("])
    best = strongest(p)
    assert best is not None and (best.source_token, best.token) == ("set", "list")
    assert patching_line(p).startswith("set-reversed -> list-reversed: layer 1 at 'set' -> 'list' (positions 1 -> 1) "
                                       "restores 75% of the effect")


def test_spacing_is_the_dtype_step_at_a_value() -> None:
    assert spacing(10.5, "bfloat16") == 0.0625  # 8 <= |x| < 16: 2**3 / 2**7
    assert spacing(-10.5, "bfloat16") == 0.0625
    assert spacing(1.0, "float32") == 2.0 ** -23
    assert spacing(0.0, "bfloat16") == spacing(1.0, "int8") == 0.0  # unknown: no resolution said


def test_the_effect_is_said_in_steps_of_the_metric_dtype() -> None:
    p = direction(CELLS, unpatched=10.0, source_value=9.8125, metric_dtype="bfloat16", step=0.0625)
    assert p.effect_steps == -3.0
    assert "; effect -0.1875 = -3 steps of 0.0625 (logits in bfloat16)" in patching_line(p)
    assert direction(CELLS).effect_steps is None and "steps" not in patching_line(direction(CELLS))


def test_the_components_that_restore_most_are_named_exact() -> None:
    from pytest_gotchas.report.wording_patching import components_line, patched_lines
    from pytest_gotchas.results.patching import top_components
    from pytest_gotchas.results.schema import Components

    grid = Components(layers=[1, 2], heads=2, attn=[[2.0, 2.0, -2.0], [2.0, 2.0, 2.0]],
                      mlp=[[2.0, 2.0, 2.0], [2.0, 2.0, 0.0]],
                      head=[[[1.0, 2.0, -2.0], [2.0, 2.0, 2.0]], [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]],
                      post_norms=True, batched=True)
    p = direction(CELLS, components=grid, source_tokens=["set", "(", ")"])
    top = top_components(p, 3)
    assert [(c.kind, c.layer, c.head, c.fraction) for c in top] == [
        ("attn", 1, None, 1.0), ("head", 1, 0, 1.0), ("mlp", 2, None, 0.5)]
    assert components_line(p) == (
        "components set-reversed -> list-reversed: attention 1 at the cut 100%, head 1.0 at the cut 100%, MLP 2 at "
        "the cut 50% (exact; attention and MLP post-norm writes, heads before o_proj)")
    assert patched_lines(p)[1].startswith("  components ") and len(patched_lines(direction(CELLS))) == 1
    assert top_components(direction(CELLS)) == []


def test_the_screen_is_said_beside_the_exact_value_with_its_score() -> None:
    from pytest_gotchas.report.wording_patching import screen_text
    from pytest_gotchas.results.schema import Components, Screened, ScreenScore

    score = ScreenScore(k=2, cells=9, overlap=1, mass=0.75, top_mass=8.0, found_at=[1, 7], area=0.5, area_plain=0.5)
    grid = Components(layers=[1], heads=1, attn=[[2.0, 2.0, -2.0]], mlp=[[2.0, 2.0, 2.0]], head=[[[2.0, 2.0, 0.0]]],
                      post_norms=False, batched=True,
                      screened=[Screened(kind="attn", layer=1, head=0, position=2, estimate=-3.0, exact=-2.0)],
                      score=score)
    assert screen_text(direction(CELLS, components=grid)) == (
        "; screen top-1: 1 of the exact top-2 in its top-2, 75% of their mass; verified in its order, 1/1/2/2 of them "
        "found within 1k/2k/5k/10k verifications, all 2 after 7 of 9 (the curve's area 0.500); its first, attention "
        "1 at position 3, estimated 75%, exact 100%")
    plain = dataclasses.replace(grid, score=dataclasses.replace(score, area_plain=0.25))
    assert "(the curve's area 0.500 (by |estimate| alone 0.250))" in screen_text(direction(CELLS, components=plain))
    assert screen_text(direction(CELLS, components=dataclasses.replace(grid, score=None))) == ""


def test_the_screen_alone_names_its_verified_cells_exact_beside_the_estimate_and_why_there_is_no_score() -> None:
    from pytest_gotchas.report.wording_patching import SCORE_NEEDS_GRID, components_line, patched_lines
    from pytest_gotchas.results.patching import top_verified
    from pytest_gotchas.results.schema import Components, Screened

    top = [Screened(kind="head", layer=2, head=1, position=0, estimate=-1.0, exact=1.0, graddrop=1.5),
           Screened(kind="mlp", layer=1, head=0, position=2, estimate=-3.0, exact=-2.0)]
    alone = Components(layers=[], heads=2, attn=[], mlp=[], head=[], post_norms=False, batched=False, screened=top,
                       method="screen")
    p = direction(CELLS, components=alone, source_tokens=["set", "(", ")"])
    found = top_verified(p)
    assert [(v.component.kind, v.component.layer, v.component.head, v.component.fraction, v.estimate, v.graddrop)
            for v in found] == [("mlp", 1, None, 1.0, 0.75, None), ("head", 2, 1, 0.25, 0.25, 0.375)]
    assert components_line(p) == (
        "components set-reversed -> list-reversed: MLP 1 at the cut 100% exact (estimated 75%), head 2.1 at 'set' -> "
        "'list' 25% exact (estimated 25%) (screen only: top-2 by attribution patching, verified by exact patching; "
        f"attention and MLP writes, heads before o_proj); {SCORE_NEEDS_GRID}")
    assert patched_lines(p)[1] == "  " + components_line(p)
    moved_away = dataclasses.replace(alone, screened=[dataclasses.replace(top[0], exact=3.0)])
    assert components_line(direction(CELLS, components=moved_away)).startswith(
        "components set-reversed -> list-reversed: no cell of the screen's top-1 restores any of the effect, patched "
        "exactly (screen only: ")
    assert components_line(direction(CELLS, components=alone, source_value=2.0)).endswith(
        "no effect to restore; screen only")
