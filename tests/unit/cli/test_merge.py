"""`gotchas merge`: JSON reports of one model each (or shards of one model) give the report a run of every model
gives, and every merge that would mix what no single run could give is refused with one message naming both files.

Two tiny models (helpers/tinymodel.py) score the chapters of helpers/reportdata.py (its score_models); the second
reads `a`, `b` and the healed cut the other way round, so their verdicts and pairs differ. The command runs
in-process (`main([...])`). Every report it writes is checked against results/report.schema.json.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest
from helpers.reportdata import MODELS, RUN, Scored, score_models
from helpers.results import SETS_CHAPTER, TINY_MODEL, make_case, make_run, report_of

from pytest_gotchas.cli import main
from pytest_gotchas.cli import merge as merge_command
from pytest_gotchas.cli.errors import CLIError
from pytest_gotchas.cli.merge import Source, merge
from pytest_gotchas.report import html, json_report
from pytest_gotchas.report.terminal import summary_lines
from pytest_gotchas.report.wording import chapter_line, pct
from pytest_gotchas.results.baselines import (
    BaselineOutcome,
    Comparison,
    Header,
    MemberChange,
    PairChange,
)
from pytest_gotchas.results.report import (
    FORMAT,
    SCHEMA_FILE,
    Report,
    from_data,
    to_data,
)
from pytest_gotchas.results.reading import MAX_DEPTH, depth
from pytest_gotchas.results.schema import CaseResult, ChapterInfo, Invocation

RUNS = {model: {**RUN, "command": f"pytest --gotchas --gotchas-model {model} --gotchas-json {model}.json",
                "date": f"2026-11-30T1{n}:00:00+00:00"} for n, model in enumerate(MODELS)}
DATE = "2026-11-30T15:00:00+00:00"
SCHEMA = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Scored]:
    folder = tmp_path_factory.mktemp("merge")
    return folder, score_models(folder)


@pytest.fixture(scope="module")
def models(scored: tuple[Path, Scored]) -> Scored:
    return scored[1]


@pytest.fixture(scope="module")
def results(models: Scored) -> dict[str, list[CaseResult]]:
    return models.results


@pytest.fixture(scope="module")
def direct(models: Scored) -> Report:
    """The report of one run of both models."""
    return models.report()


@pytest.fixture(autouse=True)
def written(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Path]]:
    """Every JSON report the command writes, each validated against the schema as it is written."""
    paths: list[Path] = []
    write = json_report.write

    def validating(path: Path, report: Report) -> None:
        write(path, report)
        jsonschema.validate(json.loads(path.read_text(encoding="utf-8")), SCHEMA)
        paths.append(path)

    monkeypatch.setattr(merge_command, "json_report", SimpleNamespace(write=validating))
    yield paths


def plain(data: Any) -> Any:
    """As a JSON file holds it."""
    return json.loads(json.dumps(data))


def one_model(models: Scored, model: str, **values: Any) -> dict[str, Any]:
    """The JSON report of a run of `model` alone."""
    return plain(to_data(models.report([model], RUNS[model], **values)))


def run_of(file: str, model: str) -> Invocation:
    """The run of `model`'s report as a merged report lists it."""
    return Invocation(**RUNS[model], file=file)


TABLES = ("models", "chapters", "cases", "pairs", "rollups", "comparisons")


def assert_same_tables(got: dict[str, Any], want: dict[str, Any]) -> None:
    for key in TABLES:
        assert got[key] == want[key], key


def write(folder: Path, name: str, data: Any) -> Path:
    path = folder / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


# -- what a merge gives ---------------------------------------------------------------------------------------------


def test_the_two_models_disagree(results: dict[str, list[CaseResult]], direct: Report) -> None:
    """The material below is worth comparing: the models differ in case verdicts and in pairs."""
    verdicts = [{r.key: r.outcome for r in results[m]} for m in MODELS]
    assert verdicts[0] != verdicts[1]
    passed = [{p.key: p.passed for c in direct.chapters if c.model == m for p in c.pairs} for m in MODELS]
    assert passed[0] != passed[1]
    assert direct.comparisons


def test_merge_equals_the_run_of_both_models(models: Scored, direct: Report) -> None:
    merged = merge([Source(f"{m}.json", one_model(models, m)) for m in MODELS], "gotchas merge", DATE)
    assert_same_tables(plain(to_data(merged)), plain(to_data(direct)))
    assert merged.model_infos == direct.model_infos
    assert merged.comparisons == direct.comparisons
    assert [chapter_line(c) for c in merged.chapters] == [chapter_line(c) for c in direct.chapters]
    assert list(summary_lines(merged, [])) == list(summary_lines(direct, []))
    assert html.render(Report(merged.results, merged.chapter_infos, merged.model_infos, direct.run)) == \
        html.render(direct)


def test_the_command_writes_the_merged_json_and_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str], models: Scored,
                                                     direct: Report, written: list[Path]) -> None:
    monkeypatch.chdir(tmp_path)
    for model in MODELS:
        json_report.write(Path(f"{model}.json"), models.report([model], RUNS[model]))
    argv = ["merge", "tiny-a.json", "tiny-b.json", "--json", "out/all.json", "--html", "out/all.html"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    lines = captured.out.splitlines()
    assert lines[:3] == [f"merged {len(direct.results)} results (tiny-a, tiny-b) from 2 reports",
                         "wrote out/all.json", "wrote out/all.html"]
    assert lines[3:] == [text for text, _ in summary_lines(direct, [])]  # docs/ci.md: it prints the same summary
    assert written == [Path("out/all.json")]
    data = json.loads(Path("out/all.json").read_text(encoding="utf-8"))
    assert data["format"] == FORMAT
    assert_same_tables(data, plain(to_data(direct)))
    assert data["baselines"] == []
    run = data["run"]
    assert run["command"] == shlex.join(["gotchas", *argv])
    assert run["merged_from"] == [plain(dataclasses.asdict(run_of(f"{m}.json", m))) for m in MODELS]
    for fact in ("python", "pytest", "platform", "xdist_workers"):
        assert run[fact] == RUN[fact]
    page = Path("out/all.html").read_text(encoding="utf-8")
    assert page == html.render(from_data(data))
    for model in MODELS:
        assert RUNS[model]["command"] in page
        assert RUNS[model]["date"].replace("T", " ") in page


def test_without_outputs_it_prints_the_terminal_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str], models: Scored,
                                                        direct: Report, written: list[Path]) -> None:
    monkeypatch.chdir(tmp_path)
    for model in MODELS:
        write(tmp_path, f"{model}.json", one_model(models, model))
    assert main(["merge", "tiny-a.json", "tiny-b.json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"merged {len(direct.results)} results (tiny-a, tiny-b) from 2 reports"
    assert lines[1:] == [text for text, _ in summary_lines(direct, [])]
    assert any("no difference shown" in line for line in lines)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny-a.json", "tiny-b.json"]
    assert written == []


def test_shards_of_one_model_and_an_overlap_merge_into_its_report(models: Scored) -> None:
    """A shard per chapter, and a third shard that ran both again: identical duplicates are kept once."""
    own = models.results["tiny-a"]
    infos = {info.name: info for info in models.chapters}

    def shard(chapters: list[str]) -> dict[str, Any]:
        shard_results = [r for r in own if r.chapter in chapters]
        return plain(to_data(Report(shard_results, [infos[name] for name in chapters], [models.models["tiny-a"]],
                                    Invocation(**RUN))))

    shards = [shard(["demo"]), shard(["primed"]), shard(["demo", "primed"])]
    assert [len(s["cases"]) for s in shards] == [5, 2, 7] and len(own) == 7
    merged = merge([Source(f"shard-{n}.json", s) for n, s in enumerate(shards)])
    assert len(merged.results) == len(own)
    assert_same_tables(plain(to_data(merged)), plain(to_data(models.report(["tiny-a"]))))
    assert merged.comparisons == []


def test_a_merged_report_merges_again(models: Scored, direct: Report) -> None:
    once = plain(to_data(merge([Source("tiny-a.json", one_model(models, "tiny-a"))], "gotchas merge tiny-a.json",
                               DATE)))
    again = merge([Source("a-merged.json", once), Source("tiny-b.json", one_model(models, "tiny-b"))])
    assert_same_tables(plain(to_data(again)), plain(to_data(direct)))
    first, second = again.run.merged_from
    assert (first.file, first.command, first.date) == ("a-merged.json", "gotchas merge tiny-a.json", DATE)
    assert first.merged_from == [run_of("tiny-a.json", "tiny-a")]
    assert second == run_of("tiny-b.json", "tiny-b")


HEADER = Header(name="tiny-a", weights_sha256="ab" * 32, dtype="float32", softmax_dtype="bfloat16", device="cpu",
                hardware="cpu AVX2", numerics="n1", torch="2.5.0", transformers="4.46.0")
COMPARISON = Comparison(
    regressions=[PairChange("demo/good-pair", "pass", "fail", [MemberChange("right", "ok", "ok"),
                                                                MemberChange("healed", "ok", "MISS")])],
    unchanged=2)
BASELINE = BaselineOutcome(model="tiny-a", path="baselines/tiny-a.yaml", command="pytest --gotchas-update-baseline",
                           recorded=HEADER, now=HEADER, comparison=COMPARISON)


def test_each_inputs_baseline_comparison_is_kept_with_its_report(models: Scored) -> None:
    data = one_model(models, "tiny-a", baselines=[BASELINE])
    merged = merge([Source("a.json", data), Source("a-again.json", data),
                    Source("tiny-b.json", one_model(models, "tiny-b"))])
    assert merged.baselines == [dataclasses.replace(BASELINE, report="a.json")]


def test_a_baseline_already_named_by_a_merged_input_keeps_its_report(models: Scored) -> None:
    once = plain(to_data(merge([Source("a.json", one_model(models, "tiny-a", baselines=[BASELINE]))])))
    again = merge([Source("a-merged.json", once), Source("tiny-b.json", one_model(models, "tiny-b"))])
    assert again.baselines == [dataclasses.replace(BASELINE, report="a.json")]


def test_the_summary_shows_each_inputs_baseline_under_its_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 models: Scored) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "a.json", one_model(models, "tiny-a", baselines=[BASELINE]))
    write(tmp_path, "b.json", one_model(models, "tiny-b"))
    assert main(["merge", "a.json", "b.json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = lines.index("baselines as compared by the run of a.json:")
    assert lines[at - 1] == ""
    assert lines[at + 1:at + 4] == [
        ("  [tiny-a] baseline baselines/tiny-a.yaml: compared with model 'tiny-a' (weights sha256 abababababab..., "
         "float32, softmax bfloat16, cpu)"),
        "  [tiny-a] REGRESSION demo/good-pair: pass -> FAIL (right ok, healed ok -> MISS)",
        ("  [tiny-a] pairs: 1 regressed, 0 improved, 2 unchanged, 0 new, 0 gone, 0 not checked; cases: 0 new, 0 gone, "
         "0 verdicts changed"),
    ]


def test_collection_records_each_chapter_files_sha256(scored: tuple[Path, Scored]) -> None:
    folder, models = scored
    assert [info.name for info in models.chapters] == ["demo", "primed"]
    for info in models.chapters:
        assert info.sha256 == hashlib.sha256((folder / info.path).read_bytes()).hexdigest()
    data = one_model(models, "tiny-a")
    assert [len(chapter["sha256"]) for chapter in data["chapters"]] == [64, 64]
    assert {case["chapter"] for case in data["cases"]} == {"demo", "primed"}


def test_reports_written_before_chapter_hashes_still_merge(models: Scored, direct: Report) -> None:
    older = [one_model(models, m) for m in MODELS]
    for data in older:
        for chapter in data["chapters"]:
            del chapter["sha256"]
    merged = merge([Source(f"{m}.json", d) for m, d in zip(MODELS, older)])
    assert [info.sha256 for info in merged.infos.values()] == [None, None]
    assert merged.comparisons == direct.comparisons


def test_chapters_that_python_tests_record_into_are_not_checked_by_hash() -> None:
    """gotchas.case(...) writes each test's case into a chapter file of its own: its hash names no version."""
    def recorded(case_id: str, sha: str) -> dict[str, Any]:
        info = ChapterInfo("python", "python", "python", "tests/test_probe.py", False, [case_id], {}, {}, sha)
        return plain(to_data(Report([make_case(case_id, "python", [make_run(0.6, 0.3)], model=TINY_MODEL.id)], [info],
                                    [TINY_MODEL])))

    merged = merge([Source("a.json", recorded("one", "a" * 64)), Source("b.json", recorded("two", "b" * 64))])
    assert [r.id for r in merged.results] == ["one", "two"]
    assert merged.infos["python"].case_ids == ["one", "two"]


def test_every_report_the_command_writes_validates_against_the_schema(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], models: Scored,
        written: list[Path]) -> None:
    """Two models with a baseline, a merged report merged again, and chapters that Python tests record into (the
    `written` fixture validates each report as the command writes it; here each is also read back as JSON)."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "a.json", one_model(models, "tiny-a", baselines=[BASELINE]))
    write(tmp_path, "b.json", one_model(models, "tiny-b"))
    info = ChapterInfo("python", "python", "python", "tests/test_probe.py", False, ["one"], {"p": ["one"]}, {})
    write(tmp_path, "py.json", plain(to_data(Report([make_case("one", "python", [make_run(0.6, 0.3, "F")])],
                                                     [info]))))
    assert main(["merge", "a.json", "--json", "a-merged.json"]) == 0
    assert main(["merge", "a-merged.json", "b.json", "--json", "ab.json"]) == 0
    assert main(["merge", "py.json", "py.json", "--json", "py-merged.json"]) == 0
    capsys.readouterr()
    assert written == [Path("a-merged.json"), Path("ab.json"), Path("py-merged.json")]
    for path in written:
        data = json.loads(path.read_text(encoding="utf-8"))
        jsonschema.validate(data, SCHEMA)
        assert data["format"] == FORMAT and data["cases"], path
    assert json.loads(Path("ab.json").read_text(encoding="utf-8"))["baselines"][0]["report"] == "a.json"


def test_the_schema_refuses_what_is_no_report() -> None:
    """The validation above is worth something: the schema is not one that takes anything."""
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"format": FORMAT, "cases": []}, SCHEMA)


# -- refusals -------------------------------------------------------------------------------------------------------


def refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
            *reports: Any) -> str:
    """Merge `reports` (data, text or None: no such file) written as a.json, b.json ...: the message alone, exit
    status 1, and nothing written."""
    monkeypatch.chdir(tmp_path)
    names = []
    for name, data in zip("abcdef", reports):
        names.append(f"{name}.json")
        if data is not None:
            write(tmp_path, f"{name}.json", data)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["merge", *names, "--json", "out.json", "--html", "out.html"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("gotchas merge: error: ") and captured.err.count("\n") == 1, captured.err
    assert "Traceback" not in captured.err
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    return captured.err[len("gotchas merge: error: "):-1]


def find_case(data: dict[str, Any], key: str) -> dict[str, Any]:
    return next(c for c in data["cases"] if f"{c['chapter']}/{c['id']}" == key)


def test_different_results_for_one_model_and_case(tmp_path, monkeypatch, capsys, models) -> None:
    a = one_model(models, "tiny-a")
    b = copy.deepcopy(a)
    run = find_case(b, "demo/right")["runs"][0]
    reading = run["readings"][run["main"]]
    old_correct, old_wrong = reading["p_correct"], reading["p_wrong"]
    reading["p_correct"] = 0.5
    b = plain(to_data(from_data(b)))  # the run's copies of its reading's numbers follow, as a run would write them
    assert refused(tmp_path, monkeypatch, capsys, a, b) == (
        f"a.json and b.json hold different results for model 'tiny-a', case demo/right: P(correct) "
        f"{pct(old_correct)} vs 50.00%, P(wrong) {pct(old_wrong)} vs {pct(old_wrong)}; only identical duplicates "
        f"(an overlapping shard) can be merged")


# -- a report's derived fields are computed again from its numbers, never taken as written ---------------------------

INCONSISTENT = ("A report's verdicts, pair results and rollups follow from its probabilities, so this one was edited or "
                "damaged and is not merged: write it again with the run that made it")


def test_a_hand_edited_verdict_is_named_as_inconsistent(tmp_path, monkeypatch, capsys, models) -> None:
    """The case's verdict edited alone: its run still says ok, so the case verdict they give is ok."""
    a = one_model(models, "tiny-a")
    b = copy.deepcopy(a)
    find_case(b, "demo/right")["verdict"] = "MISS"
    at = b["cases"].index(find_case(b, "demo/right"))
    assert refused(tmp_path, monkeypatch, capsys, one_model(models, "tiny-b"), a, b) == (
        f"c.json is inconsistent: 1 derived field is not what its numbers give (case demo/right of model 'tiny-a', "
        f"cases[{at}].verdict: the file says MISS, its numbers give ok). {INCONSISTENT}")


def test_a_hand_edited_reading_verdict_and_its_case_are_named(tmp_path, monkeypatch, capsys, models) -> None:
    """MISS beside the probabilities that give ok (0.73 and 0.27), written everywhere the verdict shows: the reading,
    the run's own copy, the case, its verdict by reading. The edit agrees with itself; the numbers do not agree with
    it, and the reading's verdict is the one that they decide."""
    b = one_model(models, "tiny-a")
    case = find_case(b, "demo/right")
    run = case["runs"][0]
    reading = run["readings"][run["main"]]
    assert reading["verdict"] == "ok"
    reading["verdict"] = run["verdict"] = case["verdict"] = case["reading_verdicts"][run["main"]] = "MISS"
    at = b["cases"].index(case)
    assert refused(tmp_path, monkeypatch, capsys, b) == (
        f"a.json is inconsistent: 1 derived field is not what its numbers give (case demo/right of model 'tiny-a', "
        f"cases[{at}].runs[0].readings.{run['main']}.verdict: the file says MISS, P(correct) {reading['p_correct']!r}, "
        f"P(wrong) {reading['p_wrong']!r} give ok). {INCONSISTENT}")


def test_swapped_probabilities_under_kept_verdicts_are_named(tmp_path, monkeypatch, capsys, models) -> None:
    b = one_model(models, "tiny-a")
    case = find_case(b, "demo/right")
    run = case["runs"][0]
    reading = run["readings"][run["main"]]
    reading["p_correct"], reading["p_wrong"] = reading["p_wrong"], reading["p_correct"]
    at = b["cases"].index(case)
    assert refused(tmp_path, monkeypatch, capsys, b) == (
        f"a.json is inconsistent: 1 derived field is not what its numbers give (case demo/right of model 'tiny-a', "
        f"cases[{at}].runs[0].readings.{run['main']}.verdict: the file says ok, P(correct) {reading['p_correct']!r}, "
        f"P(wrong) {reading['p_wrong']!r} give MISS). {INCONSISTENT}")


def test_a_run_level_copy_that_disagrees_with_its_reading_is_named(tmp_path, monkeypatch, capsys, models) -> None:
    """The run's p_correct is a copy of its main reading's, for readers: an edit there is not read, so it is named."""
    b = one_model(models, "tiny-a")
    case = find_case(b, "demo/right")
    stored = case["runs"][0]["p_correct"]
    case["runs"][0]["p_correct"] = 0.5
    at = b["cases"].index(case)
    assert refused(tmp_path, monkeypatch, capsys, b) == (
        f"a.json is inconsistent: 1 derived field is not what its numbers give (case demo/right of model 'tiny-a', "
        f"cases[{at}].runs[0].p_correct: the file says 0.5, its numbers give {stored!r}). {INCONSISTENT}")


def test_an_edited_pair_result_is_named(tmp_path, monkeypatch, capsys, models) -> None:
    b = one_model(models, "tiny-a")
    n, pair = next((n, p) for n, p in enumerate(b["pairs"]) if p["id"] == "bad-pair")
    assert pair["passed"] is False
    pair["passed"] = True
    assert refused(tmp_path, monkeypatch, capsys, b) == (
        f"a.json is inconsistent: 1 derived field is not what its numbers give (pair demo/bad-pair of model "
        f"'tiny-a', pairs[{n}].passed: the file says true, its numbers give false). {INCONSISTENT}")


def test_a_number_out_of_float_range_is_named_by_its_field(tmp_path, monkeypatch, capsys, models) -> None:
    """JSON's 1e400 reads as infinity: the merged report could not be written with it."""
    b = one_model(models, "tiny-b")
    case = find_case(b, "demo/right")
    case["runs"][0]["readings"]["token"]["p_wrong"] = 0.123456789
    text = json.dumps(b).replace("0.123456789", "1e400")
    assert refused(tmp_path, monkeypatch, capsys, one_model(models, "tiny-a"), text) == (
        f"b.json is not a gotchas report: cases[{b['cases'].index(case)}].runs[0].readings.token.p_wrong is out of "
        "float range (a JSON number such as 1e400 reads as infinity); a report holds finite numbers only")


def test_two_versions_of_a_chapter_file(tmp_path, monkeypatch, capsys, models) -> None:
    a, b = one_model(models, "tiny-a"), one_model(models, "tiny-b")
    [demo] = [chapter for chapter in b["chapters"] if chapter["name"] == "demo"]
    sha = demo["sha256"]
    demo["sha256"] = "0" * 64
    assert refused(tmp_path, monkeypatch, capsys, a, b) == (
        f"a.json and b.json ran different versions of chapter 'demo' (demo.yaml: sha256 {sha[:12]}... vs "
        f"000000000000...): their results are not of the same cases; run both on the same chapter files")


def test_one_model_described_two_ways(tmp_path, monkeypatch, capsys, models) -> None:
    a = one_model(models, "tiny-a")
    b = copy.deepcopy(a)
    hardware = a["models"][0]["hardware"]
    b["models"][0]["hardware"] = "cpu AMX"
    b["models"][0]["source"] = "/elsewhere/tiny-a"  # where each machine loaded it from may differ
    assert refused(tmp_path, monkeypatch, capsys, a, b) == (
        f"a.json and b.json describe model 'tiny-a' differently (hardware {hardware!r} vs 'cpu AMX'): a merged report "
        f"states one description per model, so its results must come from one set of weights, dtype, hardware and "
        f"library versions")


def test_a_report_of_a_format_that_cannot_be_migrated_is_refused_by_name(tmp_path, monkeypatch, capsys,
                                                                         models) -> None:
    older = {**one_model(models, "tiny-b"), "format": 2}
    assert refused(tmp_path, monkeypatch, capsys, one_model(models, "tiny-a"), older) == (
        f"b.json is JSON format 2, which cannot be migrated to format {FORMAT}: its baseline sections hold sentences, "
        "not the facts a report states now (whether the file was missing, this run's header, what an update wrote); "
        f"run it again with this version to write a report of format {FORMAT}")


def test_a_report_of_a_newer_format_is_refused_by_name(tmp_path, monkeypatch, capsys, models) -> None:
    newer = {**one_model(models, "tiny-a"), "format": FORMAT + 1}
    message = (f"a.json is JSON format {FORMAT + 1}, newer than format {FORMAT} that this pytest-gotchas reads (it "
               f"migrates format 3, format 4, format 5, format 6, format 7): read it with a version that reads "
               f"format {FORMAT + 1}")
    assert refused(tmp_path, monkeypatch, capsys, newer, newer) == message
    with pytest.raises(CLIError) as refusal:  # a document built by hand, not read from a file, is checked too
        merge([Source("a.json", newer)])
    assert str(refusal.value) == message


@pytest.mark.parametrize(("content", "message"), [
    ("<testsuites/>", "b.json is not a gotchas report: it is not JSON (Expecting value: line 1 column 1 (char 0))"),
    ([1, 2], ("b.json is not a gotchas report: a report written by --gotchas-json has a `format` number and a list "
              "of `cases`")),
    ({"format": "3", "cases": []}, ("b.json is not a gotchas report: a report written by --gotchas-json has a "
                                    "`format` number and a list of `cases`")),
    (None, "cannot read b.json: No such file or directory"),
])
def test_a_file_that_is_not_a_gotchas_report(tmp_path, monkeypatch, capsys, models, content, message) -> None:
    assert refused(tmp_path, monkeypatch, capsys, one_model(models, "tiny-a"), content) == message


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_report_with_a_number_json_has_not(tmp_path, monkeypatch, capsys, models, constant) -> None:
    """Python's json reads NaN; the merged report could not be written with it (JSON has no such number)."""
    b = one_model(models, "tiny-b")
    find_case(b, "demo/right")["runs"][0]["readings"]["token"]["p_wrong"] = float(constant)
    assert refused(tmp_path, monkeypatch, capsys, one_model(models, "tiny-a"), json.dumps(b)) == (
        f"b.json is not a gotchas report: it is not JSON ({constant} is not a JSON number)")


def test_a_file_that_is_not_text(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.json").write_bytes(b"\x89PNG\r\n\x1a\n\xff")
    assert main(["merge", "a.json"]) == 1
    assert capsys.readouterr().err == "gotchas merge: error: a.json is not a gotchas report: it is not UTF-8 text\n"


def test_report_data_that_does_not_read_back(tmp_path, monkeypatch, capsys) -> None:
    assert refused(tmp_path, monkeypatch, capsys, {"format": FORMAT, "cases": [{"id": "x"}]}) == (
        f"a.json is not a gotchas report of format {FORMAT}: at run: Field required")


def test_a_value_of_the_wrong_type_is_named_by_its_path(tmp_path, monkeypatch, capsys, models) -> None:
    b = one_model(models, "tiny-b")
    find_case(b, "demo/right")["runs"][0]["readings"]["token"]["p_correct"] = "high"
    at = next(n for n, c in enumerate(b["cases"]) if f"{c['chapter']}/{c['id']}" == "demo/right")
    assert refused(tmp_path, monkeypatch, capsys, one_model(models, "tiny-a"), b) == (
        f"b.json is not a gotchas report of format {FORMAT}: at cases.{at}.runs.0.readings.token.p_correct: Input "
        f"should be a valid number, unable to parse string as a number")


def test_a_result_of_a_chapter_the_report_does_not_describe(tmp_path, monkeypatch, capsys, models) -> None:
    data = one_model(models, "tiny-a")
    data["chapters"] = [chapter for chapter in data["chapters"] if chapter["name"] != "primed"]
    assert refused(tmp_path, monkeypatch, capsys, data) == (
        f"a.json is not a gotchas report of format {FORMAT}: its data does not add up (KeyError: 'primed')")


def test_help_names_the_refusals(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["merge", "--help"])
    assert exit_info.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "gotchas merge gemma.json smollm.json --json all.json --html all.html" in shown
    assert "identical duplicates are kept once" in shown
    assert f"this version reads format {FORMAT}" in shown


# -- files it must not trust: deep nesting, one model under two names, control characters ----------------------------


def input_file(tmp_path: Path, name: str, report: Report) -> str:
    path = tmp_path / name
    json_report.write(path, report)
    return str(path)


def merged(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(["merge", *argv])
    out, err = capsys.readouterr()
    return code, out, err


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
    path = input_file(tmp_path, "a.json", report_of(TINY_MODEL))
    assert depth(json.loads(Path(path).read_text())) <= MAX_DEPTH // 4
    assert merged([path], capsys)[0] == 0


def test_one_model_under_two_names_is_refused(tmp_path, capsys) -> None:
    """The original report and a copy edited to another model id and name: the same weights, run the same way."""
    a = input_file(tmp_path, "a.json", report_of(TINY_MODEL))
    b = input_file(tmp_path, "b.json", report_of(dataclasses.replace(TINY_MODEL, id="other", name="/m/other"),
                                                 ((0.125, 0.75),) * 2))
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
    a = input_file(tmp_path, "a.json", report_of(TINY_MODEL))
    b = input_file(tmp_path, "b.json",
                   report_of(dataclasses.replace(TINY_MODEL, id="other", name="/m/other", **change)))
    code, out, err = merged([a, b], capsys)
    assert (code, err) == (0, "")
    assert out.startswith("merged 4 results (tiny, other) from 2 reports\n")


def test_names_from_a_report_are_printed_escaped(tmp_path, capsys) -> None:
    hostile = dataclasses.replace(TINY_MODEL, id="tiny\x1b]0;pwned\x07", weights_sha256="b" * 64)
    chapter = dataclasses.replace(SETS_CHAPTER, label="ch sets \x1b[2J\u202e")
    report = report_of(hostile)
    report = Report(report.results, [chapter], [hostile], report.run)
    code, out, err = merged([input_file(tmp_path, "a.json", report)], capsys)
    assert (code, err) == (0, "")
    assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
    assert out.startswith("merged 2 results (tiny\\x1b]0;pwned\\x07) from 1 reports\n")
    assert "\nch sets \\x1b[2J\\u202e\n" in out


# -- a partial input (issue 51, item 3): the merge is marked, not refused ---------------------------------------------


def test_a_partial_input_marks_the_merge_partial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str], models: Scored) -> None:
    monkeypatch.chdir(tmp_path)
    stopped = {**RUNS["tiny-a"], "exit_status": 2, "interrupted": True, "stopped_by": "KeyboardInterrupt",
               "not_run": ["cases/2-sets.yaml::b"]}
    json_report.write(Path("tiny-a.json"), models.report(["tiny-a"], stopped))
    json_report.write(Path("tiny-b.json"), models.report(["tiny-b"], RUNS["tiny-b"]))
    assert main(["merge", "tiny-a.json", "tiny-b.json", "--json", "all.json", "--html", "all.html"]) == 0
    said = ("partial merge: tiny-a.json stopped (KeyboardInterrupt) before 1 selected item ran, exit status 2; its "
            "counts, rollups and claims are of the items that ran only")
    assert capsys.readouterr().out.splitlines()[3] == said  # the summary's first line
    run = json.loads(Path("all.json").read_text(encoding="utf-8"))["run"]
    assert (run["interrupted"], run["not_run"], run["exit_status"]) == (True, ["cases/2-sets.yaml::b"], None)
    assert [source["interrupted"] for source in run["merged_from"]] == [True, False]
    assert f"<strong>{said}</strong>" in Path("all.html").read_text(encoding="utf-8")


def test_whole_inputs_make_a_whole_merge(models: Scored) -> None:
    merged = merge([Source(f"{m}.json", one_model(models, m)) for m in MODELS], "gotchas merge", DATE)
    assert (merged.run.interrupted, merged.run.not_run) == (False, [])
    assert not any(text.startswith("partial") for text, _ in summary_lines(merged, []))
