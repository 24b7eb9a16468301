"""Several models in one run, the model as a session fixture, users' Python tests beside the chapters, and each
model's own special-token convention: through pytester, on tiny models whose verdicts the tests choose."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.chapters import PAIR_CHAPTER
from helpers.results import comparable_report, read_report
from helpers.tinymodel import build_tiny_model

CHAPTER = PAIR_CHAPTER
# "left" gets both right; "right" gets `two` wrong: the pair passes for one model only.
LEFT = {"a": {"7": 2.0, "8": 1.0}, "b": {"7": 2.0, "8": 1.0}}
RIGHT = {"a": {"7": 2.0, "8": 1.0}, "b": {"7": 1.0, "8": 2.0}}


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("models")
    return build_tiny_model(root / "left", LEFT), build_tiny_model(root / "right", RIGHT)


@pytest.fixture
def run(pytester: pytest.Pytester, models: tuple[Path, Path]):
    (pytester.path / "demo.yaml").write_text(CHAPTER)

    def go(*args: str, subprocess: bool = True) -> pytest.RunResult:
        runner = pytester.runpytest_subprocess if subprocess else pytester.runpytest
        return runner("--gotchas", "--gotchas-model", str(models[0]), "--gotchas-model", str(models[1]),
                      "--gotchas-cache-dir", str(pytester.path / "cache"), "-o", f"cache_dir={pytester.path / 'pc'}",
                      "--rootdir", str(pytester.path), "-p", "no:randomly", *args)

    return go


def test_each_case_is_one_item_per_model(run) -> None:
    result = run("--collect-only", "-q")
    result.stdout.fnmatch_lines(["*demo.yaml::one?left?", "*demo.yaml::two?left?", "*demo.yaml::one?right?",
                                 "*demo.yaml::two?right?"])


def test_k_selects_a_model(run) -> None:
    result = run("-k", "right", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*demo.yaml::one?right?", "*demo.yaml::two?right?", "*2/4 tests collected*"])


def test_pytest_sets_each_model_up_once_and_in_sequence(run) -> None:
    result = run("--setup-show")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    steps = [line.strip() for line in result.outlines if re.match(r"\s*(SETUP|TEARDOWN)\s+S gotchas_model", line)]
    assert steps == ["SETUP    S gotchas_model['left']", "TEARDOWN S gotchas_model['left']",
                     "SETUP    S gotchas_model['right']", "TEARDOWN S gotchas_model['right']"]


def test_a_table_per_chapter_with_a_column_per_model_and_the_comparison(run) -> None:
    result = run()
    assert result.parseoutcomes() == {"ok": 3, "MISS": 1}
    result.stdout.fnmatch_lines([
        "  case  left       right",
        "  one  ok         ok",
        "  two  ok         MISS",
        "  pair both: left pass, right FAIL",
        "  [left] two models: 1/1 pairs",
        "  [right] two models: 0/1 pairs",
    ])
    result.stdout.fnmatch_lines(["[[]left[]] two models: 1/1 pairs [[]20.7%, 100.0%[]]; 2/2 cases ok [[]34.2%, 100.0%[]]",
                                 "2 tests in this report, one family, Holm-corrected: *",
                                 "  demo: pairs: left only 1, right only 0, both 0, neither 0; p = 1, Holm-adjusted 1: "
                                 "no difference shown",
                                 "  demo: cases: left only 1, right only 0, both 1, neither 0; p = 1, Holm-adjusted 1: "
                                 "no difference shown",
                                 "  demo: log ratio left - right: * over 2 cases (t interval): too few cases for a "
                                 "direction (6 needed)",
                                 "  demo: 1 pair: fewer than the 6 discordant pairs*"])


def test_the_level_is_recorded_and_sets_the_intervals(run, pytester: pytest.Pytester) -> None:
    result = run("--gotchas-level", "0.2", "--gotchas-json", "out.json")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    data = read_report(pytester.path / "out.json")
    assert data["run"]["level"] == 0.2
    assert {c["level"] for c in data["comparisons"]} == {0.2}
    assert {r["pairs_interval"]["confidence"] for r in data["rollups"]} == {0.8}


def test_ground_truth_runs_once_whatever_the_number_of_models(run, pytester: pytest.Pytester) -> None:
    run("--gotchas-json", "out.json")
    data = read_report(pytester.path / "out.json")
    assert data["run"]["timings"]["transcript_cache"] == {"hits": 0, "misses": 2}  # two prompts, two models
    assert [m["id"] for m in data["models"]] == ["left", "right"]
    assert {(c["model"], c["id"]) for c in data["cases"]} == {(m, c) for m in ("left", "right") for c in ("one", "two")}
    assert {(p["model"], p["passed"]) for p in data["pairs"]} == {("left", True), ("right", False)}
    assert [(c["model"], c["chapter"], c["pairs_passed"], c["pairs_counted"]) for c in data["rollups"]] == [
        ("left", "demo", 1, 1), ("right", "demo", 0, 1)]
    assert [(c["unit"], c["a"], c["b"], c["a_only"], c["b_only"]) for c in data["comparisons"]] == [
        ("pairs", "left", "right", 1, 0), ("cases", "left", "right", 1, 0)]


def test_xdist_gives_the_serial_results_with_two_models(run, pytester: pytest.Pytester) -> None:
    serial, parallel = run("--gotchas-json", "serial.json"), run("--gotchas-json", "parallel.json", "-n", "2")
    assert serial.ret == parallel.ret == pytest.ExitCode.OK

    serial_data, parallel_data = (comparable_report(pytester.path / name) for name in ("serial.json", "parallel.json"))
    for key in serial_data:
        assert serial_data[key] == parallel_data[key], key


def test_each_model_compares_with_its_own_baseline(run, pytester: pytest.Pytester) -> None:
    recorded = run("--gotchas-update-baseline")
    assert recorded.ret == pytest.ExitCode.OK
    assert sorted(p.name for p in (pytester.path / "baselines").glob("*.yaml")) == ["left-bfloat16-cpu.yaml",
                                                                                  "right-bfloat16-cpu.yaml"]
    again = run()
    again.stdout.fnmatch_lines(["[[]left] baseline baselines/left-bfloat16-cpu.yaml: compared with*",
                                "[[]right] baseline baselines/right-bfloat16-cpu.yaml: compared with*"])


def test_one_baseline_file_for_several_models_is_a_usage_error(run) -> None:
    result = run("--gotchas-baseline", "b.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert ("ERROR: --gotchas-baseline names one file, but this run probes 2 models (left, right); leave it out "
            "and each model compares with its own baselines/<model>-<dtype>-<device>.yaml") in result.errlines


# -- users' own Python tests ----------------------------------------------------------------------------------------

PYTHON_TEST = '''
import pytest

SNIPPETS = [("print('a7')", "a8", "py-one"), ("print('b7')", "b8", "py-two")]


@pytest.mark.parametrize("snippet, wrong, case_id", SNIPPETS)
def test_generated(gotchas, snippet, wrong, case_id):
    result = gotchas.new(snippet, wrong, id=case_id, chapter="python-probes", pair="py-pair", interpreter="3.12",
                         env={"PYTHONHASHSEED": "0"})
    gotchas.record(result)
    assert result.verdict in ("ok", "MISS")


def test_transcript(gotchas):
    result = gotchas.record(gotchas.case('>>> print("a7")\\na\\u2588', "7", "8", id="as-yaml", chapter="python-probes",
                                         interpreter="3.12", env={"PYTHONHASHSEED": "0"}))
    assert result.verdict == "ok"
'''


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_python_test_and_a_chapter_share_the_model_and_the_report(pytester: pytest.Pytester,
                                                                    models: tuple[Path, Path], workers: list[str],
                                                                    py312) -> None:
    (pytester.path / "demo.yaml").write_text(CHAPTER)
    (pytester.path / "test_probe.py").write_text(PYTHON_TEST)
    result = pytester.runpytest_subprocess("--gotchas", "--gotchas-model", str(models[1]), "--gotchas-cache-dir",
                                           str(pytester.path / "cache"), "--gotchas-json", "out.json",
                                           "-p", "no:randomly", *workers)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert result.parseoutcomes() == {"ok": 1, "MISS": 1, "passed": 3}
    data = read_report(pytester.path / "out.json")
    cases = {(c["chapter"], c["id"]): c for c in data["cases"]}
    # The same transcript scores the same as a YAML case and as a Python test.
    assert cases["python-probes", "as-yaml"]["runs"][0]["readings"] == cases["demo", "one"]["runs"][0]["readings"]
    assert cases["python-probes", "py-one"]["runs"][0]["prompt"] == '>>> print(\'a7\')\na'
    assert {f'{p["chapter"]}/{p["id"]}': p["passed"] for p in data["pairs"]} == {"demo/both": False,
                                                                                "python-probes/py-pair": False}
    result.stdout.fnmatch_lines(["*python-probes: 0/1 pairs*"])


def test_the_fixtures_are_documented(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--fixtures")
    result.stdout.fnmatch_lines(["gotchas_model [[]session scope] -- *fixtures.py*", "    The model under test*"])
    result.stdout.fnmatch_lines(["gotchas -- *fixtures.py*", "    Probe the model from a Python test*"])


def test_torch_stays_out_until_the_fixture_is_used(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="import sys\ndef test_x():\n    assert 'torch' not in sys.modules\n")
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()


def test_a_run_without_gotchas_imports_neither_pydantic_nor_yaml(pytester: pytest.Pytester) -> None:
    # The plugin is imported by every pytest run: its options' table must not pull in the report schema (pydantic)
    # or the chapter reader (PyYAML), which only a --gotchas run uses.
    pytester.makepyfile(test_plain="import sys\ndef test_x():\n    assert 'pydantic' not in sys.modules\n"
                                   "    assert 'yaml' not in sys.modules\n")
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()


# -- special tokens: each model's own convention ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def no_bos_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("nobos") / "model", LEFT, adds_bos=False)


@pytest.mark.parametrize("mode, first", [("auto", None), ("always", "<bos>"), ("never", None)])
def test_bos_follows_the_tokenizer_unless_told(pytester: pytest.Pytester, no_bos_model: Path, mode: str,
                                                first: str | None) -> None:
    (pytester.path / "demo.yaml").write_text(CHAPTER)
    result = pytester.runpytest_subprocess("--gotchas", "--gotchas-model", str(no_bos_model), "--gotchas-bos", mode,
                                           "--gotchas-cache-dir", str(pytester.path / "cache"),
                                           "--gotchas-json", "out.json", "-W", "ignore::pytest.PytestWarning")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    data = read_report(pytester.path / "out.json")
    assert data["models"][0]["bos"] == f"{mode}: {first or 'none'}"


def test_a_gemma_model_without_bos_is_warned_about(pytester: pytest.Pytester, no_bos_model: Path) -> None:
    (pytester.path / "demo.yaml").write_text(CHAPTER)
    result = pytester.runpytest_subprocess("--gotchas", "--gotchas-model", str(no_bos_model),
                                           "--gotchas-cache-dir", str(pytester.path / "cache"))
    assert result.ret == pytest.ExitCode.OK
    output = result.stdout.str()
    assert output.count("GotchasWarning: model") == 1
    result.stdout.fnmatch_lines(["*is a Gemma model (gemma3_text), which is trained with <bos> first, but its "
                                 "tokenizer adds no BOS token; if its tokenizer files are wrong, run with "
                                 "--gotchas-bos always"])
    assert "demo.yaml:" not in output.split("warnings summary")[1]  # the model's, said at no case's line


def test_a_model_note_under_w_error_fails_the_run_with_its_words(pytester: pytest.Pytester,
                                                                  no_bos_model: Path) -> None:
    (pytester.path / "demo.yaml").write_text(CHAPTER)
    result = pytester.runpytest_subprocess("--gotchas", "--gotchas-model", str(no_bos_model),
                                           "--gotchas-cache-dir", str(pytester.path / "cache"),
                                           "-W", "error::pytest_gotchas.plugin.GotchasWarning")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["gotchas: model '*' is a Gemma model (gemma3_text), which is trained with <bos> "
                                 "first, but its tokenizer adds no BOS token; if its tokenizer files are wrong, run "
                                 "with --gotchas-bos always"])
