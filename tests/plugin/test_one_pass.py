"""One full forward pass per prompt through the plugin: the JSON counts full passes and incremental steps per run
and in the run's timings, and --gotchas-one-pass-check recomputes every reading with separate full passes, keeps
each as "<name>/separate", and lists what differs in the JSON and the summary. The readings themselves:
tests/unit/scoring/test_one_pass.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.cutcache import CHAPTER  # a plain and a healed cut
from helpers.results import read_report
from helpers.tinymodel import build_tiny_model, build_tokenizer

from pytest_gotchas.results import onepass
from pytest_gotchas.results.vocabulary import ReadingName

pytest.importorskip("transformers")


# In the pytester run's own process: the check's separate passes read "7" 2**-8 higher than the one pass does.
NUDGE = """\
from pytest_gotchas.scoring import readings

class Nudged(readings.Rows):
    def p(self, context, token, other=False):
        value = super().p(context, token, other)
        return value + 2 ** -8 if token == %d and not other else value

readings.Rows = Nudged
"""


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rules = {"a": {"7": 2.0, "8": 1.0}, "6": {"),": 2.0, ")]": 1.0}}
    return build_tiny_model(tmp_path_factory.mktemp("plugin") / "model", rules)


def run_plugin(pytester: pytest.Pytester, folder: Path, *args: str) -> tuple[pytest.RunResult, dict]:
    (pytester.path / "demo.yaml").write_text(CHAPTER, encoding="utf-8")
    result = pytester.runpytest_subprocess("--gotchas", "--gotchas-model", str(folder), "--gotchas-cache-dir",
                                           str(pytester.path / "models"), "--gotchas-json", "out.json",
                                           "--gotchas-reading", "token", "-p", "no:xdist", *args)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    return result, read_report(pytester.path / "out.json")


def test_the_plugin_counts_one_pass_per_run_and_checks_it(pytester: pytest.Pytester, tiny_folder: Path) -> None:
    _, plain = run_plugin(pytester, tiny_folder)
    runs = [r for c in plain["cases"] for r in c["runs"]]
    # the healed cut's back-off, a context of the token reading, gets a full pass of its own
    assert [(r["forward_passes"], r["incremental_steps"]) for r in runs] == [(1, 0), (2, 0)]
    timings = plain["run"]["timings"]
    assert (timings["forward_passes"], timings["incremental_steps"], timings["check_passes"]) == (3, 0, 0)
    assert plain["one_pass_check"] is None
    assert not any(onepass.is_separate(name) for r in runs for name in r["readings"])
    result, checked = run_plugin(pytester, tiny_folder, "--gotchas-one-pass-check")
    assert checked["one_pass_check"]["readings_differ"] == []
    assert checked["run"]["timings"]["check_passes"] == 3  # separate: plain 1, healed 2 (back-off and prompt)
    # text, token, other-softmax; and the healed cut's plain reading
    result.stdout.fnmatch_lines(["one pass checked against separate full passes: 0 of 7 readings differ; 0 of 2 "
                                 "case verdicts would differ"])
    for case in checked["cases"]:
        for run in case["runs"]:
            for name, reading in run["readings"].items():
                if not onepass.is_separate(name):
                    assert run["readings"][onepass.separate(name)] == reading


def test_the_plugin_lists_what_the_check_finds(pytester: pytest.Pytester, tiny_folder: Path) -> None:
    seven = build_tokenizer().convert_tokens_to_ids("7")
    pytester.makeconftest(NUDGE % seven)
    result, data = run_plugin(pytester, tiny_folder, "--gotchas-one-pass-check")
    differ = data["one_pass_check"]["readings_differ"]
    assert [(d["case"], d["reading"]) for d in differ] == [("demo/plain", ReadingName.TOKEN)]
    assert differ[0]["separate"]["p_correct"] == differ[0]["one_pass"]["p_correct"] + 2 ** -8
    result.stdout.fnmatch_lines(["one pass checked against separate full passes: 1 of 7 readings differ (token 1: "
                                 "demo/plain token); 0 of 2 case verdicts would differ"])


# A cut before "True", which the tiny model writes as one token or as a chain of shorter ones ("T" "r" "u" "e"): the
# text reading's chains past the prompt.
CHAINS = """\
chapter: demo
title: "chains past the prompt"
interpreter: "3.11"
cases:
  - id: equal
    transcript: |-
      >>> 1 == 1
      █
    correct: "True"
    wrong: "False"
"""
CHAIN_MERGES = ("Tr", "Tru", "True", "Fa", "Fal", "Fals", "False")
CHAIN_RULES = {"\n": {"True": 2.0, "T": 1.0, "Tr": 0.5, "False": 1.5, "F": 1.0}, "T": {"r": 2.0, "Tr": 0.5},
               "Tr": {"u": 2.0}, "r": {"u": 2.0}, "u": {"e": 3.0}, "F": {"a": 2.0}, "a": {"l": 2.0}}


def test_the_plugin_says_the_chains_were_one_tree_per_prompt(pytester: pytest.Pytester,
                                                             tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = build_tiny_model(tmp_path_factory.mktemp("chains") / "model", CHAIN_RULES, merges=CHAIN_MERGES)
    (pytester.path / "demo.yaml").write_text(CHAINS, encoding="utf-8")
    result = pytester.runpytest_subprocess("--gotchas", "--gotchas-model", str(folder), "--gotchas-cache-dir",
                                           str(pytester.path / "models"), "--gotchas-json", "out.json",
                                           "--gotchas-one-pass-check", "-p", "no:xdist")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    data = read_report(pytester.path / "out.json")
    assert (data["models"][0]["text_path"], data["models"][0]["attention"]) == ("tree", "sdpa")
    (run,) = data["cases"][0]["runs"]
    timings = data["run"]["timings"]
    assert run["incremental_steps"] == timings["incremental_steps"] > 0
    assert 1 <= timings["tree_calls"] < timings["incremental_steps"] == timings["tree_contexts"]
    assert timings["incremental_tokens"] >= timings["incremental_steps"]  # the nodes fed
    result.stdout.fnmatch_lines([
        f"one pass per prompt: 1 full forward passes for 1 runs; {run['incremental_steps']} text-reading contexts in "
        "1 runs read as one tree per prompt on its pass's KV cache (every chain in one call, a tree attention mask), "
        "which can differ from separate passes in their last bits (--gotchas-one-pass-check lists what differs)",
        "one pass checked against separate full passes: 0 of * readings differ; 0 of 1 case verdicts would differ"])

