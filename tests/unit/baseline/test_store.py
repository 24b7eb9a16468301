"""store.py: the baseline file, sorted one entry a line and read back exactly, written atomically, never taken for
a chapter, and refused with a message naming the file and the problem; where it lives by default. Results are
built by hand (helpers/baselines.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import yaml
from helpers.baselines import MISS_, SHA, case, recorded, run

from pytest_gotchas.baseline import store
from pytest_gotchas.cases.chapter import looks_like_chapter


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
