"""What the views say where a chapter's pairs come in families (report/claims.py, report/wording_claims.py,
report/page_claims.py, the terminal's chapter lines): the instances passed with their clustered interval, the
comparison as the sign-flip test over families with what the difference seen needs, what a chapter can show in
families, the families whose instance zero disagrees with their instances, and on the page every family beside its
instance zero. Word for word, from a report built by hand (helpers/families.py); and a report without families says
what it said before."""

from __future__ import annotations

import re

from helpers.familyreports import pair_chapter, pair_report, without_families
from scipy.stats import t as student

from pytest_gotchas.report import terminal
from pytest_gotchas.report.html import render

from ..results.test_clustering import plain_wilson, reference_design_effect

# Two families of 8 and 6 pairs and one lone pair. model-a passes all but two; model-b passes instance zero of "keys"
# and none of its seven other instances, and half of "order" (its instance zero among them).
CHAPTER = pair_chapter("dicts", {"keys": 8, "order": 6}, lone=1)
PASSED = {"model-a": {"dicts": [True] * 7 + [False] + [True] * 5 + [False, True]},
          "model-b": {"dicts": [True] + [False] * 7 + [True, False, True, False, True, False] + [False]}}
REPORT = pair_report([CHAPTER], PASSED)


def summary(report) -> list[str]:
    return [text for text, _ in terminal.summary_lines(report, [])]


def reference_text(counts: list[tuple[int, int]]) -> str:
    """The clustered count as the line should read, its numbers from the references of test_clustering.py."""
    k, n = sum(c for c, _ in counts), sum(m for _, m in counts)
    deff = reference_design_effect(counts)
    low, high = plain_wilson(k / n, n / deff, student.ppf(0.975, len(counts) - 1))
    return f"{k}/{n} paired instances in {len(counts)} families [{low:.1%}, {high:.1%}] (design effect {deff:.2f})"


def test_the_chapter_line_gives_the_instances_with_their_clustered_interval() -> None:
    lines = summary(REPORT)
    a = reference_text([(7, 8), (5, 6), (1, 1)])
    b = reference_text([(1, 8), (3, 6), (0, 1)])
    assert a == "13/15 paired instances in 3 families [34.0%, 98.8%] (design effect 1.00)"
    assert f"[model-a] ch dicts: {a}; 28/30 cases ok [78.7%, 98.2%]" in lines
    assert f"[model-b] ch dicts: {b}; 19/30 cases ok [45.5%, 78.1%]" in lines
    assert "  dicts    13/15 in 3 families [34-99%]  4/15 in 3 families [4-77%]" in lines


def test_the_comparison_is_over_families_and_says_what_the_difference_needs() -> None:
    """The pairs' paired differences per family: keys 6, order 2, the lone pair 1; all one way over 3 families the
    exact test gives 2/8, and 6 families like these (mean 3, sd 2.65: 3 sqrt(6) / 2.65 = 2.78 > t(5) = 2.57) would
    show the difference, 30 pairs at 5 a family. Counted as independent pairs, the same counts gave p = 0.0039."""
    lines = summary(REPORT)
    assert ("  where units come in families (the instances of one trap), a chapter's comparison is the exact sign-flip "
            "test over its families of their paired differences, which is exact McNemar where each unit is its own"
            ) in lines
    assert ("  dicts: pairs: model-a only 9, model-b only 0, both 4, neither 2; p = 0.25, Holm-adjusted 0.5: no "
            "difference shown; exact sign-flip test over 3 families; the difference seen would show from 6 families "
            "(about 30 pairs), before correction") in lines
    assert ("  dicts: 15 paired instances in 3 families: fewer than the 6 families, all one way, the exact sign-flip "
            "test needs; no difference in pass counts can be shown") in lines
    assert any(line.startswith("  dicts: log ratio model-a - model-b: ") and line.endswith(
        "over 30 cases in 4 families (cluster-robust t interval): too few families for a direction (6 needed)")
        for line in lines)


def test_the_families_whose_instance_zero_disagrees_are_named() -> None:
    lines = summary(REPORT)
    assert ("[model-a] families beside their instance zero: 2 with drawn instances in 1 chapter; surface-dep "
            "(instance zero passes, most instances fail) 0; instance zero alone fails 0") in lines
    assert ("[model-b] families beside their instance zero: 2 with drawn instances in 1 chapter; surface-dep "
            "(instance zero passes, most instances fail) 1 (dicts/keys); instance zero alone fails 0") in lines
    assert ("  [model-b] dicts: surface-dep (instance zero passes, most instances fail): keys: instance zero pass; "
            "instances 0/7 passed [0.0%, 35.4%]") in lines


def test_the_page_shows_every_family_beside_its_instance_zero() -> None:
    page = render(REPORT)
    table = page[page.index('<table class="chapters comparisons families">'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r"<tr class=\"(\w+)\">.*?<td>(.*?)</td><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td>"
                      r"<td class=\"num\">(.*?)</td>\s*<td class=\"outcome\">(.*?)</td>", table, re.S)
    assert rows == [
        ("unshown", "model-a", "keys", "pairs", "pass", "6/7 passed [48.7%, 97.4%]", ""),
        ("unshown", "model-a", "order", "pairs", "pass", "4/5 passed [37.6%, 96.4%]", ""),
        ("shown", "model-b", "keys", "pairs", "pass", "0/7 passed [0.0%, 35.4%]",
         "surface-dep: instance zero passes, most instances fail"),
        ("unshown", "model-b", "order", "pairs", "pass", "2/5 passed [11.8%, 76.9%]", ""),
    ]
    assert f"<b>{reference_text([(1, 8), (3, 6), (0, 1)])}</b>" in page
    assert "exact sign-flip test over 3 families; the difference seen would show from 6 families (about 30 pairs)" \
        in page


def test_without_families_the_views_say_what_they_said() -> None:
    plain = without_families(REPORT)
    lines = summary(plain)
    assert ("[model-b] ch dicts: 4/15 pairs [10.9%, 52.0%]; 19/30 cases ok [45.5%, 78.1%]") in lines
    assert ("  dicts: pairs: model-a only 9, model-b only 0, both 4, neither 2; p = 0.00391, Holm-adjusted 0.00781: "
            "model-a ahead") in lines
    assert not any("famil" in line and "one family, Holm" not in line for line in lines)
    assert 'class="chapters comparisons families"' not in render(plain)
