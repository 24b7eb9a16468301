"""bench/merge.py's pure parts: its reports are reports a run could write (they read back consistent), the
checkpoints differ, and growth is read per report with the imports left out."""

from __future__ import annotations

from pathlib import Path

from bench.merge import Measured, growth, report, table, write_reports

from pytest_gotchas.results.merging import checked_report
from pytest_gotchas.results.reading import load_document


def test_each_report_reads_back_as_written_and_consistent(tmp_path: Path) -> None:
    for layout in ("checkpoints", "shards"):
        names = write_reports(tmp_path / layout, layout, 3)
        reports = [checked_report(load_document(tmp_path / layout / name)) for name in names]
        assert [len(r.results) for r in reports] == [2, 2, 2]
    models = {report("checkpoints", n).model_infos[0].weights_sha256 for n in range(3)}
    assert len(models) == 3  # three sets of weights: never one model under two names
    assert {report("shards", n).model_infos[0].id for n in range(3)} == {"step0"}


def test_growth_per_report_leaves_the_imports_out() -> None:
    found = [Measured("checkpoints", 20, 9.0, 1.5, 50.0, 1, 20_000), Measured("checkpoints", 200, 9.0, 6.5, 60.0, 1,
                                                                             200_000),
             Measured("shards", 20, 9.0, 1.5, 50.0, 1, 20_000), Measured("shards", 200, 9.0, 31.5, 60.0, 1, 400_000)]
    assert growth(found, 0.5) == [
        "checkpoints: 20 -> 200 reports: CPU time per report x0.60 (linear); page bytes per report x1.00 (linear)",
        "shards: 20 -> 200 reports: CPU time per report x3.10 (SUPERLINEAR); page bytes per report x2.00 "
        "(SUPERLINEAR)"]
    assert table(found[:1], 0.5)[-1] == "| checkpoints | 20 | 9.0 | 1.5 | 50.0 | 50 | 0 | 20 | 1.0 |"
