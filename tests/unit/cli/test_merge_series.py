"""`gotchas merge` of many models or checkpoints (cli/merge_series.py): one model's report renamed (one model in two
dtypes), the models placed along an order given on the command line (the table follows it, the JSON records it),
the level of the merged family, and the refusals, each with its exact message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.reportdata import MODELS, Scored, score_models

from pytest_gotchas.cli import main
from pytest_gotchas.report import json_report
from pytest_gotchas.results.report import from_data


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Scored:
    return score_models(tmp_path_factory.mktemp("series"))


@pytest.fixture()
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, models: Scored) -> list[str]:
    """Each tiny model's report, and tiny-a's again as if run again another way (renamed on merging)."""
    monkeypatch.chdir(tmp_path)
    for model in MODELS:
        json_report.write(Path(f"{model}.json"), models.report([model]))
    data = json.loads(Path("tiny-a.json").read_text(encoding="utf-8"))
    data["models"][0]["dtype"] = "float32"
    Path("tiny-a-f32.json").write_text(json.dumps(data), encoding="utf-8")
    return ["tiny-a.json", "tiny-b.json", "tiny-a-f32.json"]


def test_renamed_and_ordered_models_merge_with_the_order_recorded(files: list[str], capsys) -> None:
    argv = ["merge", *files, "--rename", "tiny-a-f32.json=tiny-a-f32", "--order", "tiny-b=1", "--order",
            "tiny-a-f32=2", "--order", "tiny-a=3", "--level", "0.1", "--json", "all.json"]
    assert main(argv) == 0
    report = from_data(json.loads(Path("all.json").read_text(encoding="utf-8")))
    assert report.model_ids == ["tiny-a", "tiny-b", "tiny-a-f32"]
    assert [(o.model, o.label) for o in report.run.order] == [("tiny-b", "1"), ("tiny-a-f32", "2"), ("tiny-a", "3")]
    assert report.run.level == 0.1 and all(c.level == 0.1 for c in report.comparisons)
    assert "--rename tiny-a-f32.json=tiny-a-f32 --order tiny-b=1" in report.run.command
    assert main(["merge", "all.json"]) == 0
    out = capsys.readouterr().out
    assert "pairs passed per chapter and model, with 90% Wilson intervals" in out
    head = next(line for line in out.splitlines() if line.startswith("  chapter  "))
    assert head.split() == ["chapter", "tiny-b", "(1)", "tiny-a-f32", "(2)", "tiny-a", "(3)"]


def test_without_a_new_name_one_model_in_two_dtypes_is_refused(files: list[str], capsys) -> None:
    assert main(["merge", *files]) == 1
    assert "describe model 'tiny-a' differently (dtype 'bfloat16' vs 'float32')" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["--rename", "nope.json=x"], "--rename names 'nope.json', which is not one of the reports to merge "
                                  "(tiny-a.json, tiny-b.json, tiny-a-f32.json)"),
    (["--rename", "tiny-a.json"], "--rename expects REPORT.json=ID, got 'tiny-a.json'"),
    (["--rename", "tiny-a-f32.json=tiny-a-f32", "--order", "tiny-c=1"],
     "--order names model 'tiny-c', which no report to merge holds (models: tiny-a, tiny-b, tiny-a-f32)"),
    (["--rename", "tiny-a-f32.json=tiny-a-f32", "--order", "tiny-b=1", "--order", "tiny-b=2"],
     "--order places model 'tiny-b' twice: give each model one label"),
])
def test_bad_series_options(files: list[str], capsys, argv: list[str], message: str) -> None:
    assert main(["merge", *files, *argv]) == 1
    assert message in capsys.readouterr().err


def test_a_level_outside_zero_and_one(files: list[str], capsys) -> None:
    with pytest.raises(SystemExit):
        main(["merge", *files, "--level", "1.5"])
    assert "must be more than 0 and less than 1, got '1.5'" in capsys.readouterr().err


def test_a_level_too_small_for_its_intervals(files: list[str], capsys) -> None:
    """Issue 50, item 6: 1e-320 passed, and the merge died in the first interval."""
    with pytest.raises(SystemExit):
        main(["merge", *files, "--level", "1e-320"])
    assert ("argument --level: must be at least 1e-15, the smallest level whose intervals can be computed in double "
            "precision, got '1e-320'") in capsys.readouterr().err


def test_a_merged_report_of_several_models_cannot_be_renamed(files: list[str], capsys) -> None:
    assert main(["merge", "tiny-a.json", "tiny-b.json", "--json", "ab.json"]) == 0
    assert main(["merge", "ab.json", "--rename", "ab.json=x"]) == 1
    assert ("--rename ab.json=x: ab.json holds 2 models; only a report of one model can be renamed"
            in capsys.readouterr().err)
