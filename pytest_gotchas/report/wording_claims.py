"""The words of the report's claims: a count with its interval, the family of tests and its correction, the twins'
test, the paired log ratio difference and what a chapter can show; and, where units come in families, the count with
its clustered interval, the test over families, what a difference needs and each family beside its instance zero.
Beside wording.py (which uses `interval_text` and `p_text` for the chapter and comparison lines); every view takes
these sentences from here.
"""

from __future__ import annotations

from ..results.clustering import MOST_FAMILIES, ClusteredInterval
from ..results.familyshares import FamilyShare
from ..results.pairwise import LogRatioDifference, ModelComparison, TwinSplit
from ..results.stats import Interval, MeanInterval
from ..results.vocabulary import FamilyKind, IntervalMethod


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


def mean_interval_text(d: MeanInterval, clusters: int | None = None) -> str:
    """The mean with its interval; cases in `clusters` families (the cluster-robust t interval) say so."""
    if d.mean is None:
        return "no case scored by both"
    if d.method == IntervalMethod.T_CLUSTERED:
        over = f"over {d.n} cases in {clusters} famil{'ies' if clusters != 1 else 'y'}"
        if d.low is None or d.high is None:
            return f"{d.mean:+.2f} nats {over} (one family: no interval)"
        return f"{d.mean:+.2f} nats [{d.low:+.2f}, {d.high:+.2f}] {over} (cluster-robust t interval)"
    if d.low is None or d.high is None:
        return f"{d.mean:+.2f} nats over {d.n} case (one case: no interval)"
    return f"{d.mean:+.2f} nats [{d.low:+.2f}, {d.high:+.2f}] over {d.n} cases (t interval)"


def log_ratio_outcome(m: LogRatioDifference) -> str:
    """What the interval says: a direction only from enough cases (results/pairwise.py), else the numbers alone."""
    if m.difference.low is None:
        return ""
    if not m.enough:
        units = "families" if m.difference.method == IntervalMethod.T_CLUSTERED else "cases"
        return f": too few {units} for a direction ({m.cases_needed} needed)"
    if m.shown:
        return f": {m.a if (m.difference.mean or 0) > 0 else m.b} leans further toward the right answers"
    return ": the interval holds 0"


def log_ratio_line(m: LogRatioDifference) -> str:
    """The mean paired log ratio difference of two models in one chapter, and what its interval says."""
    return f"log ratio {m.a} - {m.b}: {mean_interval_text(m.difference, m.clusters)}{log_ratio_outcome(m)}"


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


# -- families: instances counted in clusters (results/clustering.py, results/familyshares.py) -------------------------

SIGN_FLIP = ("where units come in families (the instances of one trap), a chapter's comparison is the exact sign-flip "
             "test over its families of their paired differences, which is exact McNemar where each unit is its own")


def clustered_text(i: ClusteredInterval, unit: str = "paired instances") -> str:
    """"61/90 paired instances in 10 families [48.2%, 80.1%] (design effect 2.31)": a count whose units come in
    families, with the interval that accounts for them."""
    count = f"{i.k}/{i.n} {unit} in {i.clusters} famil{'ies' if i.clusters != 1 else 'y'}"
    if i.low is None or i.high is None:
        why = "nothing counted" if i.n == 0 else "one family: nothing says how families vary"
        return f"{count} ({why}, no interval)"
    return f"{count} [{i.low * 100:.1f}%, {i.high * 100:.1f}%] (design effect {i.design_effect:.2f})"


def needed_text(families: int | None, units: int | None, unit: str) -> str:
    """How many families (and units) like these the difference seen needs to reach the level."""
    if families is None:
        return "no difference seen"
    if families > MOST_FAMILIES:
        return f"the difference seen would need more than {MOST_FAMILIES} families"
    return f"the difference seen would show from {families} families (about {units} {unit}), before correction"


def comparison_families(c: ModelComparison) -> str:
    """What a comparison of units in families adds to its line: the test over families, and what the difference seen
    needs; "" where every unit is its own family (the line is then the exact McNemar one)."""
    if not c.clustered:
        return ""
    return (f"; exact sign-flip test over {c.clusters} families; "
            f"{needed_text(c.families_needed, c.units_needed, c.unit)}")


_WORDS = {FamilyKind.PAIR: ("pass", "FAIL", "passed"), FamilyKind.TWIN: ("agree", "DISAGREE", "agree"),
          FamilyKind.CASE: ("ok", "not ok", "ok")}


def family_zero(s: FamilyShare) -> str:
    """Instance zero's outcome: "pass", "FAIL" (a pair family), "agree", "DISAGREE", "ok", "not ok", "not counted"."""
    return "not counted" if s.zero is None else _WORDS[s.kind][0] if s.zero else _WORDS[s.kind][1]


def family_instances(s: FamilyShare) -> str:
    """"2/11 passed [5.1%, 47.7%]": the drawn instances."""
    return interval_text(s.instances, _WORDS[s.kind][2])


def family_flag(s: FamilyShare) -> str:
    if s.surface_dependent:
        return "surface-dep: instance zero passes, most instances fail"
    return "instance zero alone fails: most instances pass" if s.zero_alone_fails else ""


def family_share_text(s: FamilyShare) -> str:
    """"hash-order: instance zero pass; instances 2/11 passed [5.1%, 47.7%]"."""
    return f"{s.family}: instance zero {family_zero(s)}; instances {family_instances(s)}"


def families_line(shares: list[FamilyShare]) -> str:
    """One chapter's families under one model whose instance zero disagrees with its instances, each named."""
    surface = [s for s in shares if s.surface_dependent]
    harder = [s for s in shares if s.zero_alone_fails]
    parts = ([f"surface-dep (instance zero passes, most instances fail): " + "; ".join(map(family_share_text, surface))]
             if surface else [])
    parts += ([f"instance zero alone fails (most instances pass): " + "; ".join(map(family_share_text, harder))]
              if harder else [])
    return "; ".join(parts)


def families_total_line(shares: list[FamilyShare]) -> str:
    """"families beside their instance zero: 8 in 2 chapters; surface-dep 1 (families/hash-order); instance zero
    alone fails 0"."""
    chapters = len({s.chapter for s in shares})
    surface = [f"{s.chapter}/{s.family}" for s in shares if s.surface_dependent]
    harder = [f"{s.chapter}/{s.family}" for s in shares if s.zero_alone_fails]
    return (f"families beside their instance zero: {len(shares)} with drawn instances in {chapters} "
            f"chapter{'s' if chapters != 1 else ''}; surface-dep (instance zero passes, most instances fail) "
            f"{len(surface)}" + (f" ({', '.join(surface)})" if surface else "")
            + f"; instance zero alone fails {len(harder)}" + (f" ({', '.join(harder)})" if harder else ""))


def can_show_families(instances: int, families: int, needed: int, smallest: float | None) -> str:
    """What a chapter whose pairs come in families can show: the sign-flip test needs `needed` families, all one
    way."""
    counted = f"{instances} paired instances in {families} families"
    if smallest is None:
        return (f"{counted}: fewer than the {needed} families, all one way, the exact sign-flip test needs; no "
                "difference in pass counts can be shown")
    return (f"{counted}: a difference shows only from {needed} families differing all one way (at least "
            f"{smallest * 100:.0f} points of pass rate, one instance in each), before correction")


def can_show_families_short(families: int, needed: int, smallest: float | None) -> str:
    if smallest is None:
        return f"nothing: fewer than {needed} families ({families})"
    return f"{needed} of {families} families one way (a pass rate {smallest * 100:.0f}+ points apart)"
