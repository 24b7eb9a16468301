"""What the vllm backend cannot do is one usage error at the start of the run, naming the flag and the backend,
before any model loads or any snippet runs: through pytester, without vLLM installed."""

from __future__ import annotations

import pytest

CHAPTER = """\
chapter: demo
title: "one case"
interpreter: "3.12"
cases:
  - id: one
    transcript: |-
      >>> print("a7")
      a█
    correct: "7"
    wrong: "8"
"""


@pytest.mark.parametrize("flag, named", [("--gotchas-layers", "--gotchas-layers"),
                                         ("--gotchas-precision-check", "--gotchas-precision-check"),
                                         ("--gotchas-one-pass-check", "--gotchas-one-pass-check"),
                                         ("--gotchas-patch-edges", "--gotchas-patch-edges")])
def test_an_unsupported_option_is_one_usage_error(pytester: pytest.Pytester, flag: str, named: str) -> None:
    (pytester.path / "demo.yaml").write_text(CHAPTER)
    result = pytester.runpytest_subprocess("--gotchas", "--gotchas-model", "vllm:gemma-3-270m", flag,
                                           "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{named} cannot be used with the vllm backend (vllm:gemma-3-270m)*"])
    assert result.stderr.str().count("cannot be used with the vllm backend") == 1
    assert "passed" not in result.stdout.str()


def test_the_same_options_with_transformers_models_are_no_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "demo.yaml").write_text(CHAPTER)
    result = pytester.runpytest_subprocess("--gotchas", "--gotchas-one-pass-check", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
