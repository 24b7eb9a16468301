"""Assertions on what a pytester run printed."""

from __future__ import annotations

import textwrap

import pytest


def output_lines(result: pytest.RunResult) -> list[str]:
    return result.outlines + result.errlines


def assert_block(result: pytest.RunResult, block: str | list[str]) -> None:
    """The lines of `block` (dedented, or a list of lines taken as they are) appear in the output exactly, one
    after the other."""
    want = textwrap.dedent(block).strip("\n").split("\n") if isinstance(block, str) else block
    lines = output_lines(result)
    for start in range(len(lines) - len(want) + 1):
        if lines[start:start + len(want)] == want:
            return
    shown = "\n".join(lines)
    pytest.fail("these lines were not found together in the output:\n" + "\n".join(want) + f"\n--- output ---\n{shown}",
                pytrace=False)


def assert_crash_lines(result: pytest.RunResult, first: str, version: str) -> None:
    """The summary row of a crash, and the interpreter's exact version in the lines that follow it."""
    lines = result.outlines
    assert first in lines, result.stdout.str()
    following = lines[lines.index(first) + 1:lines.index(first) + 4]
    assert version in [ln.strip() for ln in following], result.stdout.str()
