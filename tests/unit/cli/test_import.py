"""`gotchas import FILE.jsonl OUT.yaml` (cli/imports.py over cases/imported.py): the example file of the repository
imports into a chapter that collects, with its dropped and refused records reported by line, id and reason; a cut a
model's tokenizer cannot read, and a case collection refuses, are refused too; and the command's own errors. Programs
are executed for real (python3.11); scoring uses the tiny model of helpers/tinymodel.py, for its tokenizer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import REPO
from helpers.tinymodel import build_tiny_model

from pytest_gotchas.cli import main

EXAMPLE = REPO / "examples" / "import" / "pairs.jsonl"


def records(*found: dict[str, object]) -> str:
    return "".join(json.dumps(r) + "\n" for r in found)


def test_the_example_imports_into_a_chapter_that_collects(tmp_path: Path, monkeypatch, capsys, py311) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["import", str(EXAMPLE), "imported.yaml"]) == 0
    out = capsys.readouterr().out
    source = str(EXAMPLE)
    assert out == (
        f"{source}: 45 records: 36 pairs, 2 twins, 1 dropped, 6 refused\n"
        "wrote imported.yaml: 36 pairs and 2 twins, 76 cases\n"
        "dropped (the same program twice):\n"
        f"  {source}:39: record 'written-twice'\n"
        "refused:\n"
        f"  {source}:40: not JSON: Expecting ',' delimiter at column 36\n"
        f"  {source}:41: record 'no-partner': missing key 'b'\n"
        f"  {source}:42: record 'aborts': program 'a': the interpreter crashed: killed by SIGABRT (seed 1)\n"
        f"  {source}:43: record 'set-order-varies': program 'a': its output changes between runs: one run prints "
        "'cherry', another \"apple'\", at character 42 of its session\n"
        f"  {source}:44: record 'one-output-starts-the-other': program 'a' prints the start of what program 'b' "
        "prints (a: 'ab', b: 'abc'): the two never print different text at one point\n"
        f"  {source}:45: record 'same-output-no-misreading': both programs print '3\\n': they make a twin, which is "
        "cut where a misreading parts from that output; give it as the record's \"wrong\"\n"
        "the cuts were read by no tokenizer: with --model, a cut the model cannot read is refused too\n")
    chapter = yaml.safe_load((tmp_path / "imported.yaml").read_text(encoding="utf-8"))
    assert (chapter["chapter"], len(chapter["pairs"]), len(chapter["twins"])) == ("imported", 36, 2)
    assert chapter["pairs"]["rows-built-apart"] == ["rows-built-apart-a", "rows-built-apart-b"]
    cases = {c["id"]: c for c in chapter["cases"]}
    # each member's wrong candidate is its partner's output at the cut
    assert (cases["rows-built-apart-a"]["transcript"].endswith("[[1, 0], [█"), cases["rows-built-apart-a"]["correct"],
            cases["rows-built-apart-a"]["wrong"], cases["rows-built-apart-b"]["correct"]) == (True, "0", "1", "1")
    assert cases["sort-two-ways-b"]["transcript"].endswith(">>> x\n[█")
    assert (cases["sort-two-ways-b"]["correct"], cases["sort-two-ways-b"]["wrong"]) == ("1", "3")
    collected = subprocess.run([sys.executable, "-m", "pytest", "--gotchas", "imported.yaml", "--collect-only", "-q",
                                "-p", "no:cacheprovider", "-p", "no:randomly"], cwd=tmp_path, capture_output=True,
                               text=True)
    assert collected.returncode == 0, collected.stdout + collected.stderr
    assert "76 tests collected" in collected.stdout


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", {})


def test_a_cut_the_models_tokenizer_cannot_read_is_refused(tmp_path: Path, monkeypatch, capsys, tiny: Path,
                                                            py311) -> None:
    """The tiny tokenizer knows printable ASCII only: both accented letters are its one unknown token, so the token
    both sides share reaches past the cut (the divergence lies inside it) and the cut cannot be read."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r.jsonl").write_text(records({"id": "accent", "a": "print('é')", "b": "print('è')"},
                                              {"id": "digits", "a": "print(12)", "b": "print(13)"}), encoding="utf-8")
    assert main(["import", "r.jsonl", "out.yaml", "--model", str(tiny), "--cache-dir", str(tmp_path / "cache"),
                 "--authoring-runs", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("r.jsonl: 2 records: 1 pair, 0 twins, 0 dropped, 1 refused\n"
                          "wrote out.yaml: 1 pair and 0 twins, 2 cases\nrefused:\n")
    assert ("  r.jsonl:1: record 'accent': model model cannot read the cut of accent-a: cut not representable by "
            "this tokenizer: ") in out
    assert out.endswith("""correct "é" -> []; wrong "è" -> []: a token shared by both sides reaches past the cut\n""")
    assert "the cuts were read by no tokenizer" not in out


def test_a_case_collection_refuses_is_refused_with_its_words(tmp_path: Path, monkeypatch, capsys, py311) -> None:
    """Imported under two runs (hash seeds 1 and 2) program a prints False; collection's third run (seed 3) prints
    True: collection refuses the case, and the record with it, leaving the rest."""
    monkeypatch.chdir(tmp_path)
    third = "import os\nprint(os.environ['PYTHONHASHSEED'] == '3')"
    (tmp_path / "r.jsonl").write_text(records({"id": "seed-three", "a": third, "b": "print(True)"},
                                              {"id": "plain", "a": "print(1)", "b": "print(2)"}), encoding="utf-8")
    assert main(["import", "r.jsonl", "out.yaml", "--authoring-runs", "2", "--runs", "3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("r.jsonl: 2 records: 1 pair, 0 twins, 0 dropped, 1 refused\n"
                          "wrote out.yaml: 1 pair and 0 twins, 2 cases\nrefused:\n"
                          "  r.jsonl:1: record 'seed-three': collection refuses it: out.yaml:")
    assert "the answer changes between runs: it holds under PYTHONHASHSEED=1 but not under PYTHONHASHSEED=3" in out
    assert list(yaml.safe_load((tmp_path / "out.yaml").read_text(encoding="utf-8"))["pairs"]) == ["plain"]


def error_of(capsys: pytest.CaptureFixture[str], code: int) -> str:
    assert code == 1
    return capsys.readouterr().err


def test_the_commands_own_errors(tmp_path: Path, monkeypatch, capsys, py311) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r.jsonl").write_text(records({"id": "x", "a": "print(1)", "b": "print(1)"}), encoding="utf-8")
    (tmp_path / "taken.yaml").write_text("chapter: taken\n", encoding="utf-8")
    assert error_of(capsys, main(["import", "r.jsonl", "taken.yaml"])) == (
        "gotchas import: error: taken.yaml exists: `gotchas import` writes a new chapter (remove it or choose another "
        "name)\n")
    assert error_of(capsys, main(["import", "r.jsonl", "no/such/out.yaml"])) == (
        "gotchas import: error: no/such/out.yaml: the folder no/such does not exist\n")
    assert error_of(capsys, main(["import", "missing.jsonl", "out.yaml"])) == (
        "gotchas import: error: cannot read missing.jsonl: No such file or directory\n")
    (tmp_path / "latin.jsonl").write_bytes(b'{"id": "caf\xe9"}\n')
    assert error_of(capsys, main(["import", "latin.jsonl", "out.yaml"])) == (
        "gotchas import: error: latin.jsonl is not UTF-8 text (invalid continuation byte at byte 11)\n")
    code = main(["import", "r.jsonl", "out.yaml"])
    captured = capsys.readouterr()
    assert code == 1 and captured.out.startswith("r.jsonl: 1 record: 0 pairs, 0 twins, 1 dropped, 0 refused\n")
    assert captured.err == "gotchas import: error: no record of r.jsonl makes a pair or a twin: nothing was written\n"
    assert not (tmp_path / "out.yaml").exists()


def test_help_names_the_record_format(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["import", "--help"])
    shown = capsys.readouterr().out
    assert shown.startswith("usage: gotchas import [-h] ")
    assert '{"id": "sorted-vs-sort", "a": "x = [3, 1, 2]\\nsorted(x)"' in shown
