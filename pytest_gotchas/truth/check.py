"""Check a prompt against what Python printed: a true prefix, the correct candidate next, the distractor not.

Pure: takes the executed runs, returns a verdict on the case's ground truth with a message that shows expected
and actual text around the divergence (reprs, so that a whitespace-only difference is visible).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .execute import Execution
from ..cases.authoring import divergence

CONTEXT = 30  # characters shown on each side of a divergence


class CheckStatus(enum.StrEnum):
    """What a check found of a case's ground truth."""

    OK = "ok"
    MISMATCH = "mismatch"  # a run printed otherwise than the case says
    NONDETERMINISTIC = "nondeterministic"  # the runs printed otherwise than each other
    CRASH = "crash"
    TIMEOUT = "timeout"


@dataclass(frozen=True)
class Checked:
    status: CheckStatus
    message: str | None  # what is wrong, for every status but "ok"
    output: str  # what Python printed (first run)


def check(prompt: str, correct: str | None, wrong: str | None, runs: tuple[Execution, ...]) -> Checked:
    """Every run must agree with the case; `correct`/`wrong` are None for an unscored case, which must instead
    show that its output changes between runs (seeds)."""
    output = runs[0].text
    for run in runs:
        if run.error:  # a per-case error like a crash: the session died without giving its ground truth
            return Checked(CheckStatus.CRASH, f"the snippet {run.error} (seed {run.seed})", output)
        if run.timed_out:
            return Checked(CheckStatus.TIMEOUT,
                           f"the snippet did not finish (killed after the timeout, seed {run.seed})", output)
        if run.signal_name:
            return Checked(CheckStatus.CRASH, f"the interpreter crashed: killed by {run.signal_name} (seed {run.seed})",
                           output)
    problems = [(run, _problem(prompt, correct, wrong, run.text)) for run in runs]
    failing = [(run, p) for run, p in problems if p]
    # Under one pinned seed, a seed names no run: say which run, and that the hash seed is not the cause.
    same_seed = runs[0].seed if len(runs) > 1 and len({run.seed for run in runs}) == 1 else None
    if failing and len(failing) < len(runs):
        passing = next(run for run, p in problems if not p)
        run, problem = failing[0]
        if same_seed is not None:
            return Checked(CheckStatus.NONDETERMINISTIC,
                           f"the answer changes between runs under the same PYTHONHASHSEED={same_seed}, so something "
                           f"else varies (time, randomness, memory addresses): it holds in {_nth(passing, runs)} "
                           f"but not in {_nth(run, runs)}: {problem}\n" + _runs_differ(passing, run, runs), output)
        return Checked(CheckStatus.NONDETERMINISTIC,
                       f"the answer changes between runs: it holds under PYTHONHASHSEED={passing.seed} but not under "
                       f"PYTHONHASHSEED={run.seed}: {problem}", output)
    if failing:
        # Wrong under every seed, but the text up to the end of the candidates differs: the output itself varies.
        end = len(prompt) + max(len(correct or ""), len(wrong or ""))
        (first, problem) = failing[0]
        different = next(((run, p) for run, p in failing if run.text[:end] != first.text[:end]), None)
        if different is not None:
            run, other = different
            if same_seed is not None:
                return Checked(CheckStatus.NONDETERMINISTIC,
                               f"the output changes between runs under the same PYTHONHASHSEED={same_seed}: in "
                               f"{_nth(first, runs)}: {problem}\nin {_nth(run, runs)}: {other}", output)
            return Checked(CheckStatus.NONDETERMINISTIC,
                           f"the output changes between runs: under PYTHONHASHSEED={first.seed}: {problem}\n"
                           f"under PYTHONHASHSEED={run.seed}: {other}", output)
        return Checked(CheckStatus.MISMATCH, failing[0][1], output)
    if correct is None and len({run.text for run in runs}) < 2:
        seeds = ", ".join(run.seed for run in runs)
        return Checked(CheckStatus.MISMATCH, "an unscored case must show that its output changes, but it printed the "
                       f"same under PYTHONHASHSEED={seeds}; score it with `correct`/`wrong` instead", output)
    return Checked(CheckStatus.OK, None, output)


def _problem(prompt: str, correct: str | None, wrong: str | None, actual: str) -> str | None:
    if not actual.startswith(prompt):
        at = divergence(prompt, actual)
        return "the prompt is not what Python printed\n" + _show(prompt, actual, at)
    rest = actual[len(prompt):]
    if correct is not None and not rest.startswith(correct):
        if wrong is not None and rest.startswith(wrong):
            return (f"`correct` {correct!r} is not what Python prints at the cut, `wrong` {wrong!r} is\n"
                    + _show(prompt + correct, actual, len(prompt)))
        return (f"`correct` {correct!r} is not what Python prints at the cut; it prints "
                f"{rest[:max(len(correct), 12)]!r}\n" + _show(prompt + correct, actual, len(prompt)))
    if wrong is not None and rest.startswith(wrong):
        return f"`wrong` {wrong!r} is what Python prints at the cut: it is not a misreading"
    return None


def _nth(run: Execution, runs: tuple[Execution, ...]) -> str:
    return f"run {next(n for n, r in enumerate(runs, start=1) if r is run)} of {len(runs)}"


def _runs_differ(a: Execution, b: Execution, runs: tuple[Execution, ...]) -> str:
    """Where the outputs of two runs part, and what each printed there."""
    at = divergence(a.text, b.text)
    start = max(0, at - CONTEXT)
    first, second = _nth(a, runs).split(" of ")[0], _nth(b, runs).split(" of ")[0]
    width = max(len(first), len(second)) + 1
    return (f"  the runs first differ at line {a.text.count(chr(10), 0, at) + 1}, after {a.text[start:at]!r}:\n"
            f"    {first + ':':<{width}} {a.text[at:at + CONTEXT]!r}\n"
            f"    {second + ':':<{width}} {b.text[at:at + CONTEXT]!r}")


def _show(expected: str, actual: str, at: int) -> str:
    line = expected.count("\n", 0, at) + 1
    start = max(0, at - CONTEXT)
    return (f"  at line {line} of the transcript, after {expected[start:at]!r}:\n"
            f"    transcript: {expected[at:at + CONTEXT]!r}\n"
            f"    python:     {actual[at:at + CONTEXT]!r}")
