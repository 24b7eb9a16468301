"""The hooks this plugin calls for other plugins (a conftest.py, a CI plugin), so that they read a run's results as
types instead of parsing its JSON report; registered by plugin/hooks.py's pytest_addhooks, as pytest-xdist registers
its own newhooks.py. docs/report.md shows them in use.

Both are called on the controller only: in a serial run that is the one process; under pytest-xdist (`-n 2`) it is
the controller, which receives every worker's results, and no worker calls either hook. Their return values are not
used. Nothing of the steps is imported to declare them: the types are named for type checkers only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ..results.report import Report
    from ..results.schema import CaseResult


@pytest.hookspec()
def pytest_gotchas_case_result(result: CaseResult, config: pytest.Config) -> None:
    """One case's result for one model, once, as the controller receives it: a scored case (`result.verdict`,
    `result.runs` with their probabilities) or one that was not scored (`result.status` says why, `result.message`
    in words), a result a Python test recorded (`gotchas.case(...)`) included. Under xdist the results arrive in the
    order the workers finish them."""


@pytest.hookspec()
def pytest_gotchas_report(report: Report, config: pytest.Config) -> None:
    """The finished report of the run, once, after the baselines were compared (and recorded) and the JSON and HTML
    reports written: what --gotchas-json writes, typed (its results in the run's order, rollups, comparisons and
    baseline outcomes). Not called when the run collected no chapter and recorded no case."""
