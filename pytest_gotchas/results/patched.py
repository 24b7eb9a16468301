"""A chapter's patched directions together, per model: how many fell under the effect floor and why, the screen
summed over the rest (results/screening.py), and the components they share (results/recurrence.py). The JSON's
``effects`` section, computed from the cases' patching as the other sections are. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field

from .recurrence import Recurring, recurring
from .rollup import ChapterRollup
from .schema import Patching
from .screening import ScreenSum, screen_sum
from .typed import dataclass as typed
from .vocabulary import Under


@typed
class ChapterEffects:
    """One chapter's patched directions for one model."""

    chapter: str
    model: str | None
    directions: int  # the patched directions (both directions of every pair and twin, per primer)
    metric_dtypes: list[str]  # the dtype(s) their metric's logits were computed in
    under: dict[Under, int] = field(default_factory=dict)  # directions under the effect floor, by why
    not_recorded: int = 0  # directions of an older report, whose floor was not recorded
    screen: ScreenSum | None = None  # the screen against the exact grid, over the directions above the floor
    recurring: list[Recurring] = field(default_factory=list)


def directions_of(chapter: ChapterRollup) -> list[Patching]:
    """Every patched direction of a chapter's pairs and twins, in their order."""
    return [p for pair in chapter.pairs for p in pair.patching] + [p for twin in chapter.twins for p in twin.patching]


def chapter_effects(chapters: Sequence[ChapterRollup]) -> list[ChapterEffects]:
    """Per chapter and model with patched directions."""
    found = []
    for chapter in chapters:
        mine = directions_of(chapter)
        if not mine:
            continue
        under: dict[Under, int] = {}
        for p in mine:
            if p.under is not None:
                under[p.under] = under.get(p.under, 0) + 1
        scores = [p.components.score for p in mine if p.components is not None and p.components.score is not None]
        found.append(ChapterEffects(chapter.info.name, chapter.model, len(mine),
                                    sorted({p.metric_dtype for p in mine if p.metric_dtype}),
                                    {why: under[why] for why in Under if why in under},
                                    sum(p.floor is None for p in mine), screen_sum(scores), recurring(mine)))
    return found
