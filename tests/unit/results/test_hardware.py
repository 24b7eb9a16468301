"""hardware.py: which models ran bfloat16 without native kernels, and the summary's line under the model's that says
so."""

from __future__ import annotations

import dataclasses

import pytest
from helpers.results import TINY_MODEL, report_of

from pytest_gotchas.report import terminal
from pytest_gotchas.results.hardware import SlowBfloat16, kernel_path, lacks_native_bfloat16, slow_bfloat16

AVX2 = "cpu AMD EPYC (avx2; torch AVX2)"  # this machine, as model/numerics.hardware names it
BF16 = "cpu AMD EPYC 9B14 (avx2 avx512f avx512_bf16; torch AVX512)"
AMX = "cpu Intel Xeon (avx2 avx512f avx512_bf16 amx_tile amx_bf16; torch AVX512)"


@pytest.mark.parametrize("change, slow", [
    ({"hardware": AVX2}, True),
    ({"hardware": AVX2, "device": "auto:cpu"}, True),
    ({"hardware": BF16}, False),
    ({"hardware": AMX}, False),
    ({"hardware": AVX2, "dtype": "float32"}, False),
    ({"hardware": "NVIDIA H200 (sm_90)", "device": "cuda:0"}, False),
    ({"hardware": "cpu AVX512"}, False),  # no instruction sets listed: nothing is claimed
    ({"hardware": "cpu AMD EPYC (none of avx2 avx512f avx512_bf16 amx_tile amx_bf16; torch DEFAULT)"}, True),
])
def test_lacks_native_bfloat16(change: dict[str, str], slow: bool) -> None:
    assert lacks_native_bfloat16(dataclasses.replace(TINY_MODEL, **change)) is slow


def test_the_models_it_concerns() -> None:
    slow = dataclasses.replace(TINY_MODEL, hardware=AVX2)
    other = dataclasses.replace(TINY_MODEL, id="other", hardware=AVX2, dtype="float32")
    assert slow_bfloat16([slow, other]) == SlowBfloat16(["tiny"], AVX2)
    assert slow_bfloat16([TINY_MODEL]) is None


def test_the_kernel_path_is_read_from_the_numerics() -> None:
    assert kernel_path(dataclasses.replace(TINY_MODEL, numerics="float32-matmul:0123abcd")) == "float32-matmul"
    assert kernel_path(TINY_MODEL) == "plain"
    assert kernel_path(dataclasses.replace(TINY_MODEL, numerics="")) == "plain"


def test_the_summary_says_it_under_the_model() -> None:
    model = dataclasses.replace(TINY_MODEL, hardware=AVX2)
    named, first = list(terminal.summary_lines(report_of(model), []))[:2]
    assert named[0].startswith("model '/m/tiny': bfloat16")
    assert first == (
        f"tiny: bfloat16 on a CPU without native bfloat16 kernels ({AVX2}) is emulated, at a cost: a pass of the "
        "library's prompts took 1.5x float32's time on an Intel Xeon with AVX-512 but not AVX-512-BF16, and a pass "
        "of the spec's prompts 2.4x on an AVX2-only AMD EPYC. Faster: --gotchas-kernels float32-matmul (float32 "
        "matmuls of the bfloat16 values: float32's speed, other last bits, so close verdicts can change), "
        "--gotchas-dtype float32 (other numbers, its own baseline file), or a GPU or a CPU with AVX-512-BF16 or AMX "
        "(docs/determinism.md).", {"yellow": True})
    assert not any("native bfloat16" in text for text, _ in terminal.summary_lines(report_of(TINY_MODEL), []))


def test_on_the_float32_matmul_path_the_summary_says_what_it_gave_up() -> None:
    model = dataclasses.replace(TINY_MODEL, hardware=AVX2, numerics="float32-matmul:" + "0" * 16)
    assert slow_bfloat16([model]) == SlowBfloat16(["tiny"], AVX2, "float32-matmul")
    first = list(terminal.summary_lines(report_of(model), []))[1]
    assert first == (
        f"tiny: bfloat16 on a CPU without native bfloat16 kernels ({AVX2}), its matmuls computed in float32 "
        "(--gotchas-kernels float32-matmul): float32's speed, but not the bits of the plain bfloat16 kernels, so "
        "close verdicts can differ from a plain run's (1 of 199 over the library on an Intel Xeon; "
        "docs/determinism.md).", {"yellow": True})
