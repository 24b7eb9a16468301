"""`gotchas merge` given files it must not trust: JSON nested 100,000 levels deep (one error naming the limit, not a
RecursionError), a report edited to give one model a second name (refused, naming both files and both ids, unless
the two differ in how the model ran), and names with control characters (printed escaped). Reports are built by hand
and merged in-process."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from gotchas_helpers import make_case, make_run

from pytest_gotchas.cli import main
from pytest_gotchas.cli.merge import MAX_DEPTH
from pytest_gotchas.report import json_report
from pytest_gotchas.results.report import Report
from pytest_gotchas.results.schema import ChapterInfo, ModelInfo, RunInfo

CHAPTER = ChapterInfo(name="sets", label="ch sets", title="sets", path="sets.yaml", implementation_defined=False,
                      case_ids=["a", "b"], pairs={"ab": ["a", "b"]}, twins={}, sha256="c" * 64)
MODEL = ModelInfo(id="tiny", name="/m/tiny", source="/m/tiny", weights_sha256="a" * 64, dtype="bfloat16",
                  device="cpu", hardware="cpu AVX512", torch_version="2.13.0", transformers_version="5.24.0",
                  numerics="0" * 16, threads=2, bos="auto: <bos>")


def report_of(model: ModelInfo, verdicts: tuple[tuple[float, float], ...] = ((0.75, 0.125), (0.125, 0.75))) -> Report:
    results = [make_case(case_id, "sets", [make_run(*p)], model=model.id) for case_id, p in zip("ab", verdicts)]
    return Report(results, [CHAPTER], [model], RunInfo(command="pytest --gotchas", date="2026-12-01T00:00:00+00:00"))


def written(tmp_path: Path, name: str, report: Report) -> str:
    path = tmp_path / name
    json_report.write(path, report)
    return str(path)


def merged(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(["merge", *argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- depth ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("levels", [100_000, MAX_DEPTH + 1])
def test_json_nested_deeper_than_a_report_is_one_error(tmp_path, capsys, levels: int) -> None:
    """100,000 levels overflow the JSON decoder; a few more than the limit would overflow what reads it next."""
    deep = tmp_path / "deep.json"
    deep.write_text('{"format": 3, "cases": ' + "[" * levels + "]" * levels + "}", encoding="utf-8")
    code, out, err = merged([str(deep)], capsys)
    assert (code, out) == (1, "")
    assert err == (f"gotchas merge: error: {deep} is not a gotchas report: it nests more than {MAX_DEPTH} levels deep "
                   "(a report needs about 10)\n")


def test_a_real_report_is_well_within_the_depth_limit(tmp_path, capsys) -> None:
    path = written(tmp_path, "a.json", report_of(MODEL))
    from pytest_gotchas.cli.merge import _depth

    assert _depth(json.loads(Path(path).read_text())) <= MAX_DEPTH // 4
    assert merged([path], capsys)[0] == 0


# -- one model, two names -------------------------------------------------------------------------------------------


def test_one_model_under_two_names_is_refused(tmp_path, capsys) -> None:
    """The original report and a copy edited to another model id and name: the same weights, run the same way."""
    a = written(tmp_path, "a.json", report_of(MODEL))
    b = written(tmp_path, "b.json", report_of(replace(MODEL, id="other", name="/m/other"), ((0.125, 0.75),) * 2))
    code, out, err = merged([a, b, "--json", str(tmp_path / "all.json")], capsys)
    assert (code, out) == (1, "")
    assert err == (
        f"gotchas merge: error: {a} and {b} hold one model under two names: 'tiny' (/m/tiny) and 'other' (/m/other) "
        f"have the same weights (sha256 aaaaaaaaaaaa...), dtype bfloat16, device cpu and numerics 0000000000000000, "
        "so comparing them would compare the model with itself; merge reports of different models, or of one model "
        "run another way (another dtype or device)\n")
    assert not (tmp_path / "all.json").exists()


@pytest.mark.parametrize("change", [{"dtype": "float32"}, {"device": "cuda:0", "hardware": "NVIDIA H200 (sm_90)"},
                                    {"numerics": "1" * 16}])
def test_one_set_of_weights_run_another_way_is_another_model(tmp_path, capsys, change: dict[str, str]) -> None:
    a = written(tmp_path, "a.json", report_of(MODEL))
    b = written(tmp_path, "b.json", report_of(replace(MODEL, id="other", name="/m/other", **change)))
    code, out, err = merged([a, b], capsys)
    assert (code, err) == (0, "")
    assert out.startswith("merged 4 results (tiny, other) from 2 reports\n")


# -- names with control characters ----------------------------------------------------------------------------------


def test_names_from_a_report_are_printed_escaped(tmp_path, capsys) -> None:
    hostile = replace(MODEL, id="tiny\x1b]0;pwned\x07", weights_sha256="b" * 64)
    chapter = replace(CHAPTER, label="ch sets \x1b[2J\u202e")
    report = report_of(hostile)
    report = Report(report.results, [chapter], [hostile], report.run)
    code, out, err = merged([written(tmp_path, "a.json", report)], capsys)
    assert (code, err) == (0, "")
    assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
    assert out.startswith("merged 2 results (tiny\\x1b]0;pwned\\x07) from 1 reports\n")
    assert "\nch sets \\x1b[2J\\u202e\n" in out
