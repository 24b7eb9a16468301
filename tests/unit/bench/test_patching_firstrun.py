"""bench/patching.py's FLOP count and bench/firstrun.py's table, from fixed figures: nothing is timed here."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bench import firstrun
from helpers.results import TINY_MODEL, report_of
from bench.patching import LARGER, Shape, projection
from pytest_gotchas.results.schema import Patching, Timings

GEMMA_270M = Shape("gemma-3-270m", 18, 640, 2048, 4, 1, 256, 262144)


def test_parameters_a_layer_match_the_published_sizes() -> None:
    # q and o 640x1024, k and v 640x256, the MLP 3 x 640x2048
    assert GEMMA_270M.layer_params == 2 * 640 * 1024 + 2 * 640 * 256 + 3 * 640 * 2048 == 5_570_560
    gemma2, mistral = LARGER
    assert (gemma2.layer_params, mistral.layer_params) == (77_856_768, 218_103_808)
    # 26 and 32 layers: about 2.0B and 7.0B parameters without the embeddings
    assert gemma2.layers * gemma2.layer_params == pytest.approx(2.02e9, rel=0.01)
    assert mistral.layers * mistral.layer_params == pytest.approx(6.98e9, rel=0.01)


def test_from_layer_flops_count_the_layers_after_each_patched_one() -> None:
    tiny = Shape("tiny", 3, 2, 1, 1, 1, 1, 10)  # 2*1*(2+2) + 3*2*1 = 14 parameters a layer; head 2x10
    assert tiny.layer_params == 14
    # 4 rows: each runs 2 + 1 + 0 layers over 5 tokens and the head 3 times; the two members run 3 layers and the head
    cells = 4 * ((2 + 1 + 0) * 5 * 2 * 14 + 3 * 2 * 2 * 10)
    members = 2 * (3 * 5 * 2 * 14 + 2 * 2 * 10)
    assert tiny.flops(tokens=5, rows=4) == cells + members


def test_projection_aligns_each_direction_it_was_given() -> None:
    # BOS, two shared, one differing, one shared: 2 aligned pairs (the middle and the cut); each layer's batch also
    # holds the checks' rows (scoring/patching.py)
    entry = Patching(source="a", target="b", primer=None, source_ids=[2, 5, 6, 7, 9], target_ids=[2, 5, 6, 8, 9],
                     candidate_ids=[1, 0], layers=[1, 2, 3], positions=[[3, 3], [4, 4]], tokens=["x", "y"],
                     unpatched=0.0, source_value=1.0, cells=[[0.0, 0.0]] * 3, method="from-layer")
    from pytest_gotchas.scoring.align import align
    from pytest_gotchas.scoring.patching import rows_per_layer

    rows = rows_per_layer(align((2, 5, 6, 7, 9), (2, 5, 6, 8, 9)))
    assert rows == 2 + 1 + 2  # the pairs, the shared-prefix check, self-patch at the first and the last
    assert projection([entry, entry], GEMMA_270M) == 2 * GEMMA_270M.flops(5, rows)


def child(wall: float, forward: float, passes: int, steps: int = 0, report: object = None,
          **phases: float) -> SimpleNamespace:
    seconds = {"collection": 1.0, "forward": forward, **phases}
    timings = Timings(seconds=seconds, forward_passes=passes, incremental_steps=steps)
    return SimpleNamespace(wall=wall, timings=timings, seconds=lambda phase: seconds.get(phase, 0.0),
                           report=report or report_of(TINY_MODEL))


def test_firstrun_table_its_ratios_and_what_the_kernel_path_changes() -> None:
    # Case a keeps its verdict with other probabilities; case b's MISS becomes ok.
    fast = report_of(TINY_MODEL, ((0.625, 0.125), (0.5, 0.25)))
    runs = {"cold": [child(30.0, 10.0, 40, 10, collection=12.0)], "warm": [child(20.0, 10.0, 40, 10)],
            "cold, variants": [child(90.0, 50.0, 200)], "warm, variants": [child(60.0, 50.0, 200)],
            "warm, float32": [child(15.0, 5.0, 40, 10)], firstrun.FAST: [child(15.0, 6.0, 40, 10, fast)]}
    text = "\n".join(firstrun.markdown(runs))  # type: ignore[arg-type]
    assert "| whole process | 30.0 | 20.0 | 90.0 | 60.0 | 15.0 | 15.0 |" in text
    assert "| collection | 12.00 | 1.00 | 1.00 | 1.00 | 1.00 | 1.00 |" in text
    assert "| full passes + steps | 40 + 10 | 40 + 10 | 200 + 0 | 200 + 0 | 40 + 10 | 40 + 10 |" in text
    assert "| forward seconds per pass | 0.200 | 0.200 | 0.250 | 0.250 | 0.100 | 0.120 |" in text
    assert "plain **1.50x**, with variants **1.50x**" in text
    assert ("a warm pass in bfloat16 / float32: **2.00x** (target: within 1.3x); on the float32-matmul path / "
            "float32: **1.20x**") in text
    assert ("the float32-matmul path against plain bfloat16: probabilities differ in 2 of 2 runs (largest |dP| "
            "0.5000); 1 case verdicts change: sets/b: MISS -> ok") in text
