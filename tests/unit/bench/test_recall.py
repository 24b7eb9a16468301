"""bench/recall.py's pure parts: which exact cells of 10% or more the screen's top-k missed, named as the lines name
them, and the layer bands the misses are counted in."""

from __future__ import annotations

from bench.recall import band, missed

from pytest_gotchas.results.schema import Components, Patching, Screened


def test_the_cells_of_ten_percent_outside_the_top_k_are_named() -> None:
    grid = Components(layers=[1, 2], heads=1, attn=[[2.0, 1.0], [2.0, 2.0]], mlp=[[2.0, 2.0], [2.05, 0.0]],
                      head=[[[2.0, 2.0]], [[1.5, 2.0]]], post_norms=False, batched=True,
                      screened=[Screened(kind="attn", layer=1, head=0, position=1, estimate=-1.0, exact=1.0)])
    entry = Patching(source="b", target="a", primer=None, source_ids=[1, 5, 7], target_ids=[1, 6, 7],
                     candidate_ids=[3, 4], layers=[1, 2], positions=[[1, 1], [2, 2]], tokens=["x", "="],
                     unpatched=2.0, source_value=0.0, cells=[], method="from-layer")
    # effect -2: attention 1 at the cut (50%) is in the top-k; MLP 2 at the cut (100%) and head 2.0 at 'x' (25%)
    # are not; MLP 2 at 'x' (-2.5%) is under the line.
    assert missed(entry, grid) == ["MLP 2 at the cut 100%", "head 2.0 at 'x' 25%"]


def test_the_bands_are_layer_1_the_last_three_and_the_middle() -> None:
    assert [band(layer, 18) for layer in (1, 2, 15, 16, 18)] == ["layer 1", "middle", "middle", "last 3 layers",
                                                                 "last 3 layers"]


def test_the_summary_names_each_direction_with_its_primer_and_sums_them() -> None:
    from bench.recall import summary

    def direction(primer: str | None, mlp2: float) -> Patching:
        grid = Components(layers=[1, 2], heads=1, attn=[[2.0, 1.0], [2.0, 2.0]], mlp=[[2.0, 2.0], [2.05, mlp2]],
                          head=[[[2.0, 2.0]], [[1.5, 2.0]]], post_norms=False, batched=True,
                          screened=[Screened(kind="attn", layer=1, head=0, position=1, estimate=-1.0, exact=1.0),
                                    Screened(kind="head", layer=2, head=0, position=0, estimate=-0.4, exact=1.5)],
                          recall={"attn": [1, 1], "mlp": [0, 1], "head": [1, 1]},
                          recall_plain={"attn": [1, 1], "mlp": [0, 1], "head": [0, 1]})
        return Patching(source="b", target="a", primer=primer, source_ids=[1, 5, 7], target_ids=[1, 6, 7],
                        candidate_ids=[3, 4], layers=[1, 2], positions=[[1, 1], [2, 2]], tokens=["x", "="],
                        source_tokens=["w", "="], unpatched=2.0, source_value=0.0, cells=[], method="from-layer",
                        components=grid)

    # effect -2: MLP 2 at the cut restores 100% (or 150%), attention 1 at the cut 50%, head 2.0 at 'w' -> 'x' 25%.
    lines = summary([direction(None, 0.0), direction("True-first", -1.0)], k=2)
    assert lines[2:] == [
        "| b -> a | -2 | MLP 2 at the cut 100% | 2/2 | 1/2 | 1/1 / 0/1 / 1/1 | 1/1 / 0/1 / 0/1 "
        "| attn layer 1 0/1, head last 3 layers 0/1, mlp last 3 layers 1/1 |",
        "| b -> a [True-first] | -2 | MLP 2 at the cut 150% | 2/2 | 1/2 | 1/1 / 0/1 / 1/1 | 1/1 / 0/1 / 0/1 "
        "| attn layer 1 0/1, head last 3 layers 0/1, mlp last 3 layers 1/1 |",
        "| all 2 directions | | | 4/4 | 2/4 | 2/2 / 0/2 / 2/2 | 2/2 / 0/2 / 0/2 "
        "| attn layer 1 0/2, head last 3 layers 0/2, mlp last 3 layers 2/2 |"]
    assert summary([], k=2) == lines[:2]
