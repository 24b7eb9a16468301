"""gate.py: one run's use of its baseline: the default file chosen by the device the model loaded on and by the
opt-in checks, nothing failing without a baseline, the update written and then compared, another model, dtype or
hardware refused or named, two updates at once, and the command that records a change. Results are built by
hand (helpers/baselines.py); the gate returns facts, and these tests read them as report/wording_baseline.py words
them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from helpers.baselines import DROPPED, HEADER, MISS_, MODEL, PARTLY_UNREADABLE, SHA, all_ok, case, info, infos, recorded

from pytest_gotchas.baseline import gate, store
from pytest_gotchas.report import wording_baseline
from pytest_gotchas.results.baselines import BaselineOutcome
from pytest_gotchas.results.schema import CaseResult, ModelInfo

FLOATS = info("floats", ("x", "y"), {"xy": ["x", "y"]})
CHAPTERS = infos(info(), FLOATS)


def test_update_command_keeps_the_arguments_and_adds_the_flag_once() -> None:
    assert gate.update_command(["--gotchas", "-k", "sets or floats"]) == (
        "pytest --gotchas -k 'sets or floats' --gotchas-update-baseline")
    assert gate.update_command(["--gotchas-update-baseline"]) == "pytest --gotchas-update-baseline"


def model(**changed: object) -> ModelInfo:
    return replace(MODEL, **changed)  # type: ignore[arg-type]


def check(g: gate.Gate, result: CaseResult, loaded: ModelInfo = MODEL) -> tuple[str | None, bool]:
    """The failure text of a result's item (None: it passes) and whether the session stops."""
    failure = gate.case_failure(g, result, loaded, CHAPTERS[result.chapter], strict=False)
    return wording_baseline.case_failure_text(failure), failure.stops


def finish(g: gate.Gate, results: list[CaseResult], loaded: ModelInfo = MODEL) -> BaselineOutcome:
    return g.finish("tiny", results, loaded, CHAPTERS)


def lines(done: BaselineOutcome) -> list[str]:
    return [text for text, _ in wording_baseline.outcome_lines(done)]


def record(g: gate.Gate, done: BaselineOutcome, results: list[CaseResult]) -> str:
    g.record(done, results, CHAPTERS)
    assert done.written is not None and done.path is not None, done.write_error
    return wording_baseline.update_line(done.written, done.path)


def run_gate(tmp_path: Path, base: store.Baseline | None = None, **kwargs: object) -> gate.Gate:
    if base is not None:
        store.write(tmp_path / "baselines" / "tiny-bfloat16-cpu.yaml", base)
    return gate.make_gate(tmp_path, None, ["tiny"], "bfloat16", None, None, command="CMD", **kwargs)


def test_without_a_baseline_nothing_fails_and_the_summary_says_how_to_record(tmp_path: Path) -> None:
    g = run_gate(tmp_path)
    assert check(g, case("b", *MISS_)) == (None, False)
    done = finish(g, all_ok())
    assert done.missing and not done.update
    assert lines(done) == ["baseline: none at baselines/tiny-bfloat16-cpu.yaml; record one with: CMD"]


def test_the_default_file_is_chosen_by_the_device_the_model_loaded_on(tmp_path: Path) -> None:
    store.write(tmp_path / "baselines" / "tiny-bfloat16-cuda.yaml", recorded())
    g = run_gate(tmp_path)
    assert check(g, case("b", *MISS_), model(device="cuda:1"))[0] is not None
    assert check(g, case("b", *MISS_))[0] is None  # cpu: no baseline


def test_update_writes_to_the_default_path_and_then_compares(tmp_path: Path) -> None:
    updating = run_gate(tmp_path, update=True)
    done = finish(updating, all_ok())
    assert done.update and done.missing and done.path == "baselines/tiny-bfloat16-cpu.yaml"
    assert record(updating, done, all_ok()) == (
        "baseline baselines/tiny-bfloat16-cpu.yaml written: 2 pairs and 4 verdicts recorded (0 changed), 0 removed, "
        "0 kept from cases that did not run")
    assert (tmp_path / "baselines" / "tiny-bfloat16-cpu.yaml").is_file()
    g = run_gate(tmp_path)
    assert check(g, case("a")) == (None, False)
    failure, stop = check(g, case("a", *MISS_))
    assert failure and "pair sets/ab passed in the baseline" in failure and not stop


def test_update_through_a_symbolic_link_writes_the_file_it_names_and_keeps_the_link(tmp_path: Path) -> None:
    """A baseline shared through a link (one file for several checkouts): the update replaced the link with a plain
    file and left the shared file as it was. It writes through the link now (docs/ci.md)."""
    shared = tmp_path / "shared" / "tiny.yaml"
    store.write(shared, recorded())
    link = tmp_path / "project" / "baselines" / "tiny-bfloat16-cpu.yaml"
    link.parent.mkdir(parents=True)
    link.symlink_to(shared)
    updating = run_gate(tmp_path / "project", update=True)
    results = [case("a"), case("b", *MISS_), case("c"), case("d")]
    done = finish(updating, results)
    assert record(updating, done, results).startswith("baseline baselines/tiny-bfloat16-cpu.yaml written: 2 pairs "
                                                      "and 4 verdicts recorded")
    assert link.is_symlink() and link.resolve() == shared
    assert store.read(shared).pairs["sets/ab"] == "fail"
    assert sorted(p.name for p in link.parent.iterdir()) == [link.name]  # the lock is the named file's
    assert (shared.parent / (shared.name + ".lock")).exists()


def test_a_foreign_model_is_refused_at_its_first_case_and_stops_the_run(tmp_path: Path) -> None:
    g = run_gate(tmp_path, recorded())
    failure, stop = check(g, case("a"), model(weights_sha256="b" * 64, name="other"))
    assert stop
    assert failure == (
        "baseline baselines/tiny-bfloat16-cpu.yaml was recorded with model 'tiny' (weights sha256 "
        "aaaaaaaaaaaa..., bfloat16, softmax bfloat16, cpu); this run uses model 'other' (weights sha256 "
        "bbbbbbbbbbbb..., bfloat16, softmax bfloat16, cpu, token reading). They differ in weights_sha256, so their "
        "verdicts are not "
        "comparable. Record a baseline for this model with --gotchas-baseline OTHER.yaml --gotchas-update-baseline, "
        "or compare anyway with --gotchas-baseline-any-model.")
    done = finish(g, [case("a")], model(weights_sha256="b" * 64))
    assert done.refusal is not None and done.refusal.fields == ["weights_sha256"]
    assert lines(done)[0].startswith("baseline: not used: baseline baselines/tiny-bfloat16-cpu.yaml was recorded")


def test_any_model_compares_across_models_and_says_so(tmp_path: Path) -> None:
    g = run_gate(tmp_path, recorded(), any_model=True)
    other = model(weights_sha256="b" * 64, name="other")
    failure, stop = check(g, case("a", *MISS_), other)
    assert not stop and failure and failure.startswith("regression against the baseline")
    done = finish(g, [case("a", *MISS_), case("b")], other)
    assert done.across == ["weights_sha256"] and done.comparison is not None
    assert any("compared ACROSS MODELS (--gotchas-baseline-any-model): they differ in weights_sha256" in t
               for t in lines(done))


def test_two_updates_at_once_both_land(tmp_path: Path) -> None:
    """Each run reads the file under its lock when it writes, not when it started: neither loses the other's
    chapter (two `-k` runs recording into one baseline at the same time)."""
    sets = [case("a"), case("b"), case("c"), case("d", *MISS_)]
    floats = [case("x", chapter="floats"), case("y", chapter="floats")]
    first, second = run_gate(tmp_path, update=True), run_gate(tmp_path, update=True)  # both start before a write
    done_first, done_second = finish(first, sets), finish(second, floats)
    record(first, done_first, sets)
    record(second, done_second, floats)
    both = store.read(tmp_path / "baselines" / "tiny-bfloat16-cpu.yaml")
    assert set(both.pairs) == {"sets/ab", "sets/cd", "floats/xy"}
    assert len(both.verdicts) == 6


def test_update_with_another_model_and_any_model_starts_afresh(tmp_path: Path) -> None:
    g = run_gate(tmp_path, recorded(), any_model=True, update=True)
    results = [case("a"), case("b")]
    assert record(g, finish(g, results, model(weights_sha256="b" * 64)), results).startswith(
        "baseline baselines/tiny-bfloat16-cpu.yaml written: started afresh")
    new = store.read(tmp_path / "baselines" / "tiny-bfloat16-cpu.yaml")
    assert new.header is not None and new.header.weights_sha256 == "b" * 64
    assert set(new.verdicts) == {"sets/a", "sets/b"} and set(new.pairs) == {"sets/ab"}


def test_a_dtype_mismatch_is_refused_before_anything_runs(tmp_path: Path) -> None:
    store.write(tmp_path / "b.yaml", recorded())
    with pytest.raises(gate.SettingsRefused) as refused:
        gate.make_gate(tmp_path, tmp_path / "b.yaml", ["tiny"], "float32", None, None)
    assert refused.value.refusal.fields == ["dtype", "softmax_dtype"]
    assert "They differ in dtype, softmax_dtype, so" in wording_baseline.refusal_text(refusal=refused.value.refusal)
    with pytest.raises(gate.SettingsRefused) as refused:
        gate.make_gate(tmp_path, tmp_path / "b.yaml", ["tiny"], "bfloat16", None, "float32")
    assert refused.value.refusal.fields == ["softmax_dtype"]
    gate.make_gate(tmp_path, tmp_path / "b.yaml", ["tiny"], "float32", None, None, any_model=True)


def test_verdicts_with_other_checks_are_not_compared(tmp_path: Path) -> None:
    """A variants run's surface-dep is no regression of a baseline recorded without variants: each combination of
    opt-in checks has its own default file, and an explicit file recorded otherwise is refused."""
    g = run_gate(tmp_path, recorded(), checks="variants")
    assert check(g, case("b", *MISS_)) == (None, False)
    assert lines(finish(g, all_ok())) == [
        "baseline: none at baselines/tiny-bfloat16-cpu+variants.yaml; record one with: CMD"]
    store.write(tmp_path / "b.yaml", recorded())
    with pytest.raises(gate.SettingsRefused) as refused:
        gate.make_gate(tmp_path, tmp_path / "b.yaml", ["tiny"], "bfloat16", None, None, checks="variants")
    assert wording_baseline.refusal_text(refused.value.refusal) == (
        f"baseline b.yaml was recorded with model 'tiny' (weights sha256 {SHA[:12]}..., bfloat16, "
        "softmax bfloat16, cpu); this run uses dtype bfloat16, softmax bfloat16, with variants. They differ in checks, "
        "so their verdicts are not comparable. Record a baseline for this model with --gotchas-baseline OTHER.yaml "
        "--gotchas-update-baseline, or compare anyway with --gotchas-baseline-any-model.")


def test_the_checks_are_recorded_in_the_header_and_absent_without_them(tmp_path: Path) -> None:
    g = run_gate(tmp_path, checks="precision-check,variants", update=True)
    record(g, finish(g, all_ok()), all_ok())
    path = tmp_path / "baselines" / "tiny-bfloat16-cpu+precision-check+variants.yaml"
    assert "  checks: precision-check,variants\n" in path.read_text()
    header = store.read(path).header
    assert header is not None and header.checks == "precision-check,variants"
    assert wording_baseline.describe(header).endswith("cpu, token reading, with precision-check and variants)")
    assert "checks" not in store.dumps(recorded()) and store.loads(store.dumps(recorded())).header == HEADER


def test_an_explicit_path_must_exist_unless_it_is_being_recorded(tmp_path: Path) -> None:
    with pytest.raises(store.BaselineError, match="does not exist; record it with --gotchas-baseline"):
        gate.make_gate(tmp_path, Path("nope.yaml"), ["tiny"], "bfloat16", None, None)
    g = gate.make_gate(tmp_path, Path("nope.yaml"), ["tiny"], "bfloat16", None, None, update=True)
    assert g.baseline_for("tiny", "cpu")[0] == tmp_path / "nope.yaml"


def test_a_comparison_across_hardware_or_library_versions_says_so(tmp_path: Path) -> None:
    g = run_gate(tmp_path, recorded())
    elsewhere = model(hardware="cpu AVX2", torch_version="2.14.0")
    failure, stop = check(g, case("a", *MISS_), elsewhere)
    assert failure and not stop
    note = ("recorded on cpu AVX512, this run on cpu AVX2: other kernels round differently, so probabilities move "
            "and close verdicts can flip (docs/determinism.md)")
    assert f"  ({note})" in failure.splitlines()
    texts = lines(finish(g, [case("a", *MISS_), case("b")], elsewhere))
    assert texts[1:3] == [f"  {note}", "  recorded with other library versions: torch 2.13.0 -> 2.14.0"]


# -- a baseline with entries its reader refuses (hostile input round two) --------------------------------------------


def test_the_gate_reads_leniently_only_when_recording(tmp_path) -> None:
    path = tmp_path / "baselines" / "tiny-bfloat16-cpu.yaml"
    path.parent.mkdir()
    path.write_text(PARTLY_UNREADABLE, encoding="utf-8")
    recording = gate.make_gate(tmp_path, None, ["tiny"], "bfloat16", "cpu", None, update=True)
    assert recording.files[path].unreadable == DROPPED
    with pytest.raises(store.BaselineError, match="^baseline .* is not a pytest-gotchas baseline: pairs: 'sets/x/y'"
                                                  ": keys are"):
        gate.make_gate(tmp_path, None, ["tiny"], "bfloat16", "cpu", None)
