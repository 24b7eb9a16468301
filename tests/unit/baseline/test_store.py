"""store.py: the baseline file, sorted one entry a line and read back exactly, written atomically, never taken for
a chapter, and refused with a message naming the file and the problem; where it lives by default. Results are
built by hand (helpers/baselines.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import yaml
from helpers.baselines import (DROPPED, HEADER, MISS_, PARTLY_UNREADABLE, SHA, case, recorded, run, sets_chapter,
                               sets_results)

from helpers.fifo import fifo, within

from pytest_gotchas.baseline import compare, store
from pytest_gotchas.cases.chapter import looks_like_chapter
from pytest_gotchas.report import wording_baseline


def test_dumps_is_sorted_one_line_per_entry_and_reads_back_exactly() -> None:
    primed = case("c", runs=[run(0.4296875, 0.125, "True-first"), run(0.5, 0.25, "False-first")])
    baseline = recorded([case("b"), case("a", 0.0001239776611328125, 5.960464477539063e-08), primed, case("d")])
    text = store.dumps(baseline)
    assert store.loads(text) == baseline
    body = [line for line in text.splitlines() if not line.startswith("#")]
    assert body[:3] == [f"format: {store.FORMAT}", "count: {pairs: 2, verdicts: 4}", "model:"]
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
    ("", "expected a mapping with keys format, count, model, kept, primers, pairs, verdicts; got nothing (an empty "
         "file)"),
    ("- 1\n", "got a list"),
    ("format: 2\ncases: {}\n", "unknown key(s) cases"),
    ("format: 1\n", "format: expected 2 or 3 or 4 or 5, got 1"),
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


# -- where it lives --------------------------------------------------------------------------------------------------


def test_default_path_uses_the_device_kind() -> None:
    assert store.default_path(Path("/r"), "gemma-3-270m", "bfloat16", "cuda:1") == Path("/r/baselines/gemma-3-270m-bfloat16-cuda.yaml")
    assert store.default_path(Path("/r"), "m", "bfloat16", "cpu", store.checks_of(True, True)) == Path(
        "/r/baselines/m-bfloat16-cpu+precision-check+variants.yaml")


# -- the baseline package stays pure ---------------------------------------------------------------------------------


def test_the_module_is_pure() -> None:
    import subprocess

    code = ("import sys, pytest_gotchas.baseline; "
            "print(sorted(m for m in ('torch', 'transformers', 'pytest') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# -- entries it cannot read (hostile input round two) ----------------------------------------------------------------


def test_comparing_with_an_unreadable_entry_is_refused_with_the_way_out(tmp_path) -> None:
    path = tmp_path / "b.yaml"
    path.write_text(PARTLY_UNREADABLE, encoding="utf-8")
    with pytest.raises(store.BaselineError) as error:
        store.read(path)
    assert str(error.value) == (
        f"baseline {path} is not a pytest-gotchas baseline: pairs: 'sets/x/y': keys are \"<chapter>/<id>\", each of "
        "letters, digits, `-`, `_` and `.`. Fix or delete that entry, or record again with --gotchas-update-baseline, "
        "which drops the entries it cannot read and keeps every other.")


def test_a_nan_probability_is_refused_when_comparing(tmp_path) -> None:
    path = tmp_path / "b.yaml"
    text = PARTLY_UNREADABLE.replace("  sets/x/y: pass\n", "").replace("pairs: 2", "pairs: 1")
    path.write_text(text, encoding="utf-8")
    with pytest.raises(store.BaselineError) as error:
        store.read(path)
    assert str(error.value) == (
        f"baseline {path} is not a pytest-gotchas baseline: verdicts: sets/c: p_correct must be a probability or a "
        "mapping from primer to probability, got nan. Fix or delete that entry, or record again with "
        "--gotchas-update-baseline, which drops the entries it cannot read and keeps every other.")


def test_recording_drops_the_unreadable_entries_and_keeps_every_other(tmp_path) -> None:
    path = tmp_path / "b.yaml"
    path.write_text(PARTLY_UNREADABLE, encoding="utf-8")
    assert store.read(path, lenient=True).unreadable == DROPPED
    stats = store.rewrite(path, lambda old: compare.update(old, sets_results(), {"sets": sets_chapter()}, HEADER))
    again = store.read(path)  # what was written reads back whole
    assert again.pairs == {"floats/ab": "pass", "sets/cd": "pass"}
    assert sorted(again.verdicts) == ["floats/a", "floats/b", "sets/c", "sets/d"]
    assert stats.dropped == DROPPED
    assert wording_baseline.update_line(stats, "b.yaml") == (
        "baseline b.yaml written: 1 pairs and 2 verdicts recorded (0 changed), 0 removed, 3 kept from cases that did "
        "not run; 2 entries it could not read were dropped (pairs: 'sets/x/y': keys are \"<chapter>/<id>\", each of "
        "letters, digits, `-`, `_` and `.`; verdicts: sets/c: p_correct must be a probability or a mapping from "
        "primer to probability, got nan)")


def test_a_file_cut_short_is_still_refused_when_recording(tmp_path) -> None:
    """Leniency is for entries: a count that does not add up means lost lines, which recording cannot bring back."""
    path = tmp_path / "b.yaml"
    cut = PARTLY_UNREADABLE.replace("  floats/b: {p_correct: 0.75, p_wrong: 0.125, verdict: ok}\n", "")
    path.write_text(cut, encoding="utf-8")
    with pytest.raises(store.BaselineError, match="the file says 2 pairs and 3 verdicts but holds 2 pairs and 2 "
                                                  "verdicts: it was cut short or edited by hand"):
        store.read(path, lenient=True)


# -- depth (hostile input round two) ---------------------------------------------------------------------------------


@pytest.mark.parametrize("deep", ["[" * 10_000 + "]" * 10_000, "{a: " * 10_000 + "1" + "}" * 10_000])
def test_ten_thousand_levels_are_one_error(tmp_path, deep: str) -> None:
    path = tmp_path / "b.yaml"
    path.write_text(PARTLY_UNREADABLE + f"  floats/z: {deep}\n", encoding="utf-8")
    with pytest.raises(store.BaselineError) as error:
        store.read(path)
    assert str(error.value) == (
        f"baseline {path} is not a pytest-gotchas baseline: line {PARTLY_UNREADABLE.count(chr(10)) + 1}: it nests "
        "more than 100 levels deep (a baseline needs 5). Fix or delete the file, then record it again with "
        "--gotchas-update-baseline.")


# -- temporary files of a killed update (hostile input round two) ----------------------------------------------------


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


def test_a_baseline_that_is_a_fifo_or_a_device_is_refused_by_its_kind(tmp_path: Path) -> None:
    """A FIFO blocked the run for ever; a link to /dev/zero would have read without end."""
    pipe = fifo(tmp_path / "b.yaml")

    def read() -> str:
        with pytest.raises(store.BaselineError) as error:
            store.read(pipe)
        return str(error.value)

    assert within(read, pipe) == f"cannot read baseline {pipe}: it is a named pipe (FIFO), not a regular file"
    zero = tmp_path / "z.yaml"
    zero.symlink_to("/dev/zero")
    with pytest.raises(store.BaselineError, match=r": it is a character device, not a regular file$"):
        store.read(zero)
