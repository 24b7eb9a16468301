"""Baseline files that cannot be read whole: an entry of one chapter that the reader refuses (a `<chapter>/<pair>`
key with a `/` in the pair id, as an older version recorded; a probability of .nan) is refused when comparing, and
dropped (and named) when recording, so that the other chapters' entries are kept; a file nested 10,000 levels deep is
one error naming the limit; the temporary files of a killed update are removed by the next one."""

from __future__ import annotations

from pathlib import Path

import pytest
from gotchas_helpers import make_case, make_run

from pytest_gotchas.baseline import compare, gate, store
from pytest_gotchas.report import wording
from pytest_gotchas.results.baselines import Header
from pytest_gotchas.results.schema import ChapterInfo

HEADER = Header(name="tiny", weights_sha256="a" * 64, dtype="bfloat16", softmax_dtype="bfloat16", device="cpu",
                hardware="cpu AVX512", numerics="0" * 16, torch="2.13.0", transformers="5.24.0")
MODEL = """\
model: {device: cpu, dtype: bfloat16, hardware: cpu AVX512, name: tiny, numerics: '0000000000000000',
  softmax_dtype: bfloat16, torch: 2.13.0, transformers: 5.24.0, weights_sha256: %s}
""" % ("a" * 64)
# Chapter `sets` ran before this version, with a pair id that had a `/`; chapter `floats` is fine.
OLD = """\
format: 2
count: {pairs: 2, verdicts: 3}
%spairs:
  floats/ab: pass
  sets/x/y: pass
verdicts:
  floats/a: {p_correct: 0.75, p_wrong: 0.125, verdict: ok}
  floats/b: {p_correct: 0.75, p_wrong: 0.125, verdict: ok}
  sets/c: {p_correct: .nan, p_wrong: 0.125, verdict: MISS}
""" % MODEL
DROPPED = ["pairs: 'sets/x/y': keys are \"<chapter>/<id>\", each of letters, digits, `-`, `_` and `.`",
           "verdicts: sets/c: p_correct must be a probability or a mapping from primer to probability, got nan"]


def sets_chapter() -> ChapterInfo:
    return ChapterInfo(name="sets", label="ch sets", title="sets", path="sets.yaml", implementation_defined=False,
                       case_ids=["c", "d"], pairs={"cd": ["c", "d"]}, twins={})


def sets_results() -> list:
    return [make_case(case_id, "sets", [make_run(0.75, 0.125)]) for case_id in ("c", "d")]


def test_comparing_with_an_unreadable_entry_is_refused_with_the_way_out(tmp_path) -> None:
    path = tmp_path / "b.yaml"
    path.write_text(OLD, encoding="utf-8")
    with pytest.raises(store.BaselineError) as error:
        store.read(path)
    assert str(error.value) == (
        f"baseline {path} is not a pytest-gotchas baseline: pairs: 'sets/x/y': keys are \"<chapter>/<id>\", each of "
        "letters, digits, `-`, `_` and `.`. Fix or delete that entry, or record again with --gotchas-update-baseline, "
        "which drops the entries it cannot read and keeps every other.")


def test_a_nan_probability_is_refused_when_comparing(tmp_path) -> None:
    path = tmp_path / "b.yaml"
    path.write_text(OLD.replace("  sets/x/y: pass\n", "").replace("pairs: 2", "pairs: 1"), encoding="utf-8")
    with pytest.raises(store.BaselineError) as error:
        store.read(path)
    assert str(error.value) == (
        f"baseline {path} is not a pytest-gotchas baseline: verdicts: sets/c: p_correct must be a probability or a "
        "mapping from primer to probability, got nan. Fix or delete that entry, or record again with "
        "--gotchas-update-baseline, which drops the entries it cannot read and keeps every other.")


def test_recording_drops_the_unreadable_entries_and_keeps_every_other(tmp_path) -> None:
    path = tmp_path / "b.yaml"
    path.write_text(OLD, encoding="utf-8")
    assert store.read(path, lenient=True).unreadable == DROPPED
    stats = store.rewrite(path, lambda old: compare.update(old, sets_results(), {"sets": sets_chapter()}, HEADER))
    again = store.read(path)  # what was written reads back whole
    assert again.pairs == {"floats/ab": "pass", "sets/cd": "pass"}
    assert sorted(again.verdicts) == ["floats/a", "floats/b", "sets/c", "sets/d"]
    assert stats.dropped == DROPPED
    assert wording.update_line(stats, "b.yaml") == (
        "baseline b.yaml written: 1 pairs and 2 verdicts recorded (0 changed), 0 removed, 3 kept from cases that did "
        "not run; 2 entries it could not read were dropped (pairs: 'sets/x/y': keys are \"<chapter>/<id>\", each of "
        "letters, digits, `-`, `_` and `.`; verdicts: sets/c: p_correct must be a probability or a mapping from "
        "primer to probability, got nan)")


def test_the_gate_reads_leniently_only_when_recording(tmp_path) -> None:
    path = tmp_path / "baselines" / "tiny-bfloat16-cpu.yaml"
    path.parent.mkdir()
    path.write_text(OLD, encoding="utf-8")
    recording = gate.make_gate(tmp_path, None, ["tiny"], "bfloat16", "cpu", None, update=True)
    assert recording.files[path].unreadable == DROPPED
    with pytest.raises(store.BaselineError, match="^baseline .* is not a pytest-gotchas baseline: pairs: 'sets/x/y'"
                                                  ": keys are"):
        gate.make_gate(tmp_path, None, ["tiny"], "bfloat16", "cpu", None)


def test_a_file_cut_short_is_still_refused_when_recording(tmp_path) -> None:
    """Leniency is for entries: a count that does not add up means lost lines, which recording cannot bring back."""
    path = tmp_path / "b.yaml"
    path.write_text(OLD.replace("  floats/b: {p_correct: 0.75, p_wrong: 0.125, verdict: ok}\n", ""), encoding="utf-8")
    with pytest.raises(store.BaselineError, match="the file says 2 pairs and 3 verdicts but holds 2 pairs and 2 "
                                                  "verdicts: it was cut short or edited by hand"):
        store.read(path, lenient=True)


# -- depth ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("deep", ["[" * 10_000 + "]" * 10_000, "{a: " * 10_000 + "1" + "}" * 10_000])
def test_ten_thousand_levels_are_one_error(tmp_path, deep: str) -> None:
    path = tmp_path / "b.yaml"
    path.write_text(OLD + f"  floats/z: {deep}\n", encoding="utf-8")
    with pytest.raises(store.BaselineError) as error:
        store.read(path)
    assert str(error.value) == (
        f"baseline {path} is not a pytest-gotchas baseline: line {OLD.count(chr(10)) + 1}: it nests more than 100 "
        "levels deep (a baseline needs 5). Fix or delete the file, then record it again with "
        "--gotchas-update-baseline.")


# -- temporary files of a killed update -----------------------------------------------------------------------------


def test_an_update_removes_the_temporary_files_a_killed_update_left(tmp_path) -> None:
    path = tmp_path / "baselines" / "tiny-bfloat16-cpu.yaml"
    path.parent.mkdir()
    stale = [path.parent / ".tiny-bfloat16-cpu.yaml.k1ll3d_x.tmp", path.parent / ".tiny-bfloat16-cpu.yaml.abcdefgh.tmp"]
    others = [path.parent / ".other-bfloat16-cpu.yaml.abcdefgh.tmp",  # another file's: its own lock guards it
              path.parent / ".tiny-bfloat16-cpu.yaml.notmine.tmp", path.parent / "notes.tmp"]
    for file in stale + others:
        file.write_text("half a baseline", encoding="utf-8")
    store.rewrite(path, lambda old: compare.update(old, sets_results(), {"sets": sets_chapter()}, HEADER))
    assert sorted(p.name for p in path.parent.iterdir()) == sorted(
        [path.name, path.name + ".lock", *(p.name for p in others)])


def test_a_killed_write_leaves_a_temporary_file_that_only_its_own_name_matches(tmp_path, monkeypatch) -> None:
    """What write_atomic leaves when its process dies mid-write is exactly what the next update removes."""
    from pytest_gotchas import files

    path = tmp_path / "b.yaml"

    def killed(fd: int, *args: object, **kwargs: object):
        raise SystemExit  # as if the process died here: the except clause of write_atomic does not run for a SIGKILL

    monkeypatch.setattr(files.os, "fdopen", killed)
    monkeypatch.setattr(files.Path, "unlink", lambda self, missing_ok=False: None)  # no cleanup, as under SIGKILL
    with pytest.raises(SystemExit):
        files.write_atomic(path, "x")
    monkeypatch.undo()
    left = list(tmp_path.iterdir())
    assert len(left) == 1 and left[0].name.startswith(".b.yaml.") and left[0].name.endswith(".tmp")
    assert files.remove_stale_temporaries(path) == left and not list(tmp_path.iterdir())
