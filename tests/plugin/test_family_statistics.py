"""The clustered statistics on a real report (#54 item 3): two tiny models run a chapter of 16 pairs through the
plugin; its JSON report, as written, gives today's figures (every pair its own cluster); with a `families` section
added to its chapter (three families and two lone pairs) and read back with pytest_gotchas.read_report, every
clustered figure equals an independent computation from the report's own case verdicts and probabilities
(statsmodels, scipy, an enumeration of signs), and the page shows each family beside its instance zero.

The `families` section is written into the JSON as a run with --gotchas-instances writes it, over hand-written pairs,
so that which pairs pass in which family follows PLAN (a drawn family's outcomes would be the tiny model's, not
chosen); tests/plugin/test_families.py runs drawn families through the plugin."""

from __future__ import annotations

import json
import math
import string
from pathlib import Path

import numpy as np
import pytest
import statsmodels.api as sm
from helpers.results import read_report as read_json
from scipy.stats import binomtest
from scipy.stats import t as student
from statsmodels.stats.multitest import multipletests

from pytest_gotchas import read_report
from pytest_gotchas.report.html import render
from pytest_gotchas.results.report import to_data

from ..unit.results.test_clustering import plain_wilson, reference_design_effect, reference_sign_flip

# Whether each pair passes under (left, right), pair by pair; three families and two lone pairs.
PLAN = {
    "f1": [(True, True), (True, False), (True, False), (True, False), (True, False)],  # right: surface-dep
    "f2": [(True, False), (True, True), (True, False), (False, True), (True, False)],
    "f3": [(True, False), (True, False), (True, True), (True, False)],
    None: [(True, False), (False, False)],
}
PAIRS = [(family, n, outcome) for family, outcomes in PLAN.items() for n, outcome in enumerate(outcomes)]
LETTERS = string.ascii_letters


def pair_id(family: str | None, n: int) -> str:
    return f"{family}-{n}" if family else f"lone-{n}"


def chapter_and_rules() -> tuple[str, dict[str, dict[str, dict[str, float]]]]:
    """Each member cut after a letter of its own: after it the tiny models read only that letter, so each member's
    verdict is set by its letter's rule (the first member's answer is 7, the second's 8)."""
    cases, pairs = [], []
    rules: dict[str, dict[str, dict[str, float]]] = {"left": {}, "right": {}}
    for k, (family, n, outcome) in enumerate(PAIRS):
        pid = pair_id(family, n)
        for side, (right, wrong) in enumerate((("7", "8"), ("8", "7"))):
            letter = LETTERS[2 * k + side]
            cases.append(f'- id: {pid}-{"ab"[side]}\n  transcript: |-\n    >>> print("{letter}{right}")\n'
                         f'    {letter}█\n  correct: "{right}"\n  wrong: "{wrong}"\n')
            for model, passes in zip(("left", "right"), outcome):
                # a failing pair: its second member a MISS
                ok = passes or side == 0
                rules[model][letter] = {right: 2.0, wrong: 1.0} if ok else {right: 1.0, wrong: 2.0}
        pairs.append(f"  {pid}: [{pid}-a, {pid}-b]\n")
    text = ('chapter: fam\ntitle: "families"\ninterpreter: "3.12"\ncases:\n' + "".join(
        "  " + c.replace("\n", "\n  ").rstrip(" ") for c in cases) + "pairs:\n" + "".join(pairs))
    return text, rules


FAMILIES = {family: {"kind": "pair", "seed": 54, "instances": [
    {"unit": pair_id(family, n), "slots": {"n": str(n)}, "index": n} for n in range(len(outcomes))]}
    for family, outcomes in PLAN.items() if family}


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from helpers.tinymodel import build_tiny_model

    _, rules = chapter_and_rules()
    root = tmp_path_factory.mktemp("family-models")
    return build_tiny_model(root / "left", rules["left"]), build_tiny_model(root / "right", rules["right"])


@pytest.fixture(scope="module")
def written(models: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The JSON report of both models on the chapter, run through the plugin once for the module."""
    import subprocess
    import sys

    folder = tmp_path_factory.mktemp("family-run")
    text, _ = chapter_and_rules()
    (folder / "fam.yaml").write_text(text, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--gotchas", "fam.yaml", "--gotchas-model", str(models[0]), "--gotchas-model",
         str(models[1]), "--gotchas-cache-dir", str(folder / "cache"), "--gotchas-json", "out.json", "-p",
         "no:randomly", "-p", "no:cacheprovider", "--rootdir", str(folder), "-q"],
        cwd=folder, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return read_json(folder / "out.json")


def passed_by_pair(data: dict, model: str) -> dict[str, bool]:
    """Each pair passed or not, from the report's own case verdicts (both members ok)."""
    verdicts = {c["id"]: c["verdict"] for c in data["cases"] if c["model"] == model}
    return {pair_id(f, n): verdicts[f"{pair_id(f, n)}-a"] == "ok" and verdicts[f"{pair_id(f, n)}-b"] == "ok"
            for f, n, _ in PAIRS}


def test_the_run_made_the_planned_verdicts(written: dict) -> None:
    for m, model in enumerate(("left", "right")):
        assert passed_by_pair(written, model) == {pair_id(f, n): o[m] for f, n, o in PAIRS}


def test_as_written_every_pair_is_its_own_cluster_and_the_figures_are_todays(written: dict) -> None:
    assert written["format"] == 8 and written["chapters"][0]["families"] == {} and written["family_shares"] == []
    for summary in written["rollups"]:
        assert summary["pairs_clustered"] == {**summary["pairs_interval"], "clusters": summary["pairs_counted"],
                                              "design_effect": 1.0, "effective_n": float(summary["pairs_counted"])}
    pairs = next(c for c in written["comparisons"] if c["unit"] == "pairs")
    assert pairs["p_value"] == pytest.approx(binomtest(pairs["a_only"], pairs["a_only"] + pairs["b_only"]).pvalue)
    assert (pairs["clustered"], pairs["clusters"]) == (False, 16)


@pytest.fixture(scope="module")
def with_families(written: dict, tmp_path_factory: pytest.TempPathFactory):
    data = json.loads(json.dumps(written))
    data["chapters"][0]["families"] = FAMILIES
    path = tmp_path_factory.mktemp("family-read") / "with-families.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return read_report(path)


def clusters_of(model_passed: dict[str, bool]) -> dict[str, list[bool]]:
    grouped: dict[str, list[bool]] = {}
    for f, n, _ in PAIRS:
        grouped.setdefault(f or pair_id(f, n), []).append(model_passed[pair_id(f, n)])
    return grouped


def test_read_back_with_families_each_figure_is_the_independent_one(written: dict, with_families) -> None:
    data = to_data(with_families)
    left, right = passed_by_pair(written, "left"), passed_by_pair(written, "right")
    for model, passed in (("left", left), ("right", right)):
        counts = [(sum(v), len(v)) for v in clusters_of(passed).values()]
        k, n = sum(passed.values()), len(passed)
        deff = reference_design_effect(counts)
        low, high = plain_wilson(k / n, n / deff, student.ppf(0.975, len(counts) - 1))
        found = next(r["pairs_clustered"] for r in data["rollups"] if r["model"] == model)
        assert (found["k"], found["n"], found["clusters"]) == (k, n, 5)
        assert (found["low"], found["high"], found["design_effect"]) == (pytest.approx(low), pytest.approx(high),
                                                                          pytest.approx(deff))
    pairs = next(c for c in data["comparisons"] if c["unit"] == "pairs")
    differences = [sum(a) - sum(b) for a, b in zip(clusters_of(left).values(), clusters_of(right).values())]
    assert pairs["p_value"] == pytest.approx(reference_sign_flip(differences))
    assert (pairs["clustered"], pairs["clusters"]) == (True, 5)
    raw = [c["p_value"] for c in data["comparisons"]]
    assert [c["p_adjusted"] for c in data["comparisons"]] == pytest.approx(list(multipletests(raw, method="holm")[1]))
    mean, sd = np.mean(differences), np.std(differences, ddof=1)
    needed = next(g for g in range(6, 10_000) if abs(mean) * math.sqrt(g) / sd >= student.ppf(0.975, g - 1))
    assert (pairs["families_needed"], pairs["units_needed"]) == (needed, math.ceil(needed * 16 / 5))


def log_ratio(case: dict) -> float:
    run = case["runs"][0]
    return math.log(max(run["p_correct"], 1e-6)) - math.log(max(run["p_wrong"], 1e-6))


def test_the_log_ratios_read_back_take_the_cluster_robust_interval(written: dict, with_families) -> None:
    data = to_data(with_families)
    by_model = {m: {c["id"]: log_ratio(c) for c in written["cases"] if c["model"] == m} for m in ("left", "right")}
    ids = list(by_model["left"])
    y = np.array([by_model["left"][i] - by_model["right"][i] for i in ids])
    # a family's cases are its cluster; each case of a lone pair is its own
    groups = np.unique([i if i.startswith("lone-") else i.split("-")[0] for i in ids], return_inverse=True)[1]
    fit = sm.OLS(y, np.ones(len(y))).fit(cov_type="cluster", cov_kwds={"groups": groups})
    clusters = len(set(groups.tolist()))
    half = student.ppf(0.975, clusters - 1) * fit.bse[0]
    found = data["log_ratios"][0]
    assert found["clusters"] == clusters == 7 and found["difference"]["method"] == "cluster-t"
    assert (found["difference"]["low"], found["difference"]["high"]) == (pytest.approx(fit.params[0] - half),
                                                                         pytest.approx(fit.params[0] + half))


def test_each_family_beside_its_instance_zero_on_a_real_report(written: dict, with_families) -> None:
    shares = {(s.model, s.family): s for s in with_families.family_shares}
    right = clusters_of(passed_by_pair(written, "right"))
    f1 = shares["right", "f1"]
    assert (f1.zero, f1.instances.k, f1.instances.n) == (right["f1"][0], sum(right["f1"][1:]), 4)
    assert f1.surface_dependent
    assert [f for (m, f), s in shares.items() if s.surface_dependent] == ["f1"]
    page = render(with_families)
    assert "surface-dep: instance zero passes, most instances fail" in page
    assert '<td>right</td><td>f1</td><td>pairs</td><td>pass</td><td class="num">0/4 passed [0.0%, 49.0%]</td>' in page
