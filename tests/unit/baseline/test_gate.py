"""gate.py: one run's use of its baseline: the default file chosen by the device the model loaded on and by the
opt-in checks, nothing failing without a baseline, the update written and then compared, another model, dtype or
hardware refused or named, two updates at once, and the command that records a change. Results are built by
hand (helpers/baselines.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.baselines import DROPPED, HEADER, MISS_, PARTLY_UNREADABLE, SHA, all_ok, case, info, recorded

from pytest_gotchas.baseline import gate, store


def test_update_command_keeps_the_arguments_and_adds_the_flag_once() -> None:
    assert gate.update_command(["--gotchas", "-k", "sets or floats"]) == (
        "pytest --gotchas -k 'sets or floats' --gotchas-update-baseline")
    assert gate.update_command(["--gotchas-update-baseline"]) == "pytest --gotchas-update-baseline"


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
