"""The hooks this plugin calls for other plugins (a conftest.py, a CI plugin), so that they read a run's results as
types instead of parsing its JSON report; registered by plugin/hooks.py's pytest_addhooks, as pytest-xdist registers
its own newhooks.py. docs/report.md shows them in use.

Both are called on the controller only: in a serial run that is the one process; under pytest-xdist (`-n 2`) it is
the controller, which receives every worker's results, and no worker calls either hook. Their return values are not
used. Nothing of the steps is imported to declare them: the types are named for type checkers only.

`call_each` is how the controller calls them: each implementation on its own deep copy of the result or report, so
that a plugin that changes what it is given changes neither the JSON, the page, the baseline nor another plugin's
copy; and one that raises is caught and named (HookFailure), so that the run records every result and ends with an
exit status that says which plugin failed, instead of stopping at pytest's INTERNALERROR.
"""

from __future__ import annotations

import copy
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..results.report import Report
    from ..results.schema import CaseResult


@pytest.hookspec()
def pytest_gotchas_case_result(result: CaseResult, config: pytest.Config) -> None:
    """One case's result for one model, once, as the controller receives it: a scored case (`result.verdict`,
    `result.runs` with their probabilities) or one that was not scored (`result.status` says why, `result.message`
    in words), a result a Python test recorded (`gotchas.case(...)`) included, as this implementation's own copy. Under
    xdist the results arrive in the order the workers finish them."""


@pytest.hookspec()
def pytest_gotchas_report(report: Report, config: pytest.Config) -> None:
    """The finished report of the run, once, after the baselines were compared (and recorded) and the JSON and HTML
    reports written: what --gotchas-json writes, typed (its results in the run's order, rollups, comparisons and
    baseline outcomes), as this implementation's own copy. Not called when the run collected no chapter and recorded no
    case."""


@dataclass
class HookFailure:
    """A plugin's implementation of one of these hooks raised: the first time, and how many times in all."""

    hook: str
    plugin: str  # pluggy's name of the plugin: a conftest.py's path, or an installed plugin's entry point
    error: str  # "ValueError: boom"
    where: str  # the file and line it raised at, innermost
    subject: str  # what it was given the first time: a result's key, or "the report"
    times: int = 1


def call_each(caller: Any, subject: str, copied: dict[str, Any], **given: Any) -> list[HookFailure]:
    """Call every implementation of the hook `caller` (config.hook.NAME), each with its own deep copy of the values
    in `copied` and the values in `given` as they are; a failure per implementation that raised. An implementation
    that is a wrapper needs pluggy's own call: then the hook is called once, as pluggy calls it, on one copy."""
    implementations = caller.get_hookimpls()
    if any(getattr(i, "wrapper", False) or i.hookwrapper for i in implementations):
        try:
            caller(**copy.deepcopy(copied), **given)
        except Exception as error:
            return [_failure(caller.name, _raiser(implementations, error), error, subject)]
        return []
    failures = []
    for implementation in reversed(implementations):  # pluggy's order: tryfirst first, the last registered first
        values = {**copy.deepcopy(copied), **given}
        try:
            implementation.function(*(values[name] for name in implementation.argnames))
        except Exception as error:
            failures.append(_failure(caller.name, implementation.plugin_name, error, subject))
    return failures


def _failure(hook: str, plugin: str, error: Exception, subject: str) -> HookFailure:
    frames = traceback.extract_tb(error.__traceback__)
    where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"
    return HookFailure(hook, plugin, f"{type(error).__name__}: {error}", where, subject)


def _raiser(implementations: list[Any], error: Exception) -> str:
    """The plugin whose implementation is on the traceback, innermost first."""
    codes = {getattr(i.function, "__code__", None): i.plugin_name for i in implementations}
    names = [codes[frame.tb_frame.f_code] for frame in _frames(error) if frame.tb_frame.f_code in codes]
    return names[-1] if names else "a plugin"


def _frames(error: Exception) -> list[Any]:
    frames, tb = [], error.__traceback__
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    return frames
