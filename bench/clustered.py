"""A real report's clustered figures against an independent computation (issue #54): `python -m bench.clustered
REPORT.json` recomputes, from the report's own case verdicts and its chapters' families alone, every chapter's
share of pairs passed with its design-effect interval (statsmodels' cluster-robust variance of the mean over the
binomial one; Wilson's score interval on the effective count with t on families - 1; where every pair is its own
family, the plain Wilson interval), every pair comparison's p
(the sign-flip test over families by enumerating every assignment of signs, or exact McNemar by scipy where every
pair is its own family) and Holm's adjustment over the report's tests (statsmodels), and prints every figure that
differs from the report's, then a count. Needs the test extra (statsmodels, scipy)."""

from __future__ import annotations

import itertools
import json
import sys
from typing import Any

import numpy as np
import statsmodels.api as sm
from scipy.stats import binomtest, norm
from scipy.stats import t as student
from statsmodels.stats.multitest import multipletests

TOLERANCE = 1e-9


def passed_pairs(data: dict[str, Any], chapter: dict[str, Any], model: str) -> dict[str, bool]:
    """Each pair of the chapter that the model scored: both members ok."""
    verdicts = {c["id"]: c.get("verdict") for c in data["cases"]
                if c["chapter"] == chapter["name"] and c.get("model") == model}
    return {pair: all(verdicts.get(m) == "ok" for m in members) for pair, members in chapter["pairs"].items()
            if all(verdicts.get(m) in ("ok", "MISS", "tie", "noise", "prime-dep") for m in members)}


def family_of(chapter: dict[str, Any]) -> dict[str, str]:
    """Pair -> its family (a pair in no family is its own)."""
    found = {i["unit"]: family for family, info in chapter["families"].items() for i in info["instances"]}
    return {pair: found.get(pair, pair) for pair in chapter["pairs"]}


def wilson(k: float, n: float, z: float) -> tuple[float, float]:
    """The roots in q of (p - q)^2 = z^2 q (1 - q) / n, as the textbook writes Wilson's interval."""
    p = k / n
    a, b, c = 1 + z * z / n, -(2 * p + z * z / n), p * p
    roots = np.roots([a, b, c]).real
    return max(0.0, float(roots.min())), min(1.0, float(roots.max()))


def design_effect(y: np.ndarray, groups: np.ndarray) -> float:
    p = y.mean()
    if p in (0.0, 1.0):  # no spread to estimate: every unit of a family alike
        sizes = np.bincount(groups)
        return float((sizes ** 2).sum() / len(y))
    fit = sm.OLS(y, np.ones_like(y)).fit(cov_type="cluster", cov_kwds={"groups": groups, "use_correction": False})
    return max(1.0, float(fit.bse[0] ** 2 / (p * (1 - p) / len(y))))


def sign_flip(differences: list[int]) -> float:
    d = np.array([x for x in differences if x], dtype=float)
    if not len(d):
        return 1.0
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=len(d))))
    return float(np.mean(np.abs(signs @ d) >= abs(d.sum()) - 1e-9))


def check(data: dict[str, Any]) -> list[str]:
    chapters = {c["name"]: c for c in data["chapters"]}
    level = data["run"]["level"]
    wrong = []
    for rollup in data["rollups"]:
        chapter, model = chapters[rollup["chapter"]], rollup["model"]
        passed, families = passed_pairs(data, chapter, model), family_of(chapter)
        if not passed:
            continue
        names = sorted({families[p] for p in passed})
        y = np.array([float(passed[p]) for p in passed])
        groups = np.array([names.index(families[p]) for p in passed])
        found = rollup["pairs_clustered"]
        if (found["k"], found["n"], found["clusters"]) != (int(y.sum()), len(y), len(names)):
            wrong.append(f"{chapter['name']} {model}: counts {found['k']}/{found['n']} in {found['clusters']}")
            continue
        if len(names) < 2:
            continue
        if len(names) == len(y):  # every pair its own family: the plain interval, z from the normal
            deff, z = 1.0, float(norm.ppf(1 - level / 2))
        else:
            deff, z = design_effect(y, groups), float(student.ppf(1 - level / 2, len(names) - 1))
        low, high = wilson(y.sum() / deff, len(y) / deff, z)
        for name, mine in (("design_effect", deff), ("low", low), ("high", high)):
            if abs(found[name] - mine) > TOLERANCE:
                wrong.append(f"{chapter['name']} {model}: {name} {found[name]} against {mine}")
    for comparison in (c for c in data["comparisons"] if c["unit"] == "pairs"):
        chapter = chapters[comparison["chapter"]]
        a, b = (passed_pairs(data, chapter, m) for m in (comparison["a"], comparison["b"]))
        families = family_of(chapter)
        both = [p for p in a if p in b]
        sums: dict[str, int] = {}
        for pair in both:
            sums[families[pair]] = sums.get(families[pair], 0) + int(a[pair]) - int(b[pair])
        if comparison["clustered"]:
            p = sign_flip(list(sums.values()))
        else:
            only_a = sum(a[p] and not b[p] for p in both)
            only_b = sum(b[p] and not a[p] for p in both)
            p = 1.0 if only_a + only_b == 0 else float(binomtest(only_a, only_a + only_b, 0.5).pvalue)
        if abs(comparison["p_value"] - p) > TOLERANCE:
            wrong.append(f"comparison {chapter['name']}: p {comparison['p_value']} against {p}")
    raw = [c["p_value"] for c in data["comparisons"]]
    if raw:
        adjusted = multipletests(raw, method="holm")[1]
        for comparison, mine in zip(data["comparisons"], adjusted):
            if abs(comparison["p_adjusted"] - mine) > TOLERANCE:
                wrong.append(f"comparison {comparison['chapter']} {comparison['unit']}: Holm {comparison['p_adjusted']} "
                             f"against {mine}")
    return wrong


def main(argv: list[str]) -> int:
    data = json.loads(open(argv[0], encoding="utf-8").read())
    wrong = check(data)
    print("\n".join(wrong))
    rollups = sum(1 for r in data["rollups"] if r["pairs_clustered"]["n"])
    tests = sum(1 for c in data["comparisons"] if c["unit"] == "pairs")
    print(f"{len(wrong)} figures differ; checked {rollups} chapter rollups' clustered shares and {tests} pair "
          f"comparisons (and Holm over all {len(data['comparisons'])} tests)")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
