"""`gotchas new`, the case-authoring command: from a snippet to a case that collects and scores, and its refusals.

The command runs in-process (`main([...])`, output through capsys) except for one subprocess check of
`python -m pytest_gotchas new --help`. Scoring uses the tiny model of tinymodel.py, whose logits are set by hand.
"""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from helpers import REPO
from helpers.tinymodel import build_tiny_model

from pytest_gotchas.cases.chapter import load_chapter
from pytest_gotchas.cli import main
from pytest_gotchas.cli.chapterfile import case_entry
from pytest_gotchas.cli.snippet import parse_snippet

# After "[" the tiny model says "0" (the misreading) over "2" (the truth); after "2" it prefers "," to "]".
RULES = {"[": {"0": 2.0, "2": 1.0}, "2": {",": 1.0, "]": 3.0}}

LATE_CLOSURE = """\
fs = []
for i in range(3):
    fs.append(lambda: i)
[f() for f in fs]
"""

LATE_CLOSURE_TRANSCRIPT = """\
>>> fs = []
>>> for i in range(3):
...     fs.append(lambda: i)
... 
>>> [f() for f in fs]
[2, 2, 2]
"""

LATE_CLOSURE_CASE = """\
  - id: late-closure
    transcript: |-
      >>> fs = []
      >>> for i in range(3):
      ...     fs.append(lambda: i)
      ... 
      >>> [f() for f in fs]
      [█
    correct: "2"
    wrong: "0"
"""

# A chapter with comments, a column-0 comment that belongs to `pairs:`, and a key after the cases.
CHAPTER = """\
# A hand-written chapter: its comments and layout must survive an append.
chapter: demo
title: "demo chapter"   # inline comment
interpreter: "3.11"

cases:
  # the first case
  - id: plus
    transcript: |-
      >>> 1 + 1
      █
    correct: "2"
    wrong: "3"

  - id: minus
    transcript: |-
      >>> 1 - 1
      █
    correct: "0"
    wrong: "1"

# pairs belong here
pairs:
  plus-vs-minus: [plus, minus]
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", RULES)


@pytest.fixture
def snippet(tmp_path: Path):
    def write(text: str, name: str = "snippet.py") -> str:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return str(path)

    return write


def new(*args: str) -> list[str]:
    return ["new", *args]


def printed_case(stdout: str) -> str:
    return stdout.split("# the case, ready to paste under `cases:` in a chapter file\n", 1)[1]


def error_of(capsys: pytest.CaptureFixture[str], code: int) -> str:
    assert code == 1
    return capsys.readouterr().err


# -- help ------------------------------------------------------------------------------------------------------------


def test_help_of_the_subcommand_as_a_module() -> None:
    done = subprocess.run([sys.executable, "-m", "pytest_gotchas", "new", "--help"], capture_output=True, text=True,
                          cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: gotchas new [-h] ")
    for flag in ("--interpreter VERSION", "--env NAME=VALUE", "--model NAME", "--python VERSION=PATH", "--runs RUNS",
                 "--to CHAPTER.yaml", "--id ID", "examples:"):
        assert flag in done.stdout


def test_help_of_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    assert "new       write a case from a snippet and its misreading" in capsys.readouterr().out


def test_no_subcommand_prints_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert capsys.readouterr().out.startswith("usage: gotchas [-h] COMMAND ...")


# -- from a snippet to a case that collects and scores ---------------------------------------------------------------


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


def test_snippet_to_case_that_collects_and_scores(snippet, capsys: pytest.CaptureFixture[str], tiny: Path,
                                                  pytester: pytest.Pytester, py311) -> None:
    cache = pytester.path / "model-cache"
    code = main(new(snippet(LATE_CLOSURE), "--interpreter", "3.11", "--wrong", "[0, 1, 2]", "--id", "late-closure",
                    "--model", str(tiny), "--cache-dir", str(cache)))
    out = capsys.readouterr().out
    assert code == 0, out
    assert textwrap.dedent(f"""\
        model {tiny} (bfloat16, cpu):
          text reading (the verdict): every token (and chain of tokens) that writes the candidate
            P(correct) 26.95%  P(wrong) 73.05%  coverage 100.00%  margin 46.09%  -> MISS
            correct: '2' 26.95%
            wrong:   '0' 73.05%
          token reading: one token each, at the cut
            P(correct) 26.95%  P(wrong) 73.05%  coverage 100.00%  margin 46.09%  -> MISS
            correct: '2'
            wrong:   '0'
        """) in out
    assert "WARNING" not in out
    assert "  verdict: MISS\n" in out
    case = printed_case(out)
    assert case == LATE_CLOSURE_CASE + '    interpreter: "3.11"\n'
    # The printed case, pasted into a chapter, collects and scores the same under pytest.
    pytester.path.joinpath("ch.yaml").write_text("chapter: pasted\ntitle: pasted\ncases:\n" + case)
    result = pytester.runpytest("--gotchas", "--gotchas-model", str(tiny), "--gotchas-cache-dir", str(cache), "-v")
    assert result.parseoutcomes() == {"MISS": 1}
    result.stdout.fnmatch_lines(["*ch.yaml::late-closure MISS  P(correct) 26.95%  P(wrong) 73.05%  coverage 100.00%*"])


def test_append_keeps_the_file_and_collects(snippet, capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                            pytester: pytest.Pytester, py311) -> None:
    chapter = pytester.path / "demo.yaml"
    chapter.write_text(CHAPTER)
    chapter.chmod(0o640)
    code = main(new(snippet(LATE_CLOSURE), "--wrong", "[0, 1, 2]", "--to", str(chapter), "--id", "late-closure",
                    "--note", "reads i after the loop"))
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.endswith(f"\nwrote case 'late-closure' to {chapter}:22\n")
    # Appended as text after the last case: comments, blank lines and the rest of the file are untouched.
    head, tail = CHAPTER.split("\n# pairs belong here\n")
    assert chapter.read_text() == (head + "\n" + LATE_CLOSURE_CASE + '    note: "reads i after the loop"\n'
                                   + "\n# pairs belong here\n" + tail)
    assert chapter.stat().st_mode & 0o777 == 0o640
    assert not [p.name for p in pytester.path.iterdir() if p.name.startswith(".demo.yaml")]
    loaded = load_chapter(chapter)
    assert [c.id for c in loaded.cases] == ["plus", "minus", "late-closure"]
    assert loaded.cases[2].note == "reads i after the loop"
    result = pytester.runpytest("--gotchas", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["demo.yaml::late-closure", "3 tests collected*"])


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


@pytest.mark.parametrize("text, command", [
    ('python3.12 -c "print(1)"', 'python3.12 -c "print(1)"'),
    ('$ PYTHONHASHSEED=0 python -c "print(1)"', 'PYTHONHASHSEED=0 python -c "print(1)"'),
    ("python = 3", None),
    ("python3 + 1", None),
])
def test_shell_command_or_repl_input(text: str, command: str | None) -> None:
    parsed = parse_snippet(text + "\n", {})
    assert parsed.command == command
    assert (parsed.repl_lines is None) == (command is not None)


@pytest.mark.parametrize("lines, typed", [
    (["def f():", "    return 1", "f()"], ("def f():", "    return 1", "", "f()")),
    (["if 0:", "    x = 1", "else:", "    x = 2", "x"], ("if 0:", "    x = 1", "else:", "    x = 2", "", "x")),
    (["xs = [", "1,", "]", "xs"], ("xs = [", "1,", "]", "xs")),
    (["for i in range(2): print(i)"], ("for i in range(2): print(i)", "")),
    ([">>> def f():", "...     return 1", "...", ">>> f()", "1"], ("def f():", "    return 1", "", "f()")),
])
def test_snippet_lines_are_typed_as_the_repl_needs(lines: list[str], typed: tuple[str, ...]) -> None:
    assert parse_snippet("\n".join(lines) + "\n", {}).repl_lines == typed


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
                                      "'a\\n' ends: they never differ at one character; give --wrong the whole output "
                                      "a careless reader expects\n")


def test_snippet_that_prints_nothing(snippet, capsys, py311) -> None:
    code = main(new(snippet("x = 1\n"), "--wrong", "1"))
    assert error_of(capsys, code) == ("gotchas new: error: the snippet prints nothing after its last input line; end "
                                      "it with the code whose output is misread\n")


@pytest.mark.parametrize("args, message", [
    (["--to", "x.yaml"], "--to needs --id, the new case's id"),
    (["--id", "b@d"], "--id 'b@d': use letters, digits, `-`, `_` and `.`, starting with a letter or digit"),
])
def test_bad_options(snippet, capsys, args: list[str], message: str) -> None:
    assert error_of(capsys, main(new(snippet("1\n"), "--wrong", "2", *args))) == f"gotchas new: error: {message}\n"


@pytest.mark.parametrize("args, message", [
    (["--interpreter", "three"], "argument --interpreter: expects a version such as 3.12, got 'three'"),
    (["--env", "PYTHONHASHSEED"], "argument --env: expects NAME=VALUE (e.g. PYTHONHASHSEED=0), got 'PYTHONHASHSEED'"),
    (["--python", "3.12"], "argument --python: expects VERSION=PATH (e.g. 3.12=/usr/bin/python3.12), got '3.12'"),
    (["--runs", "1"], "argument --runs: must be at least 2, got 1"),
    (["--timeout", "nan"], "argument --timeout: must be a positive, finite number of seconds, got 'nan'"),
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


def test_output_that_changes_between_runs_is_refused(snippet, capsys, pytester: pytest.Pytester, py311) -> None:
    chapter = pytester.path / "demo.yaml"
    chapter.write_text(CHAPTER)
    code = main(new(snippet("set(str(x) for x in range(5))\n"), "--wrong", "{'0', '1', '2', '3', '4'}",
                    "--to", str(chapter), "--id", "strings"))
    err = error_of(capsys, code)
    assert err.startswith(f"gotchas new: error: collection would refuse {chapter}, nothing was written:\n"
                          f"{chapter}:22: case 'strings': the answer changes between runs: it holds under "
                          "PYTHONHASHSEED=")
    assert err.endswith("\n(the output changes with the hash seed: pin it with --env PYTHONHASHSEED=0)\n")
    assert chapter.read_text() == CHAPTER
    assert not [p.name for p in pytester.path.iterdir() if p.name.startswith(".demo.yaml")]


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


def test_printed_yaml_reads_back_exactly() -> None:
    text = ">>> s\n'a\\tb'  \n\x1b[0m█"
    entry = case_entry("  ", [("id", "true"), ("transcript", text), ("correct", "1"), ("wrong", "\n"),
                                  ("env", {"PYTHONHASHSEED": "0"})])
    data = yaml.safe_load("cases:\n" + entry)["cases"][0]
    assert data == {"id": "true", "transcript": text, "correct": "1", "wrong": "\n", "env": {"PYTHONHASHSEED": "0"}}
