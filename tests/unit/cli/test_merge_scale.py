"""`gotchas merge` of many models stays linear in them: up to ALL_PAIRS_UP_TO models every two are compared (a CI
matrix), beyond it each model with the next in the report's order (a series of checkpoints), in the McNemar tests,
the margins' bootstraps, the terminal's differences and the page. 200 checkpoints were 19,900 comparisons per
chapter, 196 s and a 19.5 MB page; bench/merge.py measures the time, these tests what it is made of. The reports
are bench/merge.py's: checkpoint n on one chapter of two cases in a pair."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

import pytest
from bench.merge import report, write_reports

from pytest_gotchas.cli import main
from pytest_gotchas.report import html, json_report
from pytest_gotchas.results.pairwise import ALL_PAIRS_UP_TO
from pytest_gotchas.results.reading import read_report


def merged(tmp_path: Path, count: int, order: list[int] | None = None, *more: str) -> dict:
    """The merged JSON of `count` checkpoints, placed in `order` (step n at label n) when given."""
    names = write_reports(tmp_path, "checkpoints", count)
    orders = [f"--order=step{n}={n}" for n in order or []]
    assert main(["merge", *(str(tmp_path / name) for name in names), *orders, "--json", str(tmp_path / "all.json"),
                 *more]) == 0
    return json.loads((tmp_path / "all.json").read_text(encoding="utf-8"))


def compared(data: dict, section: str = "comparisons") -> list[tuple[str, str]]:
    return list(dict.fromkeys((c["a"], c["b"]) for c in data[section]))


def test_up_to_the_bound_every_two_models_are_compared(tmp_path: Path, capsys) -> None:
    data = merged(tmp_path, ALL_PAIRS_UP_TO)
    every = list(combinations([f"step{n}" for n in range(ALL_PAIRS_UP_TO)], 2))
    assert compared(data) == every and compared(data, "margins") == every
    assert {c["unit"] for c in data["comparisons"]} == {"pairs", "cases"}


def test_beyond_it_each_model_is_compared_with_the_next_in_the_order(tmp_path: Path, capsys) -> None:
    steps = list(range(12))[::-1]  # the order given runs backwards from the order merged
    data = merged(tmp_path, 12, steps)
    neighbours = [(f"step{a}", f"step{b}") for a, b in zip(steps, steps[1:])]
    assert compared(data) == neighbours and compared(data, "margins") == neighbours
    assert len(data["comparisons"]) == 2 * 11  # pairs and cases: 11 comparisons, not 66
    out = capsys.readouterr().out
    assert sum(1 for line in out.splitlines() if line.startswith("step") and " vs " in line) <= 11
    assert main(["merge", str(tmp_path / "all.json")]) == 0  # read back, its comparisons are what it states


def test_without_an_order_the_next_is_the_next_merged(tmp_path: Path) -> None:
    data = merged(tmp_path, ALL_PAIRS_UP_TO + 1)
    assert compared(data) == [(f"step{n}", f"step{n + 1}") for n in range(ALL_PAIRS_UP_TO)]


def page_bytes_per_report(tmp_path: Path, count: int) -> float:
    paths = []
    for n in range(count):
        path = tmp_path / f"{count}-{n}.json"
        json_report.write(path, report("checkpoints", n))
        paths.append(str(path))
    assert main(["merge", *paths, "--html", str(tmp_path / f"{count}.html")]) == 0
    return (tmp_path / f"{count}.html").stat().st_size / count


def test_the_page_grows_with_the_reports_not_their_square(tmp_path: Path, capsys) -> None:
    """The page of 10 and of 40 checkpoints: as many bytes per report, within a quarter (every two compared, 40
    were 780 comparisons to 10's 45)."""
    small, large = page_bytes_per_report(tmp_path, 10), page_bytes_per_report(tmp_path, 40)
    assert large <= 1.25 * small, (small, large)


@pytest.mark.parametrize("count", [ALL_PAIRS_UP_TO, ALL_PAIRS_UP_TO + 3])
def test_a_merged_report_reads_back_whole(tmp_path: Path, count: int) -> None:
    merged(tmp_path, count)
    again = read_report(tmp_path / "all.json")
    assert len(again.model_ids) == count and len(again.results) == 2 * count
    html.write(tmp_path / "all.html", again)
