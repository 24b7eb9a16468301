"""The words of the report's claims: a count with its interval, the family of tests and its correction, the twins'
test, the paired log ratio difference and what a chapter can show. Beside wording.py (which uses `interval_text` and
`p_text` for the chapter and comparison lines); every view takes these sentences from here.
"""

from __future__ import annotations

from ..results.pairwise import LogRatioDifference, TwinSplit
from ..results.stats import Interval, MeanInterval


def p_text(raw: float, adjusted: float) -> str:
    return f"p = {raw:.3g}, Holm-adjusted {adjusted:.3g}"


def interval_text(i: Interval, unit: str) -> str:
    """"2/6 pairs [9.7%, 70.0%]"; a count of nothing says so, with no interval."""
    if i.low is None or i.high is None:
        return f"{i.k}/{i.n} {unit} (nothing counted, no interval)"
    return f"{i.k}/{i.n} {unit} [{i.low * 100:.1f}%, {i.high * 100:.1f}%]"


def family_line(tests: int, level: float) -> str:
    return (f"{tests} test{'s' if tests != 1 else ''} in this report, one family, Holm-corrected: a difference is "
            f"claimed only where the adjusted p is below {level:g}; counts carry {(1 - level) * 100:g}% Wilson "
            "intervals")


def twin_outcome(s: TwinSplit) -> str:
    if s.ahead == "desugared":
        return "the desugared spelling is right more often: the sugar costs the model"
    if s.ahead == "sugared":
        return "the sugared spelling is right more often"
    return "no difference between the spellings shown"


def twin_line(s: TwinSplit) -> str:
    """"twins agree 3/5; right in one spelling only: sugared 0, desugared 2 (neither 0); p = ..., ...: ..."."""
    return (f"twins agree {s.agree}/{s.counted}; right in one spelling only: sugared {s.sugared_only}, desugared "
            f"{s.desugared_only} (disagree, neither ok: {s.neither}); {p_text(s.p_value, s.p_adjusted)}: "
            f"{twin_outcome(s)}")


def mean_interval_text(d: MeanInterval) -> str:
    if d.mean is None:
        return "no case scored by both"
    if d.low is None or d.high is None:
        return f"{d.mean:+.2f} nats over {d.n} case (one case: no interval)"
    return f"{d.mean:+.2f} nats [{d.low:+.2f}, {d.high:+.2f}] over {d.n} cases (t interval)"


def log_ratio_outcome(m: LogRatioDifference) -> str:
    """What the interval says: a direction only from enough cases (results/pairwise.py), else the numbers alone."""
    if m.difference.low is None:
        return ""
    if not m.enough:
        return f": too few cases for a direction ({m.cases_needed} needed)"
    if m.shown:
        return f": {m.a if (m.difference.mean or 0) > 0 else m.b} leans further toward the right answers"
    return ": the interval holds 0"


def log_ratio_line(m: LogRatioDifference) -> str:
    """The mean paired log ratio difference of two models in one chapter, and what its interval says."""
    return f"log ratio {m.a} - {m.b}: {mean_interval_text(m.difference)}{log_ratio_outcome(m)}"


def can_show_text(units: int, pairs: int, needed: int, smallest: float | None) -> str:
    """What a chapter can show from the `units` of its `pairs` that were counted (under every model that ran it)."""
    if pairs == 0:
        return "no pairs: no pass counts to compare"
    if units == 0:
        return f"nothing counted (0 of {pairs} pair{'s' if pairs != 1 else ''}): no pass counts to compare"
    counted = f"{units} pair{'s' if units != 1 else ''}" if units == pairs else f"{units} of {pairs} pairs counted"
    if smallest is None:
        return (f"{counted}: fewer than the {needed} discordant pairs, all one way, the exact test needs; no "
                "difference in pass counts can be shown")
    if smallest >= 1:
        return f"{counted}: a difference shows only if all {units} are discordant, all one way (before correction)"
    return (f"{counted}: a difference shows only from {needed} discordant pairs all one way, i.e. a pass rate at "
            f"least {smallest * 100:.0f} points apart (before correction)")


def can_show_short(units: int, pairs: int, needed: int, smallest: float | None) -> str:
    """The page's cell: what a chapter can show from the `units` of its `pairs` that were counted."""
    if pairs == 0:
        return "no pairs"
    if units == 0:
        return "nothing counted"
    if smallest is None:
        return f"nothing: fewer than {needed} pairs" + ("" if units == pairs else f" ({units} of {pairs} counted)")
    if smallest >= 1:
        return f"only all {units} pairs one way"
    return f"a pass rate {smallest * 100:.0f}+ points apart ({needed} of {units} pairs one way)"


def twins_total_line(splits: list[TwinSplit]) -> str:
    """One model's twins summed over the chapters: a count, never a test (chapters are not pooled for claims)."""
    counted = sum(s.counted for s in splits)
    agree = sum(s.agree for s in splits)
    sugared = sum(s.sugared_only for s in splits)
    desugared = sum(s.desugared_only for s in splits)
    return (f"twins over {len(splits)} chapter{'s' if len(splits) != 1 else ''} (a sum of counts, not tested): agree "
            f"{agree}/{counted}; right in one spelling only: sugared {sugared}, desugared {desugared}")
