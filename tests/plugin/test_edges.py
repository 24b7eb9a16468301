"""--gotchas-patch-edges through the plugin: it turns patching on; each direction's edges are in the JSON, the
terminal names its top edges and the page draws its graph and curve without a script; `-n 2` gives a serial run's
edges; a pair with no effect is under the floor and is not ranked.

The tiny model's answer at the cut is its last token's own row of the head (helpers/tinymodel.py: attention and MLP
write nothing), so its one path is the embeddings at the cut read by the logits.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.chapters import SEVEN_EIGHT_RULES, seven_eight_chapter, tiny_runner
from helpers.tinymodel import build_tiny_model

pytest.importorskip("torch")

RULES = SEVEN_EIGHT_RULES
CHAPTER = seven_eight_chapter("edges on a tiny model", "  seven-eight: [seven, eight]\n  seven-again: [seven, again]\n",
                              ("again", '"a" + "7"', "a"))

SECONDS = ("seconds", "score_seconds", "circuit_seconds")


def without_seconds(value):
    if isinstance(value, dict):
        return {k: without_seconds(v) for k, v in value.items() if k not in SECONDS}
    if isinstance(value, list):
        return [without_seconds(v) for v in value]
    return value


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", RULES)


@pytest.fixture
def run(pytester: pytest.Pytester, tiny_model: Path):
    return tiny_runner(pytester, tiny_model, CHAPTER)


def pairs(data: dict) -> dict[str, dict]:
    return {pair["id"]: pair for pair in data["pairs"]}


def test_the_edges_find_the_one_path_and_show_everywhere(run, pytester: pytest.Pytester) -> None:
    result, data = run("--gotchas-patch-edges", "--gotchas-patch-edges-k", "3", "--gotchas-html", "page.html")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    forward, backward = pairs(data)["seven-eight"]["patching"]
    edges = forward["edges"]
    assert forward["cells"] == [[1.5, 1.5, 1.5, 1.5, 1.5, -1.5]]  # the residual grid ran: the edges imply it
    assert (edges["steps"], edges["unpatched"], edges["source_value"], edges["empty"]) == (5, 1.5, -1.5, -1.5)
    (top,) = edges["top"]  # one edge has a score: the others read writes of 0
    assert (top["node"], top["layer"], top["reads"], top["reads_layer"], top["position"]) == (
        "embed", 0, "logits", 2, len(forward["positions"]) - 1)
    assert top["exact"] == -3.0 and edges["verified"] == 1 and edges["head_gap"] is not None
    sizes = [point["edges"] for point in edges["curve"]]
    assert edges["faithfulness"][sizes.index(1)] == 1.0  # that edge alone is the model
    assert edges["faithfulness"][sizes.index(0)] == 0.0  # MIB's 0.1% of 33 edges: the empty circuit
    assert edges["cpr"] is not None and edges["batched"] is True and backward["edges"]["top"][0]["exact"] == -3.0
    result.stdout.fnmatch_lines([
        "      edges seven -> eight: the embeddings -> the logits at the cut 100% exact (EAP-IG *%); EAP-IG has the "
        "exact sign for 1 of 1*; circuits within 10% of the model from 1 of * edges; MIB's CPR *, CMD *"])
    page = (pytester.path / "page.html").read_text()
    assert page.count('<div class="edgegraph">') == 2 and page.count('<div class="edgecurve">') == 2
    assert "<svg" in page and "<script" not in page


def test_a_pair_without_an_effect_is_under_the_floor(run) -> None:
    result, data = run("--gotchas-patch-edges")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    for direction in pairs(data)["seven-again"]["patching"]:
        edges = direction["edges"]
        assert edges["under_floor"] is True and edges["top"] == edges["curve"] == [] and edges["empty"] is None
    result.stdout.fnmatch_lines(["      edges seven -> again: not ranked: the direction's effect is under the patching "
                                 "floor (results/effects.py; +0 in the float32 metric), so no edge, fraction or "
                                 "circuit is given"])


@pytest.mark.parametrize("corrupt", ["partner", "mean"])
def test_two_workers_give_the_edges_of_a_serial_run(run, corrupt: str) -> None:
    pytest.importorskip("xdist")
    _, serial = run("--gotchas-patch-edges", "--gotchas-patch-edges-corrupt", corrupt, "-p", "no:xdist")
    result, parallel = run("--gotchas-patch-edges", "--gotchas-patch-edges-corrupt", corrupt, "-n", "2")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert parallel["run"]["xdist_workers"] == 2
    for pair in ("seven-eight", "seven-again"):
        assert without_seconds(pairs(parallel)[pair]["patching"]) == without_seconds(pairs(serial)[pair]["patching"])
    assert pairs(serial)["seven-eight"]["patching"][0]["edges"]["top"]


def test_the_partner_corruption_is_the_default_and_changes_nothing(run) -> None:
    _, default = run("--gotchas-patch-edges")
    result, partner = run("--gotchas-patch-edges", "--gotchas-patch-edges-corrupt", "partner")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    for pair in ("seven-eight", "seven-again"):
        edges = [without_seconds(d["edges"]) for d in pairs(partner)[pair]["patching"]]
        assert edges == [without_seconds(d["edges"]) for d in pairs(default)[pair]["patching"]]
        assert all((e["corrupt"], e["mean_of"]) == ("partner", 0) for e in edges)


def test_the_chapters_mean_does_not_depend_on_what_k_selects(run, pytester: pytest.Pytester) -> None:
    """The mean is over the chapter's three cases whether -k selects the whole chapter or the one pair: `again`,
    deselected, is verified and read all the same."""
    mean = ("--gotchas-patch-edges", "--gotchas-patch-edges-corrupt", "mean", "--gotchas-html", "page.html")
    _, whole = run(*mean)
    result, one = run(*mean, "-k", "seven or eight")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert [c["id"] for c in one["cases"]] == ["seven", "eight"] and not pairs(one)["seven-again"]["patching"]
    chosen = [without_seconds(d["edges"]) for d in pairs(one)["seven-eight"]["patching"]]
    assert chosen == [without_seconds(d["edges"]) for d in pairs(whole)["seven-eight"]["patching"]]
    _, partner = run("--gotchas-patch-edges", "-k", "seven or eight")
    forward, other = chosen[0], pairs(partner)["seven-eight"]["patching"][0]["edges"]
    assert (forward["corrupt"], forward["mean_of"]) == ("mean", 3)
    assert forward["top"] == other["top"] and forward["empty"] != other["empty"]  # the scores are the pair's
    result.stdout.fnmatch_lines(["      edges seven -> eight: * circuits (other edges reading the mean over the "
                                 "chapter's 3 prompts (counted back from the cut)) within 10% of the model *"])
    assert "every edge outside them reading the mean over the chapter&#39;s 3 prompts" in (
        pytester.path / "page.html").read_text()


def test_a_deselected_case_its_ground_truth_refuses_is_not_in_the_mean(pytester: pytest.Pytester,
                                                                       tiny_model: Path) -> None:
    """`again` prints a8 where it says 7: refused, it is left out of the chapter's mean (two prompts), selected or
    not; and -k leaves the run green, as it leaves the refused case out."""
    chapter = seven_eight_chapter("a refused case", "  seven-eight: [seven, eight]\n", ("again", '"a" + "8"', "a"))
    run = tiny_runner(pytester, tiny_model, chapter)
    mean = ("--gotchas-patch-edges", "--gotchas-patch-edges-corrupt", "mean")
    whole_result, whole = run(*mean)
    result, one = run(*mean, "-k", "seven or eight")
    assert whole_result.ret == pytest.ExitCode.TESTS_FAILED and result.ret == pytest.ExitCode.OK
    edges = [without_seconds(d["edges"]) for d in pairs(one)["seven-eight"]["patching"]]
    assert edges == [without_seconds(d["edges"]) for d in pairs(whole)["seven-eight"]["patching"]]
    assert [e["mean_of"] for e in edges] == [2, 2]
