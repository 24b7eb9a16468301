"""A bad option value, on the command line or in the ini file, is one usage error in the words of its declaration
(options.py)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("args, message", [
    (["--gotchas-timeout", "nan"], "argument --gotchas-timeout: must be a number of seconds, more than 0 and at most "
                                   "86400, got 'nan'"),
    (["--gotchas-timeout", "1e300"], "argument --gotchas-timeout: must be a number of seconds, more than 0 and at "
                                     "most 86400, got '1e300'"),
    (["--gotchas-runs", "99999999999999999999"], "argument --gotchas-runs: must be a whole number from 2 to 100, got "
                                                 "99999999999999999999"),
    (["--gotchas-top-k", "0"], "argument --gotchas-top-k: must be a whole number from 1 to 1000, got 0"),
    (["--gotchas-dtype", "int8"], "argument --gotchas-dtype: invalid choice: 'int8' (choose from 'bfloat16', "
                                  "'float16', 'float32')"),
    (["--gotchas-kernels", "fast"], "argument --gotchas-kernels: invalid choice: 'fast' (choose from 'plain', "
                                    "'float32-matmul')"),
    (["--gotchas-level", "1"], "argument --gotchas-level: must be more than 0 and less than 1, got '1'"),
    # issue 50, item 6: it passed, and the run died computing its first interval
    (["--gotchas-level", "1e-320"], "argument --gotchas-level: must be at least 1e-15, the smallest level whose "
                                    "intervals can be computed in double precision, got '1e-320'"),
])
def test_a_bad_value_on_the_command_line_is_one_usage_error(pytester: pytest.Pytester, args: list[str],
                                                           message: str) -> None:
    result = pytester.runpytest("--gotchas", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"pytest.main(): error: {message}" in result.errlines


@pytest.mark.parametrize("ini, message", [
    ("gotchas_timeout = inf", "ini option gotchas_timeout must be a number of seconds, more than 0 and at most 86400, "
                              "got 'inf'"),
    ("gotchas_timeout = 1e300", "ini option gotchas_timeout must be a number of seconds, more than 0 and at most "
                                "86400, got '1e300'"),
    ("gotchas_runs = 1", "ini option gotchas_runs must be a whole number from 2 to 100, got 1"),
    ("gotchas_runs = 99999999999999999999", "ini option gotchas_runs must be a whole number from 2 to 100, got "
                                            "99999999999999999999"),
    ("gotchas_softmax_dtype = half", "ini option gotchas_softmax_dtype must be one of bfloat16, float16, float32, "
                                     "got 'half'"),
    ("gotchas_kernels = fast", "ini option gotchas_kernels must be one of plain, float32-matmul, got 'fast'"),
    ("gotchas_level = five", "ini option gotchas_level expects a significance level such as 0.05, got 'five'"),
    ("gotchas_level = 1e-16", "ini option gotchas_level must be at least 1e-15, the smallest level whose intervals "
                              "can be computed in double precision, got '1e-16'"),
])
def test_a_bad_value_in_the_ini_file_is_one_usage_error(pytester: pytest.Pytester, ini: str, message: str) -> None:
    pytester.makeini(f"[pytest]\ngotchas = true\n{ini}\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {message}" in result.errlines


@pytest.mark.parametrize("source", ["cli", "ini"])
def test_a_kernel_path_for_a_dtype_without_bfloat16_matmuls_is_refused_before_anything_runs(
        pytester: pytest.Pytester, source: str) -> None:
    args = ["--gotchas-dtype", "float32"]
    if source == "ini":
        pytester.makeini("[pytest]\ngotchas_kernels = float32-matmul\n")
    else:
        args += ["--gotchas-kernels", "float32-matmul"]
    result = pytester.runpytest("--gotchas", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.errlines if line] == [
        "ERROR: --gotchas-kernels float32-matmul computes bfloat16 models' matmuls in float32, and --gotchas-dtype "
        "float32 has no bfloat16 matmul to replace: leave --gotchas-kernels out, or run bfloat16"]


@pytest.mark.parametrize("kernels", ["plain", "float32-matmul"])
def test_a_softmax_dtype_the_scorer_does_not_compute_is_refused_before_anything_runs(
        pytester: pytest.Pytester, kernels: str) -> None:
    """float16 is neither the bfloat16 model's dtype nor float32: every case failed with a traceback."""
    result = pytester.runpytest("--gotchas", "--gotchas-softmax-dtype", "float16", "--gotchas-kernels", kernels)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.errlines if line] == [
        "ERROR: --gotchas-softmax-dtype float16 cannot read a bfloat16 model: the softmax at the cut runs in the "
        "model's dtype or in float32 (finer probabilities); leave --gotchas-softmax-dtype out, or give float32"]
