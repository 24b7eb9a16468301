"""Hostile and broken inputs through pytest: a read-only checkout (with and without --gotchas), report paths that
cannot be written, a full disk while ground truth runs, a model whose head gives NaN, a prompt longer than the
model's positions, text that would act on the terminal, and a baseline with an entry its reader refuses.

Each check is one clear message (or the correct handling), never an INTERNALERROR, a traceback or a silent pass. A
read-only folder is made with bubblewrap (a read-only bind refuses even root); a full disk is OSError ENOSPC at the
writing seam. The models are tiny ones whose logits are set by hand (tests/tinymodel.py); the many checks of one
model run share that run, as the machine is small.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from tinymodel import build_tiny_model

BWRAP = shutil.which("bwrap")
needs_bwrap = pytest.mark.skipif(BWRAP is None, reason="bubblewrap is needed to make a folder read-only for root")
RULES = {"[": {"1": 2.0, "2": 1.0}, "(": {"3": 2.0, "4": 1.0}}
UNSAFE = ("\x1b", "\x07", "\u202e")

OK_CHAPTER = """\
chapter: demo
title: "demo chapter"
interpreter: "3.11"
cases:
  - id: a
    transcript: |-
      >>> [1, 2]
      [█
    correct: "1"
    wrong: "2"
"""


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """`tiny` reads "1" after "[" and "3" after "("; `nan` is tiny with one weight of its head set to NaN, which
    makes every probability NaN."""
    import torch
    from transformers import AutoModelForCausalLM

    root = tmp_path_factory.mktemp("models")
    tiny = build_tiny_model(root / "tiny", RULES)
    nan = build_tiny_model(root / "nan", RULES)
    model = AutoModelForCausalLM.from_pretrained(nan, dtype=torch.bfloat16)
    with torch.no_grad():
        model.lm_head.weight[10, 10] = float("nan")
    model.save_pretrained(nan)
    return {"tiny": tiny, "nan": nan, "cache": root / "cache"}


def read_only(pytester: pytest.Pytester, *args: str, also: tuple[Path, ...] = ()) -> pytest.RunResult:
    """pytest in a subprocess that finds the rootdir (and `also`) read-only."""
    (pytester.path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # the rootdir, whatever lies above
    binds = [arg for path in (pytester.path, *also) for arg in ("--ro-bind", str(path), str(path))]
    return pytester.run(BWRAP, "--dev-bind", "/", "/", *binds, sys.executable, "-m", "pytest", "-p", "no:randomly",
                        *args, timeout=600)


def files_under(folder: Path) -> list[str]:
    """What is in `folder`, but the files pytester.run keeps the output in (written outside the read-only run)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.name not in ("stdout", "stderr"))


# -- a read-only checkout -------------------------------------------------------------------------------------------


@needs_bwrap
def test_without_gotchas_a_read_only_checkout_runs_and_nothing_is_written(pytester: pytest.Pytester,
                                                                          tmp_path: Path) -> None:
    """Installing the plugin must not break other people's runs: without --gotchas it touches nothing on disk (the
    checkout and the user's cache folders are read-only here)."""
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    home = tmp_path / "home"
    home.mkdir()
    before = files_under(pytester.path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        patch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
        result = read_only(pytester, "test_plain.py", also=(home,))
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.OK, output
    assert "INTERNALERROR" not in output and "gotchas:" not in output and "Gotchas" not in output
    result.stdout.fnmatch_lines(["*1 passed*"])
    assert files_under(pytester.path) == sorted(before + ["pytest.ini"]) and files_under(home) == []


@needs_bwrap
def test_with_gotchas_a_read_only_checkout_warns_runs_and_says_which_reports_it_could_not_write(
        pytester: pytest.Pytester, models: dict[str, Path]) -> None:
    """The cache folder cannot be made: one warning, and the run goes on without it; the JSON and HTML reports cannot
    be written: one error each after the summary, and the run fails (never a traceback)."""
    (pytester.path / "a.yaml").write_text(OK_CHAPTER, encoding="utf-8")
    before = files_under(pytester.path)
    result = read_only(pytester, "--gotchas", f"--gotchas-model={models['tiny']}",
                       f"--gotchas-cache-dir={models['cache']}", "--gotchas-runs=2", "--gotchas-json=out.json",
                       "--gotchas-html=report/out.html")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output
    assert "INTERNALERROR" not in output and "Traceback" not in output
    result.stdout.fnmatch_lines([
        f"*GotchasWarning: gotchas: the cache folder {pytester.path}/.pytest_cache/d/gotchas cannot be written "
        "(Read-only file system); this run executes every snippet and tokenizes every cut again",
        "*= gotchas =*",
        "  a  ok *",
        "gotchas: cannot write the report out.json: Read-only file system",
        "gotchas: cannot write the report report/out.html: Read-only file system",
        "*1 ok*",
    ])
    assert files_under(pytester.path) == sorted(before + ["pytest.ini"])


# -- a full disk while ground truth runs -----------------------------------------------------------------------------

FULL_DISK = """
import errno, os, tempfile
from pytest_gotchas.truth import execute

SAVED = {}

def full(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

def pytest_configure(config):
    SAVED.update(write_sealed=execute.write_sealed, TemporaryDirectory=execute.tempfile.TemporaryDirectory)
    execute.%s = full

def pytest_unconfigure(config):
    execute.write_sealed = SAVED["write_sealed"]
    execute.tempfile.TemporaryDirectory = SAVED["TemporaryDirectory"]
"""


def test_no_room_for_the_snippets_is_one_collection_error_naming_the_folder(pytester: pytest.Pytester) -> None:
    import tempfile

    (pytester.path / "a.yaml").write_text(OK_CHAPTER, encoding="utf-8")
    pytester.makeconftest(FULL_DISK % "tempfile.TemporaryDirectory")
    result = pytester.runpytest("--gotchas", "--collect-only")
    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED and "Traceback" not in output, output
    result.stdout.fnmatch_lines([
        "*ERROR collecting a.yaml*",
        f"cannot execute the snippets: their temporary folder in {tempfile.gettempdir()} cannot be written (No space "
        "left on device); free space there, or point TMPDIR at a folder with room",
    ])


# -- one run of hostile inputs ---------------------------------------------------------------------------------------

HOSTILE_CHAPTER = """\
chapter: demo
title: "demo \\e[31mred\\e[0m \\e]0;pwned\\a \\u202egnp.exe"
interpreter: "3.11"
cases:
  - id: a
    transcript: |-
      >>> [1, 2]
      [█
    correct: "1"
    wrong: "2"
  - id: b
    transcript: |-
      >>> (3, 4)
      (█
    correct: "3"
    wrong: "4"
  - id: long
    transcript: |-
      >>> print('a' * 1100 + '[1')
      %s[█
    correct: "1"
    wrong: "2"
  - id: shown
    transcript: |-
      >>> print('\\x1b]0;pwned\\x07\\u202e', set('abcdefgh'))
      █
    unscored: "the set's order changes with the hash seed"
pairs:
  ab: [a, b]
""" % ("a" * 1100)
# Recorded by an older version: chapter `old` had a pair id with a `/`, which the reader now refuses.
OLD_BASELINE = """\
format: 2
count: {pairs: 2, verdicts: 2}
pairs:
  old/kept: pass
  old/x/y: pass
verdicts:
  old/one: {p_correct: 0.75, p_wrong: 0.125, verdict: ok}
  old/two: {p_correct: 0.75, p_wrong: 0.125, verdict: ok}
"""
STALE = ".tiny-bfloat16-cpu.yaml.k1ll3d00.tmp"  # what a killed update leaves


@pytest.fixture
def hostile_run(pytester: pytest.Pytester, models: dict[str, Path], py311) -> pytest.RunResult:
    """Both models on the hostile chapter, recording the baselines, with a disk that is full under the transcript
    cache; the JSON, HTML and junit reports written."""
    (pytester.path / "a.yaml").write_text(HOSTILE_CHAPTER, encoding="utf-8")
    baselines = pytester.path / "baselines"
    baselines.mkdir()
    (baselines / "tiny-bfloat16-cpu.yaml").write_text(OLD_BASELINE, encoding="utf-8")
    (baselines / STALE).write_text("half a baseline", encoding="utf-8")
    pytester.makeconftest(FULL_DISK % "write_sealed")
    return pytester.runpytest("--gotchas", f"--gotchas-model={models['tiny']}", f"--gotchas-model={models['nan']}",
                              f"--gotchas-cache-dir={models['cache']}", "--gotchas-runs=2",
                              "--gotchas-update-baseline", "--gotchas-json=out.json", "--gotchas-html=out.html",
                              "--junitxml=junit.xml", "-p", "no:randomly")


def test_hostile_inputs_through_one_run(pytester: pytest.Pytester, hostile_run: pytest.RunResult,
                                        models: dict[str, Path]) -> None:
    result = hostile_run
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, output
    assert "INTERNALERROR" not in output and "Traceback" not in output
    tiny, nan = models["tiny"], models["nan"]
    cache = pytester.path / ".pytest_cache" / "d" / "gotchas" / "transcripts"

    # 2. a full disk under the transcript cache: one warning naming the folder; every case still ran
    result.stdout.fnmatch_lines([f"*GotchasWarning: gotchas: the transcript cache {cache} cannot be written (No "
                                 "space left on device); this run executes every snippet afresh and keeps none of "
                                 "them"])
    assert output.count("the transcript cache") == 1

    # 3. NaN at the cut: an error for each case of that model, naming the model and the case; never a verdict
    for case, line in (("a", 5), ("b", 11)):
        result.stdout.fnmatch_lines([
            f"a.yaml:{line}: case '{case}': model '{nan}' gave non-finite logits at the cut (P(correct) nan, P(wrong) "
            "nan): no verdict can come from them, so the case has none and nothing of it is recorded. Check the "
            "model's weights, or its dtype (float16 overflows past 65504: try --gotchas-dtype bfloat16 or float32)"])

    # 6. a prompt longer than the positions: an error before any forward pass, for each model
    for model in (tiny, nan):
        result.stdout.fnmatch_lines([f"a.yaml:17: case 'long': the prompt is * tokens, more than the 1024 positions "
                                     f"of model '{model}' (max_position_embeddings in its config): no forward pass is "
                                     "run and the case has no verdict; shorten its transcript *"])

    # 4. the title (in the failures' headings and the summary) and the unscored case's output (on the page: the
    # summary of several models shows verdicts only), escaped wherever they are shown
    title = "demo \\x1b[31mred\\x1b[0m \\x1b]0;pwned\\x07 \\u202egnp.exe"
    assert not any(char in output for char in UNSAFE)
    result.stdout.fnmatch_lines([f"*_ {title.replace('[', '[[]')}: long[[]tiny] _*", title])
    for name in ("out.html", "junit.xml"):
        text = (pytester.path / name).read_text(encoding="utf-8")
        assert not any(char in text for char in UNSAFE), name
    page = (pytester.path / "out.html").read_text(encoding="utf-8")
    assert title in page and "\\x1b]0;pwned\\x07\\u202e {&#39;" in page

    # 3. the JSON holds no NaN (it is strict JSON) and no result of the NaN model's scored cases
    def no_constants(name: str) -> None:
        raise AssertionError(f"{name} in the JSON report")

    report = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"), parse_constant=no_constants)
    scored = sorted((c["model"], c["id"]) for c in report["cases"] if c["status"] == "scored")
    assert scored == [("tiny", "a"), ("tiny", "b")]

    # 5. and 9. the baseline with an entry its reader refuses is recorded over: that entry dropped (and said), every
    # other chapter's kept, the killed update's temporary file removed; the NaN model recorded nothing
    baselines = pytester.path / "baselines"
    recorded = (baselines / "tiny-bfloat16-cpu.yaml").read_text(encoding="utf-8")
    assert "old/kept: pass" in recorded and "old/one:" in recorded and "demo/ab: pass" in recorded
    assert "old/x/y" not in recorded
    assert sorted(p.name for p in baselines.iterdir()) == ["tiny-bfloat16-cpu.yaml", "tiny-bfloat16-cpu.yaml.lock"]
    result.stdout.fnmatch_lines([
        "[[]tiny] baseline baselines/tiny-bfloat16-cpu.yaml written: 1 pairs and 2 verdicts recorded (0 changed), "
        "0 removed, 3 kept from cases that did not run; 1 entries it could not read were dropped (pairs: 'old/x/y': "
        "keys are \"<chapter>/<id>\", each of letters, digits, `-`, `_` and `.`)",
        "[[]nan] baseline: nothing was scored, so nothing was recorded",
    ])
