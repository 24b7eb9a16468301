"""bench/kernels.py's table, from fixed figures: nothing is timed here."""

from __future__ import annotations

from bench import kernels


def test_each_path_against_float32_and_against_plain_bfloat16() -> None:
    result = {"prompts": 4, "tokens": 36.25, "capability": "AVX512", "rows": {
        kernels.PLAIN: {"seconds": 0.3, "differ": 0, "dp": 0.0},
        "float32-matmul": {"seconds": 0.21, "differ": 3, "dp": 0.0625},
        "float32": {"seconds": 0.2, "differ": 4, "dp": 0.03125}}}
    assert kernels.table(result) == [
        "4 prompts, 36.2 tokens on average; torch capability AVX512", "",
        "| path | seconds a pass | / float32 | prompts whose logits differ from plain bfloat16 | largest dP |",
        "|---|---:|---:|---:|---:|",
        "| bfloat16 (plain: the default) | 0.300 | 1.50x | 0 of 4 | 0.0000 |",
        "| float32-matmul | 0.210 | 1.05x | 3 of 4 | 0.0625 |",
        "| float32 | 0.200 | 1.00x | 4 of 4 | 0.0312 |"]
