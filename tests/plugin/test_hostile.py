"""Broken and hostile chapter files, snippets and installs through the plugin: each gets one clear message naming
the file (and line and case where there is one), never a traceback, an INTERNALERROR or a silent wrong result;
a snippet that kills its parent does not take collection with it.

Round two (issue #24): a read-only checkout (with and without --gotchas), report paths that cannot be written, a full
disk while ground truth runs, a model whose head gives NaN, a prompt longer than the model's positions, text that
would act on the terminal, and a baseline with an entry its reader refuses. A read-only folder is made with
bubblewrap (a read-only bind refuses even root); a full disk is OSError ENOSPC at the writing seam. The models are
tiny ones whose logits are set by hand (helpers/tinymodel.py); the many checks of one model run share that run, as
the machine is small."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path
from xml.etree import ElementTree

import pytest
from helpers.chapters import chapter_text
from helpers.hostile import (CASE, FULL_DISK, HOSTILE_CHAPTER, IN_HOSTILE_CHAPTER, MODEL_RULES, OK_CHAPTER,
                             OLDER_BASELINE, STALE_TEMPORARY, latin1)
from helpers.results import read_report
from helpers.tinymodel import build_tiny_model, build_unfaithful_model

from pytest_gotchas.truth import sandbox

ISOLATION = sandbox.choose()  # the strong one a run chooses by default


def test_plugin_collects_a_latin1_chapter_as_an_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "a.yaml").write_bytes(latin1(chapter_text(CASE.replace('"2"', '"2"\n  note: "é"'))))
    result = pytester.runpytest("--gotchas", "--collect-only")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*ERROR collecting a.yaml*", "*a.yaml:*: the file is not UTF-8 (byte 0xe9)*"])


@pytest.mark.parametrize(("encoding", "message"), [
    ("utf-16-le", "*a.yaml: the file is UTF-16; save it as UTF-8*"),
    ("utf-32", "*a.yaml: the file is UTF-32; save it as UTF-8*"),
])
def test_plugin_collects_a_wide_chapter_as_an_error(pytester: pytest.Pytester, encoding: str, message: str) -> None:
    """Issue 50, item 12: UTF-16 without a BOM, or UTF-32 with one, was not collected at all (exit 5)."""
    (pytester.path / "a.yaml").write_text(chapter_text(CASE), encoding=encoding)
    result = pytester.runpytest("--gotchas", "--collect-only")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*ERROR collecting a.yaml*", message])


def test_plugin_collects_a_chapter_with_a_list_key_as_an_error(pytester: pytest.Pytester) -> None:
    """Issue 50, item 7: `? [a, b]` died in collection with TypeError: unhashable type."""
    (pytester.path / "a.yaml").write_text(chapter_text(CASE.rstrip("\n") + "\n  ? [a, b]\n  : 1\n"),
                                          encoding="utf-8")
    result = pytester.runpytest("--gotchas", "--collect-only")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    output = result.stdout.str()
    assert "TypeError" not in output and "Traceback" not in output
    result.stdout.fnmatch_lines(["*a.yaml:*: a key is a list, not a name; write keys as names such as `id`*"])


def test_two_chapter_files_with_one_name_are_refused(pytester: pytest.Pytester) -> None:
    (pytester.path / "a.yaml").write_text(chapter_text(CASE), encoding="utf-8")
    (pytester.path / "b.yaml").write_text(chapter_text(CASE), encoding="utf-8")
    result = pytester.runpytest("--gotchas", "--collect-only")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*b.yaml: chapter name 'demo' is already the name of a.yaml; give each chapter file "
                                 "its own `chapter:` name*"])


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_mistyped_field_is_a_collection_error_never_an_internal_error(pytester: pytest.Pytester,
                                                                       workers: list[str]) -> None:
    (pytester.path / "a.yaml").write_text(chapter_text(CASE.rstrip("\n") + "\n  note: {why: 1}\n"), encoding="utf-8")
    result = pytester.runpytest_subprocess("--gotchas", *workers)
    # serial: collection interrupted; xdist reports the worker's collection error as a failed run
    assert result.ret == (pytest.ExitCode.TESTS_FAILED if workers else pytest.ExitCode.INTERRUPTED), result.stdout.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*a.yaml:*: case 'one': `note` is a text, got a mapping*"])


def test_without_torch_the_session_stops_at_one_clear_error(pytester: pytest.Pytester, py312) -> None:
    """`pip install pytest-gotchas` without the model extras: one message naming the extra, not a traceback per
    case."""
    (pytester.path / "a.yaml").write_text(chapter_text(CASE + CASE.replace("one", "two")), encoding="utf-8")
    pytester.makeconftest("import sys\nsys.modules['torch'] = None\nsys.modules['transformers'] = None\n")
    result = pytester.runpytest_subprocess("--gotchas")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert result.parseoutcomes() == {"failed": 1}
    output = result.stdout.str()
    assert "Traceback" not in output and "ModuleNotFoundError: import of torch halted" in output
    result.stdout.fnmatch_lines(["*scoring needs torch and transformers*pip install \"pytest-gotchas?model?\"*",
                                 "*Interrupted: gotchas: the model could not be loaded*"])


# -- snippets --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind, args", [
    (ISOLATION.kind, ()),
    (ISOLATION.kind, ("-n", "2")),  # under xdist the workers collect, and died
    (sandbox.IsolationKind.PROCESS_GROUP, ()),  # no namespace: the snippet kills its supervisor, the case says so
])
def test_collection_survives_a_snippet_that_kills_its_parent(pytester: pytest.Pytester, kind: str,
                                                             args: tuple[str, ...]) -> None:
    if args:
        pytest.importorskip("xdist")
    if kind == sandbox.IsolationKind.PROCESS_GROUP:  # weak, and unshare pretended missing
        pytester.makeconftest("from pytest_gotchas.truth import sandbox\n"
                              "sandbox.which = lambda tool: None\n")
    weak = ("--gotchas-isolation=weak",) if kind == sandbox.IsolationKind.PROCESS_GROUP else ()
    pytester.makefile(".yaml", killer=textwrap.dedent("""\
        chapter: killer
        title: hostile snippets
        interpreter: "3.12"
        cases:
          - id: kill-parent
            transcript: |-
              >>> import os; os.kill(os.getppid(), 9)
              >>> 1 + 1
              █
            correct: "2"
            wrong: "3"
          - id: after
            transcript: |-
              >>> 2 + 2
              █
            correct: "4"
            wrong: "5"
        """))
    result = pytester.runpytest_subprocess("--gotchas", "--collect-only", "-q", "-p", "no:cacheprovider", *args,
                                           *weak)
    assert result.ret == 0, result.outlines + result.errlines
    if not args:
        result.stdout.fnmatch_lines(["killer.yaml::kill-parent", "killer.yaml::after", "*2 tests collected*"])
    if kind == sandbox.IsolationKind.PROCESS_GROUP:  # collected as a crash, whose message says what the snippet did
        result = pytester.runpytest_subprocess("--gotchas", "-p", "no:cacheprovider", "-rs", "--gotchas-model",
                                               "/nonexistent", *weak)
        assert "the snippet killed its sandbox: the process that supervises it ended (killed by SIGKILL)" in \
            result.stdout.str()


# -- hostile input round two: the tiny models, a read-only folder ----------------------------------------------------

BWRAP = shutil.which("bwrap")
needs_bwrap = pytest.mark.skipif(BWRAP is None, reason="bubblewrap is needed to make a folder read-only for root")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """`tiny` reads "1" after "[" and "3" after "("; `nan` is tiny with one weight of its head set to NaN, which
    makes every probability NaN."""
    import torch
    from transformers import AutoModelForCausalLM

    root = tmp_path_factory.mktemp("models")
    tiny = build_tiny_model(root / "tiny", MODEL_RULES)
    nan = build_tiny_model(root / "nan", MODEL_RULES)
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


# -- a read-only checkout (hostile input round two) ------------------------------------------------------------------


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


# -- a full disk while ground truth runs (hostile input round two) ---------------------------------------------------


def test_no_room_for_the_snippets_is_one_collection_error_naming_the_folder(pytester: pytest.Pytester) -> None:
    import tempfile

    (pytester.path / "a.yaml").write_text(OK_CHAPTER, encoding="utf-8")
    pytester.makeconftest(FULL_DISK % "TemporaryDirectory")
    result = pytester.runpytest_subprocess("--gotchas", "--collect-only")  # in-process: see hostile_run
    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED and "Traceback" not in output, output
    result.stdout.fnmatch_lines([
        "*ERROR collecting a.yaml*",
        f"cannot execute the snippets: their temporary folder in {tempfile.gettempdir()} cannot be written (No space "
        "left on device); free space there, or point TMPDIR at a folder with room",
    ])


# -- one run of hostile inputs (hostile input round two) -------------------------------------------------------------


@pytest.fixture
def hostile_run(pytester: pytest.Pytester, models: dict[str, Path], py311) -> pytest.RunResult:
    """Both models on the hostile chapter, recording the baselines, with a disk that is full under the transcript
    cache; the JSON, HTML and junit reports written."""
    (pytester.path / "a.yaml").write_text(HOSTILE_CHAPTER, encoding="utf-8")
    baselines = pytester.path / "baselines"
    baselines.mkdir()
    (baselines / "tiny-bfloat16-cpu.yaml").write_text(OLDER_BASELINE, encoding="utf-8")
    (baselines / STALE_TEMPORARY).write_text("half a baseline", encoding="utf-8")
    pytester.makeconftest(FULL_DISK % "write_sealed")
    # In a subprocess: an in-process run after another one can meet the modules the first imported (pytester's
    # snapshot drops a submodule, its package keeps the attribute, and `from . import wiring` or the conftest's
    # `from pytest_gotchas.truth import execute` take that stale one): the conftest would patch a module the run does
    # not use, and the scorer raise a GotchasError class the items do not know.
    return pytester.runpytest_subprocess("--gotchas", f"--gotchas-model={models['tiny']}",
                                         f"--gotchas-model={models['nan']}",
                                         f"--gotchas-cache-dir={models['cache']}", "--gotchas-runs=2",
                                         "--gotchas-update-baseline", "--gotchas-json=out.json",
                                         "--gotchas-html=out.html", "--junitxml=junit.xml", "-p", "no:randomly")


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
    assert not any(char in output for char in IN_HOSTILE_CHAPTER)
    result.stdout.fnmatch_lines([f"*_ {title.replace('[', '[[]')}: long[[]tiny] _*", title])
    for name in ("out.html", "junit.xml"):
        text = (pytester.path / name).read_text(encoding="utf-8")
        assert not any(char in text for char in IN_HOSTILE_CHAPTER), name
    page = (pytester.path / "out.html").read_text(encoding="utf-8")
    assert title in page and "\\x1b]0;pwned\\x07\\u202e {&#39;" in page

    # 3. the JSON holds no NaN (it is strict JSON) and no result of the NaN model's scored cases
    def no_constants(name: str) -> None:
        raise AssertionError(f"{name} in the JSON report")

    report = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"), parse_constant=no_constants)
    assert read_report(pytester.path / "out.json") == report  # and it validates against the JSON Schema
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


def test_a_chapter_file_named_with_control_characters_is_refused_and_the_junit_xml_stays_well_formed(
        pytester: pytest.Pytester) -> None:
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "a\x1b[31m\x07.yaml").write_text(chapter_text(CASE), encoding="utf-8")
    (pytester.path / "cases" / "b.yaml").write_text(chapter_text(CASE).replace("chapter: demo", "chapter: other"),
                                                    encoding="utf-8")
    result = pytester.runpytest("--gotchas", "--collect-only", "--junitxml=out.xml", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*ERROR collecting cases*",
                                 "cases/a\\x1b[31m\\x07.yaml: a chapter file's name may not hold control characters "
                                 "(pytest would write them into node ids and the JUnit XML, which cannot hold them); "
                                 "rename the file"])
    assert "\x1b[31m" not in result.stdout.str()
    testcases = ElementTree.parse(pytester.path / "out.xml").getroot().iter("testcase")  # well-formed
    assert [(case.get("classname"), case.get("name")) for case in testcases] == [("", "cases")]


# -- a model folder whose tokenizer fails the converter's round trip (issue 50, item 13) ----------------------------


@pytest.fixture(scope="module")
def unfaithful(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_unfaithful_model(tmp_path_factory.mktemp("unfaithful") / "model", MODEL_RULES)


def test_a_model_whose_tokenizer_fails_the_round_trip_is_refused_or_named_when_allowed(
        pytester: pytest.Pytester, unfaithful: Path) -> None:
    """It loaded without a word, and a case whose prompt it misread was scored."""
    (pytester.path / "a.yaml").write_text(chapter_text(CASE), encoding="utf-8")
    args = ["--gotchas", "--gotchas-model", str(unfaithful), "--gotchas-cache-dir", str(pytester.path / "models"),
            "-p", "no:cacheprovider"]
    refused = pytester.runpytest_subprocess(*args)
    assert refused.ret == pytest.ExitCode.INTERRUPTED and "Traceback" not in refused.stdout.str()
    refused.stdout.fnmatch_lines([
        f"*cannot use model '{unfaithful}': its tokenizer fails the round trip a converted model's must pass: only 96 "
        "of 130 sampled vocabulary tokens tokenize back to themselves*run with --gotchas-allow-unfaithful-tokenizer*",
        "*Interrupted: gotchas: the model could not be loaded*"])

    allowed = pytester.runpytest_subprocess(*args, "--gotchas-allow-unfaithful-tokenizer", "--gotchas-json",
                                            "out.json")
    assert allowed.ret == pytest.ExitCode.OK, allowed.stdout.str()
    allowed.stdout.fnmatch_lines([
        "*its tokenizer fails the round trip a converted model's must pass (96 of 130 sampled vocabulary tokens "
        "tokenize back to themselves); scored anyway, as --gotchas-allow-unfaithful-tokenizer asks*",
        f"model '{unfaithful}': bfloat16*; its tokenizer's round trip not enforced (allow-unfaithful-tokenizer)"])
    assert [m["allow_unfaithful_tokenizer"] for m in read_report(pytester.path / "out.json")["models"]] == [True]
