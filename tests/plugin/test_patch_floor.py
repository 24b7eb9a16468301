"""The effect floor through the plugin (issue 53): on the tiny model, a pair built to have no effect, one built to
have an effect of two bfloat16 steps (under the floor) and one built to have a large one. Under the floor no
percentage is printed anywhere (terminal, page), the JSON marks the direction and keeps its logit changes, and the
terminal, the page and the JSON say how many fell under it and why; the floor is a setting and moves with the
metric's dtype.

The tiny model's logits depend on the last token alone (helpers/tinymodel.py): "a" and "c" differ by 1/32 of a
logit in logit(8) (two steps of bfloat16 at |logit| 2), "a" and "b" by three logits.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.chapters import seven_eight_chapter
from helpers.results import read_report
from helpers.tinymodel import build_tiny_model

pytest.importorskip("torch")

RULES = {"a": {"7": 2.0, "8": 0.5}, "b": {"8": 2.0, "7": 0.5}, "c": {"7": 2.0, "8": 0.53125}}

CHAPTER = seven_eight_chapter("the effect floor on a tiny model",
                              "  large: [seven, eight]\n  small: [close, seven]\n  none: [same, seven]\n",
                              ("close", '"c7"', "c"), ("same", '"a" + "7"', "a"))


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", RULES)


@pytest.fixture
def run(pytester: pytest.Pytester, tiny_model: Path):
    def run(*args: str) -> tuple[pytest.RunResult, dict, str]:
        (pytester.path / "demo.yaml").write_text(CHAPTER)
        out, page = pytester.path / "result.json", pytester.path / "page.html"
        result = pytester.runpytest_subprocess(
            "--gotchas", "--gotchas-model", str(tiny_model), "--gotchas-cache-dir", str(pytester.path / "models"),
            "-o", f"cache_dir={pytester.path / 'pc'}", "--rootdir", str(pytester.path), "-p", "no:randomly",
            "--gotchas-json", str(out), "--gotchas-html", str(page), *args)
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()
        return result, read_report(out), page.read_text(encoding="utf-8")
    return run


def directions(data: dict) -> dict[str, list[dict]]:
    return {pair["id"]: pair["patching"] for pair in data["pairs"]}


def pair_block(page: str, pair: str) -> str:
    """The page's heatmaps of one pair (its <details> block)."""
    start = page.index(f"patched: pair {pair} (")
    return page[start:page.index("</details>", start)]


def test_under_the_floor_no_percentage_anywhere_and_the_json_marks_it(run) -> None:
    result, data, page = run("--gotchas-patch-components")
    found = directions(data)
    for direction in found["small"]:
        effect = direction["source_value"] - direction["unpatched"]
        assert abs(effect) == 2 ** -5 and direction["metric_dtype"] == "bfloat16"
        assert direction["floor"] == {"steps": 3.0, "logits": 0.3, "magnitude": 2.0, "noise": 0.0, "under": "floor"}
        assert direction["fractions"] == [[None] * len(direction["positions"])]
        assert direction["cells"][0][-1] == direction["source_value"]  # the logit changes stay
        assert direction["components"]["score"] is None and direction["components"]["patterns"] == []
    for direction in found["none"]:
        assert direction["floor"]["under"] == "no-effect" and direction["fractions"][0][0] is None
    for direction in found["large"]:
        assert direction["floor"]["under"] is None and direction["fractions"][0][-1] == 1.0
    (chapter,) = data["effects"]
    assert (chapter["chapter"], chapter["directions"], chapter["under"]) == ("demo", 6, {"no-effect": 2, "floor": 2})
    assert chapter["metric_dtypes"] == ["bfloat16"]

    lines = result.stdout.lines
    small = [line for line in lines if "patched close -> seven" in line or "patched seven -> close" in line
             or "components close -> seven" in line or "components seven -> close" in line]
    assert len(small) == 4 and not any("%" in line for line in small), small
    result.stdout.fnmatch_lines([
        "    patched seven -> close: no difference to localize: the effect, +0.03125 = +2 steps of 0.015625 (logits "
        "in bfloat16), is under the floor of 3 steps of bfloat16 at |logit| 2 and 0.3 logits; no fraction is taken "
        "of it (logit difference +1.46875 on close, +1.5 from seven in bfloat16)",
        "      components seven -> close: no difference to localize, under the effect floor: no component ranked, the "
        "cells' logit changes are in the JSON",
        "  patched together: 6 patched directions (logits in bfloat16); 4 under the effect floor (2 no effect at all, "
        "2 below the floor: --gotchas-patch-floor-steps and -logits): no percentage, ranking or colour for them, "
        "their logit changes in the JSON",
    ])

    block = pair_block(page, "small")
    assert not re.search(r"<td[^>]*>-?\d+</td>", block) and "%" not in re.sub(r'title="[^"]*"', "", block)
    assert "no difference to localize, under the effect floor" in block
    assert re.search(r"<td[^>]*>100</td>", pair_block(page, "large"))  # the large pair's cut, coloured
    assert page.index("Patched directions together") < page.index("patched: pair large (")
    assert "4 under the effect floor" in page


def test_the_floor_is_a_setting_and_moves_with_the_metric_s_dtype(run) -> None:
    _, off, _ = run("--gotchas-patch", "--gotchas-patch-floor-steps", "0")
    for direction in directions(off)["small"]:
        assert direction["floor"]["under"] is None and direction["fractions"][0][-1] == 1.0
    # In float32 the same 1/32 of a logit is 2**17 steps of float32 at |logit| 2: over the floor.
    _, wide, _ = run("--gotchas-patch", "--gotchas-patch-metric", "float32")
    for direction in directions(wide)["small"]:
        assert direction["metric_dtype"] == "float32" and direction["floor"]["under"] is None
    _, high, _ = run("--gotchas-patch", "--gotchas-patch-floor-logits", "5", "--gotchas-patch-floor-steps", "1000")
    assert all(d["floor"]["under"] == "floor" for d in directions(high)["large"])
