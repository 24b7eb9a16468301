"""The words of a chapter's patched directions together (results/patched.py): how many fell under the effect floor
and why, the screen summed over the rest, and the components they share. One sentence each, the same in the terminal
and on the page."""

from __future__ import annotations

from ..results.patched import ChapterEffects
from ..results.recurrence import Recurring
from ..results.screening import CHECKPOINTS, ScreenSum
from ..results.vocabulary import ComponentKind, Under

WHY = {Under.NO_EFFECT: "no effect at all", Under.FLOOR: "below the floor",
       Under.NOISE: "within the kernels' measured noise"}


def directions_text(e: ChapterEffects) -> str:
    """How many directions were patched, in which dtype, and how many fell under the floor and why."""
    dtypes = ", ".join(e.metric_dtypes) or "a dtype the report does not record"
    text = f"{e.directions} patched direction{'s' if e.directions != 1 else ''} (logits in {dtypes})"
    under = sum(e.under.values())
    if under:
        why = ", ".join(f"{n} {WHY[w]}" for w, n in e.under.items())
        text += (f"; {under} under the effect floor ({why}: --gotchas-patch-floor-steps and -logits): no percentage, "
                 "ranking or colour for them, their logit changes in the JSON")
    else:
        text += "; none under the effect floor"
    if e.not_recorded:
        text += f"; {e.not_recorded} from a report that did not record the floor"
    return text


def screen_sum_text(s: ScreenSum) -> str:
    """The screen against the exact grid over a chapter's directions above the floor."""
    curve = "/".join(str(found) for _, found in s.curve)
    return (f"the screen over {s.directions} direction{'s' if s.directions != 1 else ''} above the floor: "
            f"{s.overlap} of the exact top-k cells ({s.k} in all) in its top-k, {s.mass * 100:.0f}% of their mass "
            f"(a ratio of sums); verified in its order, {curve} of them found within "
            + "/".join(f"{m}k" for m in CHECKPOINTS) + f" verifications, all after {s.all_found} in all; the curve's "
            f"area {s.area:.3f} on average (by |estimate| alone {s.area_plain:.3f})")


def recurring_name(r: Recurring) -> str:
    """A recurring component as the sentence names it: "MLP 11 at the cut", "head 4.2 before the cut"."""
    name = (f"head {r.layer}.{r.head}" if r.kind == ComponentKind.HEAD
            else f"MLP {r.layer}" if r.kind == ComponentKind.MLP else f"attention {r.layer}")
    return f"{name} {'at' if r.at_cut else 'before'} the cut"


def recurrence_text(chapter: str, found: list[Recurring], shown: int = 3) -> str:
    """The researcher's sentence: "in the sets chapter, MLP 11 at the cut carries the answer in 5 of 6 directions
    (43% of the effect over the 6, a ratio of means)", then the next components that recur; "" where none does."""
    if not found:
        return ""
    first, rest = found[0], found[1:shown]
    text = (f"in the {chapter} chapter, {recurring_name(first)} carries the answer in {first.directions} of "
            f"{first.of} directions ({first.share * 100:.0f}% of the effect over the {first.of}, a ratio of means)")
    if rest:
        text += "; also " + ", ".join(f"{recurring_name(r)} in {r.directions} of {r.of} ({r.share * 100:.0f}%)"
                                      for r in rest)
    return text


def effects_lines(e: ChapterEffects) -> list[str]:
    """A chapter's patched directions in the terminal, after its pairs and twins."""
    lines = [f"patched together: {directions_text(e)}"]
    if e.screen is not None:
        lines.append(f"  {screen_sum_text(e.screen)}")
    sentence = recurrence_text(e.chapter, e.recurring)
    if sentence:
        lines.append(f"  {sentence}")
    return lines
