"""--gotchas-patch through the plugin: both directions of every selected pair, in the JSON on the pair and in the
terminal; only pairs whose members are both selected; `-n 2` gives the same cells as a serial run (the item of the
pair's last member computes both directions in its own process).

The tiny model's logits depend on the last token alone (helpers/tinymodel.py: attention writes nothing), so only
its one layer at the last position carries the answer; tests/unit/scoring/test_patching.py has the model whose
answer sits at an earlier token.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.chapters import SEVEN_EIGHT_RULES, seven_eight_chapter, tiny_runner
from helpers.tinymodel import build_tiny_model, build_tokenizer
from helpers.results import read_report

pytest.importorskip("torch")

RULES = SEVEN_EIGHT_RULES
CHAPTER = seven_eight_chapter("patching on a tiny model", "  seven-eight: [seven, eight]\n", ("alone", '"a7"', "a"))

KEYS = ["source", "target", "primer", "source_ids", "target_ids", "candidate_ids", "layers", "positions", "tokens",
        "unpatched", "source_value", "cells", "method"]


TIMES = ("seconds", "grid_seconds", "screen_seconds", "verify_seconds")  # wall seconds: the machine's, not the cells'


def cells_of(directions: list[dict]) -> list[dict]:
    """Patched directions without the wall seconds they record (the rest must equal run for run)."""
    def drop(entry: dict) -> dict:
        return {key: drop(value) if isinstance(value, dict) else value for key, value in entry.items()
                if key not in TIMES}
    return [drop(d) for d in directions]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", RULES)


@pytest.fixture
def run(pytester: pytest.Pytester, tiny_model: Path):
    return tiny_runner(pytester, tiny_model, CHAPTER)


def test_both_directions_are_on_the_pair(run) -> None:
    result, data = run("--gotchas-patch")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    (pair,) = data["pairs"]
    forward, backward = pair["patching"]
    assert list(forward)[:len(KEYS)] == KEYS
    assert (forward["source"], forward["target"], backward["source"], backward["target"]) == (
        "seven", "eight", "eight", "seven")
    assert forward["primer"] is None and forward["method"] == "from-layer" and forward["layers"] == [1]
    # `print("a7")\na` against `print("b8")\nb`: equal lengths, so every position from the first difference aligns.
    assert forward["tokens"] == ["b", "8", '"', ")", "\n", "b"]
    assert forward["positions"] == [[t, t] for t in range(len(forward["target_ids"]) - 6, len(forward["target_ids"]))]
    vocab = build_tokenizer().get_vocab()
    assert forward["candidate_ids"] == [vocab["8"], vocab["7"]] and backward["candidate_ids"] == [vocab["7"], vocab["8"]]
    assert forward["unpatched"] == 1.5 and forward["source_value"] == -1.5  # logit(8) - logit(7) on each member
    assert forward["cells"] == [[1.5, 1.5, 1.5, 1.5, 1.5, -1.5]]  # only the last position, bit for bit
    assert forward["fractions"] == [[0.0, 0.0, 0.0, 0.0, 0.0, 1.0]]
    assert forward["unaligned_source"] == forward["unaligned_target"] == []
    # The cases carry it on the pair's last member only.
    cases = {c["id"]: c for c in data["cases"]}
    assert cases["seven"]["patching"] == [] and len(cases["eight"]["patching"]) == 2


def test_the_terminal_has_a_line_per_direction(run) -> None:
    result, _ = run("--gotchas-patch")
    result.stdout.fnmatch_lines([
        "  pair seven-eight: pass*",
        "    patched seven -> eight: no position before the cut restores any of the effect (logit difference +1.5 on"
        " eight, -1.5 from seven in bfloat16); effect -3 = -* steps of * (logits in bfloat16); the last position"
        " carries it from layer 1 of 1",
        "    patched eight -> seven: *",
    ])


def test_without_the_flag_or_with_one_member_nothing_is_patched(run) -> None:
    _, plain = run()
    assert plain["pairs"][0]["patching"] == []
    _, one = run("--gotchas-patch", "-k", "eight")
    assert one["pairs"][0]["patching"] == []


@pytest.mark.parametrize("dist", ["load", "worksteal"])  # worksteal: what docs/options.md advises for long patching
def test_two_workers_give_the_same_cells_as_a_serial_run(run, dist: str) -> None:
    pytest.importorskip("xdist")
    _, serial = run("--gotchas-patch", "-p", "no:xdist")
    result, parallel = run("--gotchas-patch", "-n", "2", "--dist", dist)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert parallel["run"]["xdist_workers"] == 2
    assert cells_of(parallel["pairs"][0]["patching"]) == cells_of(serial["pairs"][0]["patching"])
    assert len(serial["pairs"][0]["patching"]) == 2


def test_components_on_two_workers_equal_a_serial_run_and_have_their_line(run) -> None:
    pytest.importorskip("xdist")
    result, serial = run("--gotchas-patch-components", "-p", "no:xdist")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    forward = serial["pairs"][0]["patching"][0]
    grid = forward["components"]
    # The tiny model's attention and MLP write nothing: no component moves the metric, every check holds.
    assert grid["layers"] == [1] and grid["post_norms"] is True and grid["batched"] is True
    assert grid["attn"] == grid["mlp"] == [[forward["unpatched"]] * len(forward["positions"])]
    assert grid["patterns"] == [] and grid["score"] is None  # no head, no cell moves it: nothing to find
    result.stdout.fnmatch_lines(["      components seven -> eight: no component at any aligned position restores any "
                                 "of the effect"])
    result, parallel = run("--gotchas-patch-components", "-n", "2")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert cells_of(parallel["pairs"][0]["patching"]) == cells_of(serial["pairs"][0]["patching"])
    assert grid["method"] == "exact" and grid["grid_seconds"] > 0 and forward["seconds"] > 0


def test_the_screen_alone_verifies_the_cells_the_screen_beside_the_grid_does(run, pytester: pytest.Pytester) -> None:
    """--gotchas-patch-screen: the residual grid and the screen's verified top-k, no component grid, no score (the
    terminal, the page and the JSON say why); the same screened cells, estimates and exact values as with
    --gotchas-patch-components."""
    from pytest_gotchas.report.wording_patching import SCORE_NEEDS_GRID
    from pytest_gotchas.scoring.pairpatch import SCREEN_ONLY

    _, both = run("--gotchas-patch-components", "--gotchas-patch-screen-k", "5")
    result, alone = run("--gotchas-patch-screen", "--gotchas-patch-screen-k", "5", "--gotchas-html", "page.html")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    for with_grid, screened in zip(both["pairs"][0]["patching"], alone["pairs"][0]["patching"]):
        grid, only = with_grid["components"], screened["components"]
        assert (grid["method"], only["method"]) == ("exact", "screen")
        assert only["screened"] == grid["screened"] and len(only["screened"]) == 5  # bit for bit
        assert only["layers"] == only["attn"] == only["mlp"] == only["head"] == []
        assert only["score"] is None and only["checks"] == [SCREEN_ONLY]
        assert only["grid_seconds"] == 0.0 and only["verify_seconds"] > 0
        assert screened["cells"] == with_grid["cells"]  # the residual grid runs as before
    result.stdout.fnmatch_lines([f"      components seven -> eight: no cell of the screen's top-5 restores any of the "
                                 f"effect, patched exactly (screen only: *); {SCORE_NEEDS_GRID}"])
    page = (pytester.path / "page.html").read_text()
    assert page.count('<table class="screen">') == 2 and "score not measured: it compares" in page


TWINS = """\
chapter: twice
title: "a twin on a tiny model"
interpreter: "3.11"
env: {PYTHONHASHSEED: "0"}
cases:
  - id: joined
    transcript: |-
      >>> print("a7")
      a█
    correct: "7"
    wrong: "8"
  - id: concatenated
    transcript: |-
      >>> print("a" + "7")
      a█
    correct: "7"
    wrong: "8"
twins:
  spelled-twice: [joined, concatenated]
"""


def test_twins_are_patched_and_say_what_did_not_align(pytester: pytest.Pytester, tiny_model: Path) -> None:
    """A twin is patched as a pair is; its middles differ in length (`"a7"` against `"a" + "7"`), so only the shared
    suffix and the cut align, and the line says which positions did not. The same answer on both sides: no effect."""
    (pytester.path / "twice.yaml").write_text(TWINS)
    result = pytester.runpytest_subprocess(
        "--gotchas", "--gotchas-model", str(tiny_model), "--gotchas-cache-dir", str(pytester.path / "models"),
        "-o", f"cache_dir={pytester.path / 'pc'}", "--rootdir", str(pytester.path), "-p", "no:randomly",
        "--gotchas-json", "out.json", "--gotchas-patch")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    data = read_report(pytester.path / "out.json")
    (twin,) = [t for rollup in data["rollups"] for t in rollup["twins"]]
    forward, backward = twin["patching"]
    assert (forward["source"], forward["target"]) == ("joined", "concatenated")
    assert (backward["source"], backward["target"]) == ("concatenated", "joined")
    assert forward["tokens"] == ["7", '"', ")", "\n", "a"]  # the shared suffix and the cut
    # the whole of `"a7"` but its `7` is shared, so the source has no middle; the target's is `" + "`
    assert forward["unaligned_source"] == [] and forward["unaligned_target"]
    assert forward["unpatched"] == forward["source_value"] and forward["fractions"] == [[None] * 5]
    span = f"{forward['unaligned_target'][0]}-{forward['unaligned_target'][-1]}"
    result.stdout.fnmatch_lines([
        "  written twice, spelled-twice: agree*",
        "    patched joined -> concatenated: no effect to restore (logit difference +1.5 on concatenated, +1.5 from "
        f"joined in bfloat16); not aligned by the token diff: target positions {span}; 5 aligned",
        "    patched concatenated -> joined: *",
    ])


# Loaded with -p: F.linear that moves a batch's outputs by a few ulps, as kernels that round a batch otherwise than
# a prompt alone do (model/invariance.py; measured on an Intel AVX-512 Xeon without BF16).
BATCH_DEPENDENT = """
import torch

real = torch.nn.functional.linear


def linear(input, weight, bias=None):
    out = real(input, weight, bias)
    return out + out.abs() * 2 ** -6 + 2 ** -6 if input.dim() == 3 and input.shape[0] > ROWS else out


torch.nn.functional.linear = linear
"""


def test_kernels_that_round_a_batch_otherwise_patch_one_pass_per_cell(run, pytester: pytest.Pytester) -> None:
    pytester.makepyfile(batch_dependent="ROWS = 1\n" + BATCH_DEPENDENT)
    result, data = run("--gotchas-patch", "--gotchas-batch-size", "4", "-p", "batch_dependent")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["*on this CPU a batch of prompts computes other bfloat16 bits than a prompt alone "
                                 "(measured at load): every prompt ran alone (batch size 1), and patching used one "
                                 "pass per cell (method full)*"])
    forward, backward = data["pairs"][0]["patching"]
    assert (forward["method"], backward["method"]) == ("full", "full")
    assert forward["cells"] == [[1.5, 1.5, 1.5, 1.5, 1.5, -1.5]]  # the cells of a serial run, bit for bit
    assert {run["batch_size"] for case in data["cases"] for run in case["runs"]} == {1}


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_kernels_that_round_a_batch_otherwise_are_said_once_and_only_where_a_batch_was_asked(
        run, pytester: pytest.Pytester, workers: list[str]) -> None:
    """A run that asked for no batch and no patching ran as it would have: nothing to say. One that asked for a
    batch is told so once, at the run's level (the model), not at the line of the case that loaded it."""
    pytester.makepyfile(batch_dependent="ROWS = 1\n" + BATCH_DEPENDENT)
    plain, _ = run("-p", "batch_dependent", *workers)
    assert plain.ret == pytest.ExitCode.OK, plain.stdout.str()
    assert "a batch of prompts" not in plain.stdout.str() and "warnings summary" not in plain.stdout.str()
    batched, data = run("--gotchas-batch-size", "4", "-p", "batch_dependent", *workers)
    assert batched.ret == pytest.ExitCode.OK, batched.stdout.str()
    summary = batched.stdout.str().split("warnings summary")[1].split("-- Docs")[0].splitlines()[1:]
    assert [line for line in summary if line] == [
        "model model:0",
        "  model model:0: GotchasWarning: on this CPU a batch of prompts computes other bfloat16 bits than a prompt "
        "alone (measured at load): every prompt ran alone (batch size 1)"], batched.stdout.str()
    assert {run["batch_size"] for case in data["cases"] for run in case["runs"]} == {1}


def test_a_batched_method_whose_checks_fail_is_computed_again_and_said(run, pytester: pytest.Pytester) -> None:
    """Kernels that round a batch otherwise only past the load probe's two rows: the probe passes, the from-layer
    method's checks fail on the pair's six rows, and the directions are computed again with full."""
    pytester.makepyfile(batch_dependent="ROWS = 2\n" + BATCH_DEPENDENT)
    result, data = run("--gotchas-patch", "-p", "batch_dependent")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["*patching: the from-layer method's exactness checks failed on this machine's "
                                 "kernels for some directions (a batch's rows rounded otherwise than a row alone), so "
                                 "those were computed again with full, one pass per cell; the JSON names the method "
                                 "of each*"])
    assert "a batch of prompts computes other" not in result.stdout.str()
    forward, backward = data["pairs"][0]["patching"]
    assert (forward["method"], backward["method"]) == ("full", "full")
    assert forward["cells"] == [[1.5, 1.5, 1.5, 1.5, 1.5, -1.5]]

