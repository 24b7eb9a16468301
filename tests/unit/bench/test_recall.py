"""bench/recall.py's pure parts: the table of directions judged as AtP* judges a screen (overlap, mass, the
verified-recall curve), where the exact top-k sit by kind and layer band, and the directions under the floor."""

from __future__ import annotations

from bench.recall import band, summary, top_bands

from pytest_gotchas.results.schema import Components, EffectFloor, Patching, ScreenScore


def direction(primer: str | None, found_at: list[int], under: str | None = None) -> Patching:
    """Effect -2; exact changes: MLP 2 at the cut -2, attention 1 at the cut -1, head 2.0 at 'x' -0.5."""
    score = ScreenScore(k=3, cells=8, overlap=2, mass=0.75, top_mass=3.5, found_at=found_at, area=0.5,
                        area_plain=0.25)
    grid = Components(layers=[1, 2], heads=1, attn=[[2.0, 1.0], [2.0, 2.0]], mlp=[[2.0, 2.0], [2.0, 0.0]],
                      head=[[[2.0, 2.0]], [[1.5, 2.0]]], post_norms=False, batched=True,
                      score=None if under else score)
    return Patching(source="b", target="a", primer=primer, source_ids=[1, 5, 7], target_ids=[1, 6, 7],
                    candidate_ids=[3, 4], layers=[1, 2], positions=[[1, 1], [2, 2]], tokens=["x", "="],
                    source_tokens=["w", "="], unpatched=2.0, source_value=0.0, cells=[], method="from-layer",
                    components=grid, floor=EffectFloor(steps=3, logits=0.3, magnitude=2.0, under=under))


def test_the_bands_are_layer_1_the_last_three_and_the_middle() -> None:
    assert [band(layer, 18) for layer in (1, 2, 15, 16, 18)] == ["layer 1", "middle", "middle", "last 3 layers",
                                                                 "last 3 layers"]


def test_the_exact_top_k_by_kind_and_band_with_how_many_the_first_k_verifications_find() -> None:
    entry = direction(None, [1, 7, 2])
    assert entry.components is not None
    found = top_bands(entry, entry.components)
    assert dict(found) == {"mlp last 3 layers": 1, "mlp last 3 layers found": 1, "attn layer 1": 1,
                           "attn layer 1 found": 0, "head last 3 layers": 1, "head last 3 layers found": 1}


def test_the_summary_names_each_direction_with_its_primer_sums_them_and_counts_those_under_the_floor() -> None:
    lines = summary([direction(None, [1, 7, 2]), direction("True-first", [1, 2, 3]),
                     direction("False-first", [1, 2, 3], under="floor")], k=3)
    assert lines[2:] == [
        "| b -> a | -2 | MLP 2 at the cut 100% | 2/3 | 0.75 | 2 / 2 / 3 / 3 of 3 | 7 of 8 | 0.500 (0.250) | "
        "attn layer 1 0/1, head last 3 layers 1/1, mlp last 3 layers 1/1 |",
        "| b -> a [True-first] | -2 | MLP 2 at the cut 100% | 2/3 | 0.75 | 3 / 3 / 3 / 3 of 3 | 3 of 8 | 0.500 "
        "(0.250) | attn layer 1 1/1, head last 3 layers 1/1, mlp last 3 layers 1/1 |",
        "| all 2 directions | | | 4/6 | 0.75 | 5 / 5 / 6 / 6 of 6 | 10 | 0.500 (0.250) | attn layer 1 1/2, "
        "head last 3 layers 2/2, mlp last 3 layers 2/2 |",
        "", "Not scored (under the effect floor, by why): floor 1"]
    assert summary([], k=3) == lines[:2]
