"""The baseline package alone (file format, comparison, gate) and its wording: no model, no pytester. Results are
built by hand."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from helpers.results import make_case, make_run
from pytest_gotchas.baseline import compare as cmp
from pytest_gotchas.baseline import gate, store
from pytest_gotchas.cases.chapter import looks_like_chapter
from pytest_gotchas.model.embedded import short_name, short_names
from pytest_gotchas.report import wording as text
from pytest_gotchas.report import terminal
from pytest_gotchas.results.schema import CaseResult, ChapterInfo, Run
from pytest_gotchas.results.verdict import Status

SCORED, SKIPPED, UNSCORED = Status.SCORED, Status.SKIPPED, Status.UNSCORED

SHA = "a" * 64
MODEL = {"name": "tiny", "source": "/m/tiny", "weights_sha256": SHA, "dtype": "bfloat16", "device": "cpu",
         "torch_version": "2.13.0", "transformers_version": "5.24.0", "hardware": "cpu AVX512", "numerics": "0" * 16}
HEADER = store.Header(name="tiny", weights_sha256=SHA, dtype="bfloat16", softmax_dtype="bfloat16", device="cpu",
                   hardware="cpu AVX512", numerics="0" * 16, torch="2.13.0", transformers="5.24.0")


def info(name: str = "sets", cases: tuple[str, ...] = ("a", "b", "c", "d"),
         pairs: dict[str, list[str]] | None = None) -> ChapterInfo:
    return ChapterInfo(name=name, label=f"ch {name}", title=name, path=f"{name}.yaml", implementation_defined=False,
                       case_ids=list(cases), pairs={"ab": ["a", "b"], "cd": ["c", "d"]} if pairs is None else pairs,
                       twins={})


def run(p_correct: float, p_wrong: float, primer: str | None = None) -> Run:
    return make_run(p_correct, p_wrong, primer)


def case(case_id: str, p_correct: float = 0.75, p_wrong: float = 0.125, chapter: ChapterInfo | None = None,
         runs: list[Run] | None = None, status: str = SCORED, model: dict | None = None) -> CaseResult:
    return make_case(case_id, chapter or info(), runs or [run(p_correct, p_wrong)], status, dict(MODEL, **(model or {})))


OK_ = (0.75, 0.125)
MISS_ = (0.125, 0.75)


def all_ok() -> list[CaseResult]:
    return [case("a"), case("b"), case("c"), case("d", *MISS_)]


def recorded(results: list[CaseResult] | None = None) -> store.Baseline:
    new, _ = cmp.update(None, results or all_ok(), HEADER)
    return new


# -- file format -----------------------------------------------------------------------------------------------


def test_dumps_is_sorted_one_line_per_entry_and_reads_back_exactly() -> None:
    primed = case("c", runs=[run(0.4296875, 0.125, "True-first"), run(0.5, 0.25, "False-first")])
    baseline = recorded([case("b"), case("a", 0.0001239776611328125, 5.960464477539063e-08), primed, case("d")])
    text = store.dumps(baseline)
    assert store.loads(text) == baseline
    body = [line for line in text.splitlines() if not line.startswith("#")]
    assert body[:3] == ["format: 2", "count: {pairs: 2, verdicts: 4}", "model:"]
    assert body[body.index("pairs:") + 1:body.index("verdicts:")] == ["  sets/ab: fail", "  sets/cd: pass"]
    verdicts = body[body.index("verdicts:") + 1:]
    assert [line.split(":")[0].strip() for line in verdicts] == ["sets/a", "sets/b", "sets/c", "sets/d"]
    assert verdicts[0] == ("  sets/a: {p_correct: 0.0001239776611328125, p_wrong: 5.960464477539063e-08, "
                           "verdict: noise}")
    assert verdicts[2] == ("  sets/c: {p_correct: {False-first: 0.5, True-first: 0.4296875}, "
                           "p_wrong: {False-first: 0.25, True-first: 0.125}, verdict: ok}")
    header = yaml.safe_load(text)["model"]
    assert list(header) == sorted(header) and header["weights_sha256"] == SHA and header["softmax_dtype"] == "bfloat16"


def test_a_baseline_file_is_never_taken_for_a_chapter(tmp_path: Path) -> None:
    path = tmp_path / "b.yaml"
    store.write(path, recorded())
    assert not looks_like_chapter(path)
    assert "cases" not in yaml.safe_load(path.read_text())


def test_write_is_atomic_and_leaves_no_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "deep" / "b.yaml"
    store.write(path, recorded())
    before = path.read_text()
    assert os.listdir(path.parent) == ["b.yaml"]

    def broken(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        store.write(path, recorded([case("a", *MISS_), case("b")]))
    assert path.read_text() == before
    assert os.listdir(path.parent) == ["b.yaml"]


def test_a_file_cut_short_is_told_apart_from_one_with_fewer_pairs(tmp_path: Path) -> None:
    path = tmp_path / "b.yaml"
    store.write(path, recorded())
    lines = path.read_text().splitlines()
    cut = [line for line in lines if not line.startswith("  sets/cd:")]  # a passing pair's line is lost
    path.write_text("\n".join(cut) + "\n")
    with pytest.raises(store.BaselineError) as error:
        store.read(path)
    assert str(error.value) == (
        f"baseline {path} is not a pytest-gotchas baseline: count: the file says 2 pairs and 4 verdicts but holds "
        "1 pairs and 4 verdicts: it was cut short or edited by hand. Fix or delete the file, then record it again "
        "with --gotchas-update-baseline.")


@pytest.mark.parametrize("text, expected", [
    ("format: 2\npairs: {a: [\n", "line 3: invalid YAML"),
    ("", "expected a mapping with keys format, count, model, pairs, verdicts; got nothing (an empty file)"),
    ("- 1\n", "got a list"),
    ("format: 2\ncases: {}\n", "unknown key(s) cases"),
    ("format: 1\n", "format: expected 2, got 1"),
    ("format: 2\npairs: {}\n", "count: expected {pairs: N, verdicts: N}, got None"),
    ("format: 2\ncount: {pairs: 0, verdicts: 0}\npairs: [a]\n", "pairs: expected a mapping, got a list"),
    ("format: 2\ncount: {pairs: 0, verdicts: 0}\npairs: {sets/ab: passed}\n", "pairs: sets/ab: expected pass or fail, got 'passed'"),
    ("format: 2\ncount: {pairs: 0, verdicts: 0}\npairs: {ab: pass}\n", "keys are \"<chapter>/<id>\""),
    ("format: 2\ncount: {pairs: 0, verdicts: 0}\nverdicts: {sets/a: ok}\n", "verdicts: sets/a: expected {verdict"),
    ("format: 2\ncount: {pairs: 0, verdicts: 0}\nverdicts: {sets/a: {verdict: good, p_correct: 0.5, p_wrong: 0.1}}\n", "verdict 'good' is not one of"),
    ("format: 2\ncount: {pairs: 0, verdicts: 0}\nverdicts: {sets/a: {verdict: ok, p_correct: 1.5, p_wrong: 0.1}}\n", "p_correct must be a probability"),
    ("format: 2\ncount: {pairs: 0, verdicts: 0}\nverdicts: {sets/a: {verdict: ok, p_correct: {x: yes}, p_wrong: 0.1}}\n", "p_correct must be"),
    ("format: 2\ncount: {pairs: 0, verdicts: 0}\nmodel: {name: x}\n", "model: missing or not a string: weights_sha256, dtype"),
])
def test_a_bad_file_is_refused_naming_the_file_and_the_problem(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "base.yaml"
    path.write_text(text)
    with pytest.raises(store.BaselineError) as error:
        store.read(path)
    message = str(error.value)
    assert message.startswith(f"baseline {path} is not a pytest-gotchas baseline: ")
    assert expected in message
    assert "--gotchas-update-baseline" in message


def test_an_unreadable_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(store.BaselineError, match=f"cannot read baseline {tmp_path}"):
        store.read(tmp_path)  # a directory


# -- where it lives --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model, slug", [
    (None, "gemma-3-270m"), ("google/gemma-2-2b", "gemma-2-2b"), ("/models/My Model/", "My-Model"),
    ("~/w/gemma-3-270m-Q4_K_M.gguf", "gemma-3-270m-Q4_K_M"), ("C:\\m\\llama", "llama"), ("///", "model"),
])
def test_short_name(model: str | None, slug: str) -> None:
    assert short_name(model) == slug


def test_short_names_of_a_run_are_unique() -> None:
    assert short_names(["a/m", "b/m", None, "smollm2-135m"]) == ["m", "m-2", "gemma-3-270m", "smollm2-135m"]


def test_default_path_uses_the_device_kind() -> None:
    assert store.default_path(Path("/r"), "gemma-3-270m", "bfloat16", "cuda:1") == Path("/r/baselines/gemma-3-270m-bfloat16-cuda.yaml")
    assert store.default_path(Path("/r"), "m", "bfloat16", "cpu", store.checks_of(True, True)) == Path(
        "/r/baselines/m-bfloat16-cpu+precision-check+variants.yaml")


# -- update ---------------------------------------------------------------------------------------------------


def test_update_changes_only_what_ran() -> None:
    other = info("floats", cases=("x", "y"), pairs={"xy": ["x", "y"]})
    old = recorded(all_ok() + [case("x", chapter=other), case("y", chapter=other)])
    # A `-k` run of one member of sets/ab, still ok but with other numbers: the pair is not known, so kept.
    new, stats = cmp.update(old, [case("a", 0.5, 0.25)], HEADER)
    assert new.pairs == old.pairs
    assert new.verdicts["sets/a"] == store.Entry("ok", 0.5, 0.25)
    assert {k: v for k, v in new.verdicts.items() if k != "sets/a"} == {k: v for k, v in old.verdicts.items()
                                                                        if k != "sets/a"}
    assert (stats.pairs, stats.verdicts, stats.changed, stats.removed, stats.kept) == (0, 1, 0, 0, 8)  # 3 pairs, 5 cases


def test_update_records_a_pair_that_one_member_run_already_fails() -> None:
    new, stats = cmp.update(recorded(), [case("a", *MISS_)], HEADER)
    assert new.pairs == {"sets/ab": "fail", "sets/cd": "fail"}
    assert (stats.pairs, stats.verdicts, stats.changed) == (1, 1, 2)


def test_update_removes_what_a_chapter_that_ran_no_longer_has() -> None:
    old = recorded()
    renamed = info(cases=("a", "b", "c", "e"), pairs={"ab": ["a", "b"], "ce": ["c", "e"]})
    new, stats = cmp.update(old, [case("a", chapter=renamed), case("b", chapter=renamed)], HEADER)
    assert set(new.pairs) == {"sets/ab"}  # cd is gone from the chapter; ce did not fully run
    assert set(new.verdicts) == {"sets/a", "sets/b", "sets/c"}
    assert stats.removed == 2


def test_update_drops_a_case_that_became_unscored_and_keeps_one_that_was_skipped() -> None:
    old = recorded()
    new, _ = cmp.update(old, [case("a", status=UNSCORED), case("b", status=SKIPPED)], HEADER)
    assert "sets/a" not in new.verdicts and new.verdicts["sets/b"] == old.verdicts["sets/b"]


def test_update_takes_the_new_header() -> None:
    newer = replace(HEADER, torch="2.14.0")
    new, _ = cmp.update(recorded(), all_ok(), newer)
    assert new.header == newer


# -- the per-member gate ---------------------------------------------------------------------------------------


def test_a_member_that_breaks_a_passing_pair_fails_with_both_verdicts_and_probabilities() -> None:
    base = recorded()
    message = text.regression_message(base, "b.yaml", case("b", 0.25, 0.5), "pytest --gotchas x --gotchas-update-baseline")
    assert message is not None
    assert message.splitlines() == [
        "regression against the baseline b.yaml:",
        "  pair sets/ab passed in the baseline and fails now (other member a: ok in the baseline)",
        "  b:",
        "    baseline  ok        P(correct) 75.00%  P(wrong) 12.50%",
        "    now       MISS      P(correct) 25.00%  P(wrong) 50.00%",
        "If the change is intended, record it:",
        "  pytest --gotchas x --gotchas-update-baseline",
    ]


@pytest.mark.parametrize("result", [case("b"), case("c", *MISS_), case("d", *MISS_)])
def test_no_failure_for_an_ok_member_or_a_pair_that_failed_before(result: CaseResult) -> None:
    base = recorded([case("a"), case("b"), case("c"), case("d", *MISS_)])
    assert text.regression_message(base, "b.yaml", result, "cmd") is None


def test_a_tie_or_noise_or_prime_dep_breaks_a_pair_too() -> None:
    base = recorded()
    for result in (case("a", 0.25, 0.25), case("a", 0.01, 0.001),
                   case("a", runs=[run(0.5, 0.25, "p1"), run(0.25, 0.5, "p2")])):
        assert cmp.broken_pairs(base, result) == ["ab"], result.verdict


def test_strict_fails_every_verdict_that_is_not_ok() -> None:
    assert terminal.strict_message(case("a")) is None
    assert terminal.strict_message(case("a", 0.25, 0.25)) == (
        "--gotchas-strict: verdict tie is not ok: P(correct) 25.00%  P(wrong) 25.00%")


def test_update_command_keeps_the_arguments_and_adds_the_flag_once() -> None:
    assert gate.update_command(["--gotchas", "-k", "sets or floats"]) == (
        "pytest --gotchas -k 'sets or floats' --gotchas-update-baseline")
    assert gate.update_command(["--gotchas-update-baseline"]) == "pytest --gotchas-update-baseline"


# -- compare ---------------------------------------------------------------------------------------------------


def test_compare_sorts_out_every_kind_of_difference() -> None:
    base = recorded(all_ok() + [case("x", chapter=info("floats", ("x",), {}))])
    base.pairs["sets/gone"] = "pass"
    base.verdicts["sets/old-case"] = store.Entry("ok", 0.5, 0.25)
    now = info(cases=("a", "b", "c", "d", "e", "f"), pairs={"ab": ["a", "b"], "cd": ["c", "d"], "ef": ["e", "f"]})
    results = [case("a", chapter=now), case("b", 0.25, 0.25, chapter=now), case("c", chapter=now),
               case("d", chapter=now), case("e", chapter=now), case("f", chapter=now)]
    c = cmp.compare(base, results)
    assert [(p.key, text.describe_change(p)) for p in c.regressions] == [("sets/ab", "a ok, b ok -> tie")]
    assert [(p.key, text.describe_change(p)) for p in c.improvements] == [("sets/cd", "c ok, d MISS -> ok")]
    assert [(p.key, p.new) for p in c.new_pairs] == [("sets/ef", "pass")]
    assert c.gone_pairs == ["sets/gone"]
    assert [(x.key, x.old.verdict, x.new.verdict) for x in c.changed_cases] == [("sets/b", "ok", "tie"),
                                                                                ("sets/d", "MISS", "ok")]
    assert c.new_cases == ["sets/e", "sets/f"]
    assert c.gone_cases == ["sets/old-case"]
    assert c.not_run == ["floats"]


def test_compare_lists_a_passing_pair_whose_member_was_not_scored() -> None:
    c = cmp.compare(recorded(), [case("a"), case("b", status=SKIPPED)])
    assert [(p.key, text.describe_change(p)) for p in c.unchecked] == [("sets/ab", "a ok, b not scored")]
    assert not c.regressions


def test_summary_lines_say_what_to_run() -> None:
    base = recorded()
    results = [case("a"), case("b"), case("c"), case("d")]
    lines = [text for text, _ in text.comparison_lines(cmp.compare(base, results), base, "CMD", update=False)]
    assert "  improvement sets/cd: fail -> pass (c ok, d MISS -> ok)" in lines
    assert lines[-1] == "  record these changes with: CMD"
    assert "0 regressed, 1 improved, 1 unchanged" in lines[-2]


# -- the gate of one run ---------------------------------------------------------------------------------------


def unpack(done: gate.Finished) -> tuple[list, tuple | None]:
    return done.lines, done.to_record


def run_gate(tmp_path: Path, base: store.Baseline | None = None, **kwargs: object) -> gate.Gate:
    if base is not None:
        store.write(tmp_path / "baselines" / "tiny-bfloat16-cpu.yaml", base)
    return gate.make_gate(tmp_path, None, ["tiny"], "bfloat16", None, None, command="CMD", **kwargs)


def test_without_a_baseline_nothing_fails_and_the_summary_says_how_to_record(tmp_path: Path) -> None:
    g = run_gate(tmp_path)
    assert g.check(case("b", *MISS_)) == (None, False)
    lines, write = unpack(g.finish("tiny", all_ok()))
    assert write is None
    assert [t for t, _ in lines] == ["baseline: none at baselines/tiny-bfloat16-cpu.yaml; "
                                     "record one with: CMD"]


def test_the_default_file_is_chosen_by_the_device_the_model_loaded_on(tmp_path: Path) -> None:
    store.write(tmp_path / "baselines" / "tiny-bfloat16-cuda.yaml", recorded())
    g = run_gate(tmp_path)
    assert g.check(case("b", *MISS_, model={"device": "cuda:1"}))[0] is not None
    assert g.check(case("b", *MISS_))[0] is None  # cpu: no baseline


def test_update_writes_to_the_default_path_and_then_compares(tmp_path: Path) -> None:
    updating = run_gate(tmp_path, update=True)
    done = updating.finish("tiny", all_ok())
    assert done.to_record is not None and done.to_record[0] == tmp_path / "baselines" / "tiny-bfloat16-cpu.yaml"
    assert updating.record(done, all_ok()).endswith("written: 2 pairs and 4 verdicts recorded (0 changed), 0 removed, "
                                                    "0 kept from cases that did not run")
    g = run_gate(tmp_path)
    assert g.check(case("a")) == (None, False)
    failure, stop = g.check(case("a", *MISS_))
    assert failure and "pair sets/ab passed in the baseline" in failure and not stop


def test_a_foreign_model_is_refused_at_its_first_case_and_stops_the_run(tmp_path: Path) -> None:
    g = run_gate(tmp_path, recorded())
    failure, stop = g.check(case("a", model={"weights_sha256": "b" * 64, "name": "other"}))
    assert stop
    assert failure == (
        "baseline baselines/tiny-bfloat16-cpu.yaml was recorded with model 'tiny' (weights sha256 "
        "aaaaaaaaaaaa..., bfloat16, softmax bfloat16, cpu); this run uses model 'other' (weights sha256 "
        "bbbbbbbbbbbb..., bfloat16, softmax bfloat16, cpu). They differ in weights_sha256, so their verdicts are not "
        "comparable. Record a baseline for this model with --gotchas-baseline OTHER.yaml --gotchas-update-baseline, "
        "or compare anyway with --gotchas-baseline-any-model.")
    lines, write = unpack(g.finish("tiny", [case("a", model={"weights_sha256": "b" * 64})]))
    assert write is None and lines[0][0].startswith("baseline: not used: ")


def test_any_model_compares_across_models_and_says_so(tmp_path: Path) -> None:
    g = run_gate(tmp_path, recorded(), any_model=True)
    other = {"weights_sha256": "b" * 64, "name": "other"}
    failure, stop = g.check(case("a", *MISS_, model=other))
    assert not stop and failure and failure.startswith("regression against the baseline")
    lines, _ = unpack(g.finish("tiny", [case("a", *MISS_, model=other), case("b", model=other)]))
    assert any("compared ACROSS MODELS (--gotchas-baseline-any-model): they differ in weights_sha256" in t
               for t, _ in lines)


def test_two_updates_at_once_both_land(tmp_path: Path) -> None:
    """Each run reads the file under its lock when it writes, not when it started: neither loses the other's
    chapter (two `-k` runs recording into one baseline at the same time)."""
    sets = [case("a"), case("b"), case("c"), case("d", *MISS_)]
    floats = [case("x", chapter=info("floats", ("x", "y"), {"xy": ["x", "y"]})),
              case("y", chapter=info("floats", ("x", "y"), {"xy": ["x", "y"]}))]
    first, second = run_gate(tmp_path, update=True), run_gate(tmp_path, update=True)  # both start before a write
    done_first, done_second = first.finish("tiny", sets), second.finish("tiny", floats)
    first.record(done_first, sets)
    second.record(done_second, floats)
    both = store.read(tmp_path / "baselines" / "tiny-bfloat16-cpu.yaml")
    assert set(both.pairs) == {"sets/ab", "sets/cd", "floats/xy"}
    assert len(both.verdicts) == 6


def test_update_with_another_model_and_any_model_starts_afresh(tmp_path: Path) -> None:
    other = {"weights_sha256": "b" * 64}
    g = run_gate(tmp_path, recorded(), any_model=True, update=True)
    results = [case("a", model=other), case("b", model=other)]
    assert g.record(g.finish("tiny", results), results).startswith("baseline baselines/tiny-bfloat16-cpu.yaml written: "
                                                            "started afresh")
    new = store.read(tmp_path / "baselines" / "tiny-bfloat16-cpu.yaml")
    assert new.header is not None and new.header.weights_sha256 == "b" * 64
    assert set(new.verdicts) == {"sets/a", "sets/b"} and set(new.pairs) == {"sets/ab"}


def test_a_dtype_mismatch_is_refused_before_anything_runs(tmp_path: Path) -> None:
    store.write(tmp_path / "b.yaml", recorded())
    with pytest.raises(store.BaselineError, match=r"They differ in dtype, softmax_dtype"):
        gate.make_gate(tmp_path, tmp_path / "b.yaml", ["tiny"], "float32", None, None)
    with pytest.raises(store.BaselineError, match=r"They differ in softmax_dtype"):
        gate.make_gate(tmp_path, tmp_path / "b.yaml", ["tiny"], "bfloat16", None, "float32")
    gate.make_gate(tmp_path, tmp_path / "b.yaml", ["tiny"], "float32", None, None, any_model=True)


def test_verdicts_with_other_checks_are_not_compared(tmp_path: Path) -> None:
    """A variants run's surface-dep is no regression of a baseline recorded without variants: each combination of
    opt-in checks has its own default file, and an explicit file recorded otherwise is refused."""
    g = run_gate(tmp_path, recorded(), checks="variants")
    assert g.check(case("b", *MISS_)) == (None, False)
    lines, _ = unpack(g.finish("tiny", all_ok()))
    assert [t for t, _ in lines] == ["baseline: none at baselines/tiny-bfloat16-cpu+variants.yaml; record one with: CMD"]
    store.write(tmp_path / "b.yaml", recorded())
    with pytest.raises(store.BaselineError) as refused:
        gate.make_gate(tmp_path, tmp_path / "b.yaml", ["tiny"], "bfloat16", None, None, checks="variants")
    assert str(refused.value) == (
        f"baseline b.yaml was recorded with model 'tiny' (weights sha256 {SHA[:12]}..., bfloat16, "
        "softmax bfloat16, cpu); this run uses dtype bfloat16, softmax bfloat16, with variants. They differ in checks, "
        "so their verdicts are not comparable. Record a baseline for this model with --gotchas-baseline OTHER.yaml "
        "--gotchas-update-baseline, or compare anyway with --gotchas-baseline-any-model.")


def test_the_checks_are_recorded_in_the_header_and_absent_without_them(tmp_path: Path) -> None:
    g = run_gate(tmp_path, checks="precision-check,variants", update=True)
    g.record(g.finish("tiny", all_ok()), all_ok())
    path = tmp_path / "baselines" / "tiny-bfloat16-cpu+precision-check+variants.yaml"
    assert "  checks: precision-check,variants\n" in path.read_text()
    header = store.read(path).header
    assert header is not None and header.checks == "precision-check,variants"
    assert header.describe().endswith("cpu, with precision-check and variants)")
    assert "checks" not in store.dumps(recorded()) and store.loads(store.dumps(recorded())).header == HEADER


def test_an_explicit_path_must_exist_unless_it_is_being_recorded(tmp_path: Path) -> None:
    with pytest.raises(store.BaselineError, match="does not exist; record it with --gotchas-baseline"):
        gate.make_gate(tmp_path, Path("nope.yaml"), ["tiny"], "bfloat16", None, None)
    g = gate.make_gate(tmp_path, Path("nope.yaml"), ["tiny"], "bfloat16", None, None, update=True)
    assert g.baseline_for("tiny", "cpu")[0] == tmp_path / "nope.yaml"


def test_the_module_is_pure() -> None:
    import subprocess

    code = ("import sys, pytest_gotchas.baseline; "
            "print(sorted(m for m in ('torch', 'transformers', 'pytest') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_comparison_across_hardware_or_library_versions_says_so(tmp_path: Path) -> None:
    g = run_gate(tmp_path, recorded())
    elsewhere = {"hardware": "cpu AVX2", "torch_version": "2.14.0"}
    failure, stop = g.check(case("a", *MISS_, model=elsewhere))
    assert failure and not stop
    note = ("recorded on cpu AVX512, this run on cpu AVX2: other kernels round differently, so probabilities move "
            "and close verdicts can flip (docs/determinism.md)")
    assert f"  ({note})" in failure.splitlines()
    lines, _ = unpack(g.finish("tiny", [case("a", *MISS_, model=elsewhere), case("b", model=elsewhere)]))
    texts = [t for t, _ in lines]
    assert texts[1:3] == [f"  {note}", "  recorded with other library versions: torch 2.13.0 -> 2.14.0"]
