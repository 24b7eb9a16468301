"""A baseline records how its numbers were read (the reading, the BOS policy and what it gave, the kernel path): a
run that reads them another way is refused with the cause named, never compared as if the same; an older file that
does not record them loads and says what is unknown; a changed library version is named as the likely cause of
moved probabilities instead of a bug; and an update that keeps chapters recorded otherwise marks the file."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from helpers.baselines import HEADER, HEADER_YAML, MISS_, MODEL, all_ok, case, info, infos

from pytest_gotchas.baseline import compare as cmp
from pytest_gotchas.baseline import gate, store
from pytest_gotchas.report import wording_baseline
from pytest_gotchas.results.baselines import BaselineOutcome
from pytest_gotchas.results.schema import CaseResult, ModelInfo

FLOATS = info("floats", ("x", "y"), {"xy": ["x", "y"]})
CHAPTERS = infos(info(), FLOATS)
PATH = "baselines/tiny-bfloat16-cpu.yaml"
# A run of the hand-made cases: token reading (helpers.results.make_run), Gemma's BOS, plain kernels.
LOADED = replace(MODEL, bos="auto: <bos>")
NOW = replace(HEADER, reading="token", bos="auto: <bos>", kernels="plain")


def both() -> list[CaseResult]:
    return [*all_ok(), case("x", chapter="floats"), case("y", chapter="floats")]


def write(tmp_path: Path, results: list[CaseResult], header: store.Header) -> store.Baseline:
    baseline, _ = cmp.update(None, results, CHAPTERS, header)
    store.write(tmp_path / PATH, baseline)
    return baseline


def make(tmp_path: Path, **kwargs: object) -> gate.Gate:
    return gate.make_gate(tmp_path, None, ["tiny"], "bfloat16", None, None, command="CMD", **kwargs)


def finish(g: gate.Gate, results: list[CaseResult], loaded: ModelInfo = LOADED) -> BaselineOutcome:
    return g.finish("tiny", results, loaded, CHAPTERS)


def lines(done: BaselineOutcome) -> list[str]:
    return [text for text, _ in wording_baseline.outcome_lines(done)]


def test_a_run_records_how_it_read_the_numbers() -> None:
    assert cmp.header_of(case("a"), LOADED) == NOW
    assert cmp.header_of(case("a"), replace(LOADED, numerics="float32-matmul:" + "0" * 16)).kernels == "float32-matmul"
    text = store.dumps(cmp.update(None, all_ok(), CHAPTERS, NOW)[0])
    assert "  bos: 'auto: <bos>'\n" in text and "  kernels: plain\n" in text and "  reading: token\n" in text
    assert store.loads(text).header == NOW


def test_a_baseline_of_another_reading_is_refused_before_anything_runs(tmp_path: Path) -> None:
    write(tmp_path, both(), NOW)
    with pytest.raises(gate.SettingsRefused) as refused:
        make(tmp_path, reading="text")
    assert wording_baseline.refusal_text(refused.value.refusal) == (
        f"baseline {PATH} was recorded with model 'tiny' (weights sha256 aaaaaaaaaaaa..., bfloat16, softmax bfloat16, "
        "cpu, token reading, BOS auto: <bos>); this run uses dtype bfloat16, softmax bfloat16, text reading, without "
        "opt-in checks. They differ in reading (recorded token, now text), so their verdicts are not comparable: the "
        "numbers were read another way, so a verdict that moved would tell nothing of the model, and is no bug. "
        "Record a baseline for this model with --gotchas-baseline OTHER.yaml --gotchas-update-baseline, or compare "
        "anyway with --gotchas-baseline-any-model.")
    make(tmp_path, reading="token")  # the same reading: compared


def test_a_baseline_of_another_bos_is_refused_at_the_first_case(tmp_path: Path) -> None:
    """--gotchas-bos never against a baseline whose prompts began with <bos>: what the policy gave is known once
    the model has loaded, so the first case stops the run."""
    write(tmp_path, both(), NOW)
    g = make(tmp_path, reading="token")
    found = g.check(case("a"), replace(LOADED, bos="never: none"), CHAPTERS["sets"])
    assert found.refusal is not None and found.regression is None
    assert wording_baseline.refusal_text(found.refusal) == (
        f"baseline {PATH} was recorded with model 'tiny' (weights sha256 aaaaaaaaaaaa..., bfloat16, softmax bfloat16, "
        "cpu, token reading, BOS auto: <bos>); this run uses model 'tiny' (weights sha256 aaaaaaaaaaaa..., bfloat16, "
        "softmax bfloat16, cpu, token reading, BOS never: none). They differ in bos (recorded auto: <bos>, now never: "
        "none), so their verdicts are not comparable: the numbers were read another way, so a verdict that moved "
        "would tell nothing of the model, and is no bug. Record a baseline for this model with --gotchas-baseline "
        "OTHER.yaml --gotchas-update-baseline, or compare anyway with --gotchas-baseline-any-model.")
    # `always` that gave the same <bos> reads the same prompts
    assert g.check(case("a"), replace(LOADED, bos="always: <bos>"), CHAPTERS["sets"]).refusal is None


def test_an_older_baseline_loads_and_says_what_it_does_not_record(tmp_path: Path) -> None:
    old = store.loads(f"format: 2\ncount: {{pairs: 0, verdicts: 1}}\n{HEADER_YAML}verdicts:\n"
                      "  sets/a: {p_correct: 0.75, p_wrong: 0.125, verdict: ok}\n")
    assert old.header == HEADER and (old.header.reading, old.header.bos, old.header.kernels) == ("", "", "")
    store.write(tmp_path / PATH, old)
    done = finish(make(tmp_path, reading="text"), [case("a")])
    assert done.refusal is None
    assert ("  the baseline does not record its reading, bos, kernels (an older file): a difference they make cannot "
            "be told from the model's; record it again to record them") in lines(done)


def test_an_older_baseline_with_moved_probabilities_is_no_bug_report(tmp_path: Path) -> None:
    write(tmp_path, both(), HEADER)
    done = finish(make(tmp_path), [case("a", 0.5, 0.25), *all_ok()[1:]])
    assert ("  numerics match the baseline's (0000000000000000), yet 1 cases' probabilities differ from it "
            "(sets/a); its reading, bos, kernels are not recorded, so they may be the cause; verdicts that moved: "
            "none") in lines(done)
    assert not any("bug" in line for line in lines(done))


def test_a_library_version_that_changed_is_named_as_the_likely_cause(tmp_path: Path) -> None:
    """The fingerprint does not probe every path a reading takes: with it unchanged and transformers changed, the
    version is the likely cause, and the verdicts that moved are named."""
    write(tmp_path, both(), NOW)
    newer = replace(LOADED, transformers_version="5.25.0")
    done = finish(make(tmp_path, reading="token"), [case("a", 0.5, 0.25), case("b", *MISS_), *all_ok()[2:]], newer)
    assert lines(done)[1:3] == [
        "  recorded with other library versions: transformers 5.24.0 -> 5.25.0",
        "  numerics match the baseline's (0000000000000000), but it was recorded with transformers 5.24.0 (now "
        "5.25.0): that is the likely cause, on a path the fingerprint does not probe; 2 cases' probabilities differ "
        "from it (sets/a, sets/b); verdicts that moved: sets/b"]


def test_with_everything_recorded_the_same_a_difference_is_a_bug(tmp_path: Path) -> None:
    write(tmp_path, both(), NOW)
    done = finish(make(tmp_path, reading="token"), [case("a", 0.5, 0.25), *all_ok()[1:]])
    assert ("  numerics match the baseline's (0000000000000000), yet 1 cases' probabilities differ from it: that is a "
            "bug, please report it: sets/a") in lines(done)


def test_a_kept_verdicts_update_is_marked(tmp_path: Path) -> None:
    """`-k sets` with a newer transformers over a file of both chapters: floats keeps 5.24.0's verdicts, and the file
    says so where a reviewer of the diff sees it; a later run of every chapter makes it whole again."""
    write(tmp_path, both(), NOW)
    newer = replace(LOADED, transformers_version="5.25.0")
    updating = make(tmp_path, reading="token", update=True)
    done = finish(updating, all_ok(), newer)
    updating.record(done, all_ok(), CHAPTERS)
    assert done.written is not None
    assert wording_baseline.update_line(done.written, PATH) == (
        f"baseline {PATH} written: 2 pairs and 4 verdicts recorded (0 changed), 0 removed, 3 kept from cases that "
        "did not run; the file is mixed: 1 kept chapters were recorded with another transformers than its header "
        "says, and its `kept:` section names them (floats)")
    text = (tmp_path / PATH).read_text()
    assert "  transformers: 5.25.0\n" in text and "\nkept:\n  floats: {transformers: 5.24.0}\npairs:\n" in text
    mixed = store.read(tmp_path / PATH)
    assert mixed.kept == {"floats": {"transformers": "5.24.0"}}
    assert mixed.recorded_with("floats") == NOW and mixed.recorded_with("sets") == replace(NOW, transformers="5.25.0")
    # compared now, the kept chapter's moved probability is put down to its own transformers, not called a bug
    done = finish(make(tmp_path, reading="token"), [case("x", 0.5, 0.25, chapter="floats")], newer)
    assert any("recorded with transformers 5.24.0 (now 5.25.0): that is the likely cause" in line
               for line in lines(done))
    whole = make(tmp_path, reading="token", update=True)
    done = finish(whole, both(), newer)
    whole.record(done, both(), CHAPTERS)
    assert store.read(tmp_path / PATH).kept == {} and "kept:" not in (tmp_path / PATH).read_text()


def test_a_bad_kept_section_is_refused_naming_it() -> None:
    text = f"format: 2\ncount: {{pairs: 0, verdicts: 0}}\n{HEADER_YAML}kept:\n  floats: {{colour: red}}\n"
    with pytest.raises(store.BaselineError) as error:
        store.loads(text, "b.yaml")
    assert str(error.value) == (
        "baseline b.yaml is not a pytest-gotchas baseline: kept: floats: expected a mapping of model fields (name, "
        "weights_sha256, dtype, softmax_dtype, device, hardware, numerics, torch, transformers ...) to strings, got "
        "{'colour': 'red'}. Fix or delete the file, then record it again with --gotchas-update-baseline.")


def test_other_kernels_and_other_versions_name_both(tmp_path: Path) -> None:
    write(tmp_path, both(), NOW)
    newer = replace(LOADED, transformers_version="5.25.0", numerics="1" * 16)
    done = finish(make(tmp_path, reading="token"), [case("a", 0.5, 0.25), case("b", *MISS_), *all_ok()[2:]], newer)
    assert lines(done)[2:4] == [
        "  same model, other kernels (numerics 0000000000000000 on cpu AVX512, now 1111111111111111 on cpu AVX512): "
        "probabilities differ from the baseline's in 2 cases; 1 verdicts changed",
        "  it was also recorded with transformers 5.24.0 (now 5.25.0): the versions are as likely a cause as the "
        "kernels; verdicts that moved: sets/b"]
