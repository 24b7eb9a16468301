"""`gotchas new`, the case-authoring command: from a snippet to a printed or appended case, the runs it checks a
new case in (far more than collection's), and its refusals.

The command runs in-process (`main([...])`, output through capsys) except for one subprocess check of
`python -m pytest_gotchas new --help`. Scoring uses the tiny model of helpers/tinymodel.py, whose logits are set
by hand; tests/plugin/test_cli.py runs pytest on what the command writes.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from helpers import REPO
from helpers.authoring import (CHAPTER, LATE_CLOSURE, LATE_CLOSURE_CASE, LATE_CLOSURE_TRANSCRIPT, RULES, error_of,
                               new, printed_case)
from helpers.chapters import chapter_text
from helpers.hostile import CASE, latin1
from helpers.tinymodel import build_tiny_model

from pytest_gotchas.cases.chapter import load_chapter
from pytest_gotchas.cli import main
from pytest_gotchas.cli.new import AUTHORING_RUNS


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", RULES)


# -- help ------------------------------------------------------------------------------------------------------------


def test_help_of_the_subcommand_as_a_module() -> None:
    done = subprocess.run([sys.executable, "-m", "pytest_gotchas", "new", "--help"], capture_output=True, text=True,
                          cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: gotchas new [-h] ")
    for flag in ("--interpreter VERSION", "--env NAME=VALUE", "--model NAME", "--python VERSION=PATH", "--runs RUNS",
                 "--to CHAPTER.yaml", "--id ID", "--lead-in CODE", "examples:"):
        assert flag in done.stdout


def test_help_of_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    assert "new       write a case from a snippet and its misreading" in capsys.readouterr().out


def test_no_subcommand_prints_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert capsys.readouterr().out.startswith("usage: gotchas [-h] COMMAND ...")


# -- from a snippet to a case ----------------------------------------------------------------------------------------


def test_snippet_to_printed_case(snippet, capsys: pytest.CaptureFixture[str], py311) -> None:
    assert main(new(snippet(LATE_CLOSURE), "--wrong", "[0, 1, 2]", "--id", "late-closure")) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"python {py311.version} ({py311.path}); no variables set; 3 run(s)\n"
                          + LATE_CLOSURE_TRANSCRIPT)
    assert textwrap.dedent("""\
        cut at line 6 of the transcript, after '[':
          correct '2'          Python prints   '[2, 2, 2]\\n'
          wrong   '0'          the misreading  '[0, 1, 2]\\n'
        """) in out
    # A printed case names the interpreter only when --python is given: it may be pasted into any chapter.
    assert printed_case(out) == LATE_CLOSURE_CASE


def test_append_to_a_file_that_ends_with_the_cases(snippet, capsys, tmp_path: Path, py311) -> None:
    chapter = tmp_path / "ch.yaml"
    chapter.write_text(CHAPTER.split("\n# pairs belong here\n")[0].rstrip("\n"))  # no final newline either
    assert main(new(snippet(LATE_CLOSURE), "--wrong", "[0, 1, 2]", "--to", str(chapter), "--id", "late-closure")) == 0
    assert chapter.read_text().endswith('      █\n    correct: "0"\n    wrong: "1"\n\n' + LATE_CLOSURE_CASE)


def test_to_a_new_chapter_file(snippet, capsys, tmp_path: Path, py311) -> None:
    chapter = tmp_path / "7-binding.yaml"
    code = main(new(snippet(LATE_CLOSURE), "--wrong", "[0, 1, 2]", "--to", str(chapter), "--id", "late-closure",
                    "--title", "binding: when names get values"))
    assert code == 0, capsys.readouterr()
    assert chapter.read_text() == ('chapter: binding\nnumber: 7\ntitle: "binding: when names get values"\n'
                                   'interpreter: "3.11"\n\ncases:\n' + LATE_CLOSURE_CASE)
    assert load_chapter(chapter).label == "ch.7 binding: when names get values"


def test_case_after_the_chapters_prelude_and_primers(snippet, capsys, tmp_path: Path, tiny: Path, py311) -> None:
    chapter = tmp_path / "framed.yaml"
    chapter.write_text(textwrap.dedent("""\
        chapter: framed
        title: framed
        prelude: |
          >>> xs = [1, 2]
        primers:
          one: |
            >>> 0
            0
          two: |
            >>> 1
            1
        cases:
          - id: first
            transcript: |-
              >>> xs
              [█
            correct: "1"
            wrong: "2"
        """))
    code = main(new(snippet("xs + [3]\n"), "--wrong", "[1, 2]", "--to", str(chapter), "--id", "extended",
                    "--model", str(tiny), "--cache-dir", str(tmp_path / "cache")))
    out = capsys.readouterr().out
    assert code == 0, out
    # Executed after the prelude (xs is defined) under the first primer; the case holds only its own lines.
    assert (f"python {py311.version} ({py311.path}); no variables set; 3 run(s); shown after the chapter's "
            "primer 'one' and the prelude\n>>> xs + [3]\n[1, 2, 3]\n") in out
    # Scored under both primers, as pytest would.
    assert "  token reading  [one]: one token each, at the cut\n" in out
    assert "  token reading  [two]: one token each, at the cut\n" in out
    added = load_chapter(chapter).cases[1]
    assert (added.id, added.transcript.prompt, added.correct, added.wrong) == ("extended", ">>> xs + [3]\n[1, 2",
                                                                               ",", "]")


def test_shell_command_with_env_on_stdin(capsys, monkeypatch: pytest.MonkeyPatch, py312) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO('python3.12 -c "print(set(str(x) for x in range(5)))"\n'))
    code = main(new("--env", "PYTHONHASHSEED=0", "--wrong", "{'0', '1', '2', '3', '4'}"))
    out = capsys.readouterr().out
    assert code == 0, out
    # The environment goes on the command line, where collection reads a shell case's environment.
    assert printed_case(out) == (
        "  - id: new-case\n"
        "    transcript: |-\n"
        "      $ PYTHONHASHSEED=0 python3.12 -c \"print(set(str(x) for x in range(5)))\"\n"
        "      {'█\n"
        '    correct: "2"\n'
        '    wrong: "0"\n')


def test_pasted_transcript_keeps_its_input_and_reruns_it(snippet, capsys, py311) -> None:
    code = main(new(snippet(">>> x = 5\n>>> x\n6\n"), "--wrong", "6"))
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("(ignoring 1 pasted output line(s): the output is executed, not copied)\n")
    assert printed_case(out) == '  - id: new-case\n    transcript: |-\n      >>> x = 5\n      >>> x\n      █\n' \
                                '    correct: "5"\n    wrong: "6"\n'


# -- refusals: the exact messages, and nothing written ---------------------------------------------------------------


def test_unknown_interpreter(snippet, capsys) -> None:
    err = error_of(capsys, main(new(snippet("1\n"), "--interpreter", "3.99", "--wrong", "2")))
    assert err.startswith("gotchas new: error: no working python3.99 found (tried: ")
    assert err.endswith("; point to one with --python 3.99=/path/to/python3.99\n")


def test_crash(snippet, capsys, py311) -> None:
    code = main(new(snippet("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)\n"), "--wrong", "1"))
    assert error_of(capsys, code) == ("gotchas new: error: the interpreter crashed: killed by SIGSEGV (seed 1); "
                                      f"a case must run to completion under python {py311.version}\n")


def test_timeout(snippet, capsys, py311) -> None:
    code = main(new(snippet("while True: pass\n"), "--wrong", "1", "--timeout", "0.5"))
    assert error_of(capsys, code) == ("gotchas new: error: the snippet did not finish (killed after the timeout, "
                                      f"seed 1); a case must run to completion under python {py311.version} within "
                                      "--timeout 0.5s\n")


def test_misreading_identical_to_the_output(snippet, capsys, py311) -> None:
    code = main(new(snippet("[1, 2, 3]\n"), "--wrong", "[1, 2, 3]"))
    assert error_of(capsys, code) == ("gotchas new: error: the misreading '[1, 2, 3]' is exactly what Python prints: "
                                      "it is not a misreading\n")


def test_misreading_that_stops_early(snippet, capsys, py311) -> None:
    code = main(new(snippet("print('a'); print('b')\n"), "--wrong", "a"))
    assert error_of(capsys, code) == ("gotchas new: error: Python's output 'a\\nb\\n' goes on where the misreading "
                                      "'a\\n' ends: they never differ at one character; give the whole output a careless "
                                      "reader expects\n")


def test_snippet_that_prints_nothing(snippet, capsys, py311) -> None:
    code = main(new(snippet("x = 1\n"), "--wrong", "1"))
    assert error_of(capsys, code) == ("gotchas new: error: the snippet prints nothing after its last input line; end "
                                      "it with the code whose output is misread\n")


@pytest.mark.parametrize("args, message", [
    (["--to", "x.yaml"], "--to needs --id, the new case's id"),
    (["--id", "b@d"], "--id 'b@d': use letters, digits, `-`, `_` and `.`, starting with a letter or digit"),
    (["--softmax-dtype", "float16"], "--softmax-dtype float16 cannot read a bfloat16 model: the softmax at the cut "
                                     "runs in the model's dtype or in float32 (finer probabilities); leave "
                                     "--softmax-dtype out, or give float32"),
])
def test_bad_options(snippet, capsys, args: list[str], message: str) -> None:
    assert error_of(capsys, main(new(snippet("1\n"), "--wrong", "2", *args))) == f"gotchas new: error: {message}\n"


@pytest.mark.parametrize("args, message", [
    (["--interpreter", "three"], "argument --interpreter: expects a version such as 3.12, got 'three'"),
    (["--env", "PYTHONHASHSEED"], "argument --env: expects NAME=VALUE (e.g. PYTHONHASHSEED=0), got 'PYTHONHASHSEED'"),
    (["--env", "LD_PRELOAD=/tmp/x.so"], "argument --env: the variable LD_PRELOAD cannot be set for a snippet: it "
                                        "changes how the dynamic loader starts every program; a case's variables may "
                                        "change what the program does, not how a process starts (docs/cases.md)"),
    (["--python", "3.12"], "argument --python: expects VERSION=PATH (e.g. 3.12=/usr/bin/python3.12), got '3.12'"),
    (["--runs", "1"], "argument --runs: must be a whole number from 2 to 100, got 1"),
    (["--authoring-runs", "99999999999999999999"], "argument --authoring-runs: must be a whole number from 2 to 1000, "
                                                   "got 99999999999999999999"),
    (["--timeout", "nan"], "argument --timeout: must be a number of seconds, more than 0 and at most 86400, got 'nan'"),
    (["--dtype", "int8"], "argument --dtype: invalid choice: 'int8' (choose from 'bfloat16', 'float16', 'float32')"),
])
def test_options_are_validated_as_the_plugin_validates_them(snippet, capsys, args: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(new(snippet("1\n"), "--wrong", "2", *args))
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"gotchas new: error: {message}"


def test_command_and_python_disagree(capsys, snippet) -> None:
    code = main(new(snippet('python3.12 -c "print(1)"\n'), "--interpreter", "3.11", "--wrong", "2"))
    assert error_of(capsys, code) == ("gotchas new: error: the command runs python3.12 but --interpreter says 3.11; "
                                      "drop one of them\n")


def test_duplicate_id_is_refused(snippet, capsys, tmp_path: Path, py311) -> None:
    chapter = tmp_path / "demo.yaml"
    chapter.write_text(CHAPTER)
    code = main(new(snippet("1 + 2\n"), "--wrong", "4", "--to", str(chapter), "--id", "plus"))
    assert error_of(capsys, code) == (f"gotchas new: error: collection would refuse this case: {chapter}:22: case "
                                      "'plus': duplicate case id\n")
    assert chapter.read_text() == CHAPTER
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.yaml", "snippet.py"]


def test_cut_the_model_cannot_represent_is_refused(snippet, capsys, tmp_path: Path, tiny: Path, py311) -> None:
    chapter = tmp_path / "demo.yaml"
    chapter.write_text(CHAPTER)
    code = main(new(snippet("print('é')\n"), "--wrong", "e", "--to", str(chapter), "--id", "accent",
                    "--model", str(tiny), "--cache-dir", str(tmp_path / "cache")))
    err = error_of(capsys, code)
    assert err.startswith(f"gotchas new: error: this model cannot score the cut, nothing was written: {chapter}:22: "
                          "case 'accent': cut not representable by this tokenizer: ")
    assert err.endswith("the correct side maps 'é' to the unknown token '<unk>'\n")
    assert chapter.read_text() == CHAPTER


def test_model_that_cannot_be_loaded(snippet, capsys, tmp_path: Path, py311) -> None:
    code = main(new(snippet("[1]\n"), "--wrong", "[2]", "--model", str(tmp_path / "nowhere")))
    assert error_of(capsys, code) == (f"gotchas new: error: no case was printed: cannot load model "
                                      f"'{tmp_path / 'nowhere'}': {tmp_path / 'nowhere'} does not exist. Point --model "
                                      "at a model folder, a .gguf file or a hub id (hub ids need network access).\n")


def test_a_mistyped_model_is_refused_before_the_snippet_runs(snippet, capsys) -> None:
    code = main(new(snippet("[1]\n"), "--wrong", "[2]", "--model", "smollm2-13m"))
    assert error_of(capsys, code) == (
        "gotchas new: error: --model smollm2-13m: no embedded model, folder or file is named 'smollm2-13m'; did you "
        "mean smollm2-135m? The embedded models are gemma-3-270m, smollm2-135m. A model on the Hugging Face hub is "
        "named by its owner too (owner/name, e.g. HuggingFaceTB/SmolLM2-135M-Instruct) and is downloaded once, which "
        "needs the network; a folder or a .gguf file must exist\n")


# After a newline the model expects `>`, the start of `>>> `: a cut at the start of an output line is noise.
EXPECTS_INPUT = {"\n": {">": 8.0}}
NOISE_HEAD = ("  noise: neither candidate reaches 2.00% at the cut (P(correct) 0.00%, P(wrong) 0.00%), so the case says "
              "nothing of what the model knows; the model's top token there is '>' (100.00%): it reads the transcript "
              "as waiting for more input, not as printing an answer.\n")


@pytest.fixture(scope="module")
def expects_input(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("expects-input") / "model", EXPECTS_INPUT)


def test_a_noise_verdict_says_why_and_offers_a_lead_in(snippet, capsys, tmp_path: Path, expects_input: Path,
                                                       py311) -> None:
    assert main(new(snippet("print(2)\n"), "--wrong", "3", "--model", str(expects_input), "--cache-dir",
                    str(tmp_path / "cache"))) == 0
    out = capsys.readouterr().out
    assert "  verdict: noise\n" + NOISE_HEAD + (
        "  What to do (docs/cases.md, \"A lead-in\"): give it an output to continue before the cut: a lead-in, REPL "
        "lines typed before the snippet whose output has the answer's shape (the same code on other values, say). "
        "Run this command again with --lead-in CODE to write the case with one.\n") in out


def test_lead_in_writes_the_case_after_its_output(snippet, capsys, tmp_path: Path, expects_input: Path,
                                                  py311) -> None:
    chapter = tmp_path / "ch.yaml"
    assert main(new(snippet("print(2)\n"), "--wrong", "3", "--lead-in", "for i in range(2):\n    print(i)",
                    "--model", str(expects_input), "--cache-dir", str(tmp_path / "cache"), "--to", str(chapter),
                    "--id", "two")) == 0
    out = capsys.readouterr().out
    # the tiny model reads the last token only: the lead-in cannot lift it, and the advice says what is left
    assert NOISE_HEAD + (
        "  What to do (docs/cases.md, \"A lead-in\"): the lead-in given did not lift it: show an output closer to the "
        "answer's shape (--lead-in), or cut inside the output, after the part every reader agrees on.\n") in out
    case = load_chapter(chapter, str(chapter)).cases[0]
    assert case.transcript.prompt == ">>> for i in range(2):\n...     print(i)\n... \n0\n1\n>>> print(2)\n"


def test_gotchas_new_to_a_latin1_file_is_one_error(tmp_path, capsys) -> None:
    target = tmp_path / "a.yaml"
    target.write_bytes(latin1(chapter_text(CASE.replace('"2"', '"2"\n  note: "é"'))))
    snippet = tmp_path / "s.py"
    snippet.write_text("1 + 1\n")
    code = main(["new", str(snippet), "--wrong", "3", "--to", str(target), "--id", "two"])
    assert code == 1
    err = capsys.readouterr().err
    assert err.startswith(f"gotchas new: error: --to {target}:") and err.endswith(
        "the file is not UTF-8 (byte 0xe9); save it as UTF-8\n")


# -- authoring: `gotchas new` runs the case far more often than collection does ---------------------------------------


def authored(tmp_path: Path, capsys: pytest.CaptureFixture[str], snippet: str, *args: str) -> tuple[int, str, str]:
    path = tmp_path / "snippet.py"
    path.write_text(snippet)
    code = main(["new", str(path), "--interpreter", "3.12", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_authoring_refuses_a_coin_flip(tmp_path: Path, capsys: pytest.CaptureFixture[str], py312) -> None:
    # Collection's 3 runs let a fair coin through once in 4; 20 runs, once in 2**19.
    code, _, err = authored(tmp_path, capsys, "import random; random.random() < 0.5\n", "--wrong", "maybe")
    assert code == 1
    assert err.startswith(("gotchas new: error: collection would refuse this case, no case was printed:\n",
                           "gotchas new: error: the case does not hold in every run, no case was printed: in 20 runs "
                           "(PYTHONHASHSEED=1..20; --authoring-runs), the answer changes between runs: "))
    # Not the hash seed: run again under one seed, it still varies.
    assert err.endswith("\n(it changes under one hash seed too, PYTHONHASHSEED=0: it depends on something else, "
                        "such as time or randomness; make the snippet deterministic)\n")


def test_authoring_refuses_a_coin_flip_under_a_pinned_seed(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         py312) -> None:
    code, _, err = authored(tmp_path, capsys, "import random; random.random() < 0.5\n", "--wrong", "maybe",
                            "--env", "PYTHONHASHSEED=0")
    assert code == 1
    assert "the answer changes between runs under the same PYTHONHASHSEED=0, so something else varies" in err


def test_authoring_catches_what_three_runs_let_through(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       py312) -> None:
    # True under seeds 1-9, the three that collection uses; False from seed 10 on: only the authoring runs see it.
    snippet = "import os; int(os.environ['PYTHONHASHSEED']) < 10\n"
    code, out, err = authored(tmp_path, capsys, snippet, "--wrong", "maybe")
    assert code == 1 and out.endswith("  wrong   'maybe'      the misreading  'maybe\\n'\n")
    assert err == (
        "gotchas new: error: the case does not hold in every run, no case was printed: in 20 runs "
        "(PYTHONHASHSEED=1..20; --authoring-runs), the answer changes between runs: it holds under PYTHONHASHSEED=1 "
        "but not under PYTHONHASHSEED=10: `correct` 'True' is not what Python prints at the cut; it prints "
        "'False\\n'\n"
        "  at line 2 of the transcript, after \"viron['PYTHONHASHSEED']) < 10\\n\":\n"
        "    transcript: 'True'\n"
        "    python:     'False\\n'\n"
        "(the output changes with the hash seed: pin it with --env PYTHONHASHSEED=0)\n")
    # Fewer authoring runs, down to collection's own, let it through: that is what the option is for.
    code, out, _ = authored(tmp_path, capsys, snippet, "--wrong", "maybe", "--authoring-runs", "9")
    assert code == 0 and "the cut held in all 9 runs (PYTHONHASHSEED=1..9; --authoring-runs)\n" in out


def test_authoring_runs_default_and_validation(tmp_path: Path, capsys: pytest.CaptureFixture[str], py312) -> None:
    assert AUTHORING_RUNS == 20
    code, out, _ = authored(tmp_path, capsys, "sorted({3, 1, 2})\n", "--wrong", "{1, 2, 3}")
    assert code == 0 and "the cut held in all 20 runs (PYTHONHASHSEED=1..20; --authoring-runs)\n" in out
    code, out, _ = authored(tmp_path, capsys, "sorted({3, 1, 2})\n", "--wrong", "{1, 2, 3}",
                            "--env", "PYTHONHASHSEED=0", "--authoring-runs", "5")
    assert code == 0 and "the cut held in all 5 runs (PYTHONHASHSEED=0; --authoring-runs)\n" in out
    with pytest.raises(SystemExit):
        authored(tmp_path, capsys, "1\n", "--wrong", "2", "--authoring-runs", "1")
    assert capsys.readouterr().err.splitlines()[-1] == ("gotchas new: error: argument --authoring-runs: must be a "
                                                        "whole number from 2 to 1000, got 1")


def test_a_shell_snippet_that_sets_a_start_up_variable_is_refused_before_it_runs(capsys, monkeypatch, py312) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO('LD_PRELOAD=/tmp/x.so python3.12 -c "print(1)"\n'))
    assert error_of(capsys, main(new("--wrong", "2"))) == (
        "gotchas new: error: collection would refuse this case: <new case>:6: case 'new-case': the command line: "
        "the variable LD_PRELOAD cannot be set for a snippet: it changes how the dynamic loader starts every program; "
        "a case's variables may change what the program does, not how a process starts (docs/cases.md)\n")


def test_run_from_a_subfolder_it_hides_the_whole_project_as_collection_does(capsys, monkeypatch, snippet) -> None:
    # A project of its own (its pyproject.toml makes it pytest's rootdir) outside every private or hidden folder.
    if any(REPO.is_relative_to(p) for p in ("/tmp", "/var/tmp", "/dev/shm", "/root", "/home")):
        pytest.skip(f"the checkout {REPO} lies in a folder that is private or hidden anyway")
    project = REPO / ".pytest_cache" / f"gotchas-new-{uuid.uuid4().hex[:12]}"
    (project / "cases").mkdir(parents=True)
    try:
        (project / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
        (project / ".env").write_text("TOKEN=secret\n")
        monkeypatch.chdir(project / "cases")
        code = main(new(snippet(f"open({str(project / '.env')!r}).read()\n"), "--wrong", "'TOKEN=secret\\n'",
                        "--authoring-runs", "3"))
        out = capsys.readouterr().out
        assert code == 0, out
        assert f"PermissionError: [Errno 13] Permission denied: '{project / '.env'}'" in out.splitlines()
    finally:
        shutil.rmtree(project, ignore_errors=True)
