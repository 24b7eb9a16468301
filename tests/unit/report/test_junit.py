"""junit.py: each case's verdict and numbers as test properties (per primer for a primed case), on the report of
helpers/reportdata.py. tests/plugin/test_html.py finds them in the junit XML the plugin writes."""

from __future__ import annotations

import pytest
from helpers.reportdata import build_report

from pytest_gotchas.results.report import Report
from pytest_gotchas.report.junit import properties


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    return build_report(tmp_path_factory.mktemp("report"))


def test_junit_properties_of_the_cases(report: Report) -> None:
    single = next(c for c in report.cases if c.scored and len(c.runs) == 1)
    primed = next(c for c in report.cases if len(c.runs) == 2)
    unscored = next(c for c in report.cases if c.status == "unscored")
    run = single.runs[0]
    assert properties(single) == [("verdict", single.verdict), ("p_correct", run.p_correct),
                                  ("p_wrong", run.p_wrong), ("coverage", run.coverage), ("margin", run.margin)]
    props = dict(properties(primed))
    assert props["verdict"] == primed.verdict
    for run in primed.runs:
        assert props[f"{run.primer}.verdict"] == run.verdict
        assert props[f"{run.primer}.p_correct"] == run.p_correct
        assert props[f"{run.primer}.margin"] == run.margin
    assert properties(unscored) == [("verdict", "unscored")]
