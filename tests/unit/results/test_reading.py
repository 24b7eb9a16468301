"""The one reader of JSON reports (results/reading.py, results/formats.py): real reports of older formats migrate
with every number kept or are refused, saying which format they are and why; a newer format is refused by name.

The files in older/ are real reports, written by the plugin of an older commit (`git archive <commit>`, the tiny
model and chapter of tests/plugin/test_verdicts.py, a run that records its baseline and one that compares with it and
writes --gotchas-json); only the paths of the machine that wrote them are replaced. format3-32aa931: the first
commit of format 3; format3-ffbe89c: its last, the parent of the commit that numbered the same schema 4;
format2-09e1624: the last commit of format 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pydantic
import pytest

import pytest_gotchas
from pytest_gotchas.cli import main
from pytest_gotchas.results.formats import FORMAT, MIGRATIONS, UNMIGRATABLE
from pytest_gotchas.results.reading import UnreadableReport, load_document, read_report, report_of
from pytest_gotchas.results.report import Report, from_data, inconsistencies, to_data
from pytest_gotchas.results.schema import CaseResult

OLDER = Path(__file__).with_name("older")
FORMAT_3 = [OLDER / "format3-32aa931.json", OLDER / "format3-ffbe89c.json"]
DATA_SECTIONS = ("run", "models", "chapters", "cases", "baselines")


def stated(old: Any, new: Any, where: str = "") -> list[str]:
    """Where `new` does not hold what `old` states: every key of every object of `old`, with its value."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [w for key, value in old.items()
                for w in (stated(value, new[key], f"{where}.{key}") if key in new else [f"{where}.{key} missing"])]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [w for n, (a, b) in enumerate(zip(old, new)) for w in stated(a, b, f"{where}[{n}]")]
    return [] if old == new else [f"{where}: {old!r} vs {new!r}"]


@pytest.mark.parametrize("path", FORMAT_3, ids=lambda p: p.stem)
def test_a_format_3_report_migrates_with_every_number_it_states(path: Path) -> None:
    old = json.loads(path.read_text(encoding="utf-8"))
    assert old["format"] == 3
    report = read_report(path)
    written = to_data(report)
    assert written["format"] == FORMAT
    for section in DATA_SECTIONS:
        assert stated(old[section], written[section], section) == []
    assert [(r.id, r.verdict) for r in report.results] == [(c["id"], c["verdict"]) for c in old["cases"]]
    assert [(c.passed, c.counted) for c in report.chapters] == [(1, 2)]
    document = load_document(path)
    assert document.format == 3 and inconsistencies(document.current(), report_of(document)) == []


def test_the_first_format_3_computed_sections_by_older_rules() -> None:
    """Why the migration drops the computed sections: the first format 3 computed its rollups without intervals, and
    a reader that compared them with its own would call the file edited."""
    document = load_document(FORMAT_3[0])
    report = report_of(document)
    assert "pairs_interval" not in document.data["rollups"][0]
    assert [i.field for i in inconsistencies(document.data, report)][:2] == ["pairs[0].patching",
                                                                             "rollups[0].pairs_interval"]


def test_merge_reads_an_older_report_and_writes_the_current_format(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["merge", str(FORMAT_3[0]), "--json", "all.json"]) == 0  # the JSON Schema checks it (conftest)
    data = json.loads((tmp_path / "all.json").read_text(encoding="utf-8"))
    assert data["format"] == FORMAT and len(data["cases"]) == 5
    assert "merged 5 results (model) from 1 reports" in capsys.readouterr().out


def test_a_format_6_report_migrates_as_it_is_and_records_no_ending(tmp_path: Path) -> None:
    """Format 7 added how the run ended; a format 6 report did not record it: not interrupted, nothing not run, no
    exit status (a partial run of format 6 cannot be told from a whole one: docs/report.md)."""
    seven = to_data(read_report(FORMAT_3[1]))
    six = {**seven, "format": 6, "run": {key: value for key, value in seven["run"].items()
                                         if key not in ("exit_status", "interrupted", "stopped_by", "not_run")}}
    path = tmp_path / "six.json"
    path.write_text(json.dumps(six), encoding="utf-8")
    report = read_report(path)
    assert (report.run.exit_status, report.run.interrupted, report.run.stopped_by, report.run.not_run) == (
        None, False, None, [])
    assert to_data(report) == seven


def test_format_2_cannot_be_migrated_and_says_why() -> None:
    path = OLDER / "format2-09e1624.json"
    assert json.loads(path.read_text(encoding="utf-8"))["baselines"][0]["lines"]  # sentences, not facts
    with pytest.raises(UnreadableReport) as refused:
        read_report(path)
    assert str(refused.value) == (
        f"{path} is JSON format 2, which cannot be migrated to format {FORMAT}: its baseline sections hold sentences, "
        "not the facts a report states now (whether the file was missing, this run's header, what an update wrote); "
        f"run it again with this version to write a report of format {FORMAT}")


def test_format_1_cannot_be_migrated_and_says_why(tmp_path: Path) -> None:
    """Format 1's top level as its writer (report/json_report.py of 5a452dc) made it, with no case."""
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"format": 1, "run": {}, "model": None, "cases": [], "pairs": [], "chapters": []}))
    with pytest.raises(UnreadableReport) as refused:
        read_report(path)
    assert str(refused.value) == (
        f"{path} is JSON format 1, which cannot be migrated to format {FORMAT}: its chapters state their pair and "
        "twin counts but not which cases make them, its model has no id and does not record the hardware its numbers "
        "came from, and its runs hold one reading, not readings by name; run it again with this version to write a "
        f"report of format {FORMAT}")


def test_every_older_format_is_migrated_or_refused_for_a_reason_said() -> None:
    """A bump of FORMAT must say what becomes of the format before it."""
    assert sorted([*MIGRATIONS, *UNMIGRATABLE]) == list(range(1, FORMAT))


def test_a_format_no_version_wrote_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "zero.json"
    path.write_text(json.dumps({"format": 0, "cases": []}))
    with pytest.raises(UnreadableReport) as refused:
        read_report(path)
    assert str(refused.value) == (
        f"{path} is JSON format 0, which cannot be migrated to format {FORMAT}: no version of pytest-gotchas wrote "
        f"it; run it again with this version to write a report of format {FORMAT}")


def test_a_newer_format_is_refused_naming_the_file_and_both_formats(tmp_path: Path) -> None:
    path = tmp_path / "new.json"
    data = {**json.loads(FORMAT_3[1].read_text(encoding="utf-8")), "format": FORMAT + 1}
    path.write_text(json.dumps(data))
    with pytest.raises(UnreadableReport) as refused:
        read_report(path)
    assert str(refused.value) == (
        f"{path} is JSON format {FORMAT + 1}, newer than format {FORMAT} that this pytest-gotchas reads (it "
        f"migrates format 3, format 4, format 5, format 6, format 7): read it with a version that reads format {FORMAT + 1}")


def test_values_read_without_a_file_are_held_to_the_format_too() -> None:
    """from_data once took any format number; the migration is part of the document's validation."""
    data = {**json.loads(FORMAT_3[1].read_text(encoding="utf-8")), "format": FORMAT + 1}
    with pytest.raises(pydantic.ValidationError, match=f"the report is JSON format {FORMAT + 1}, newer than"):
        from_data(data)
    assert len(from_data({**data, "format": 3}).results) == 5


def test_the_package_is_the_public_face() -> None:
    assert pytest_gotchas.read_report is read_report
    assert pytest_gotchas.Report is Report and pytest_gotchas.CaseResult is CaseResult
    assert pytest_gotchas.UnreadableReport is UnreadableReport
    with pytest.raises(AttributeError):
        pytest_gotchas.Nothing  # noqa: B018
