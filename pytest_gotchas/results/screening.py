"""The screen judged by what it costs (AtP*, Kramar et al. 2024, arXiv 2403.00745): a user deciding between the
screen and the exact grid wants to know how many exact verifications, made in the screen's order, find the cells the
grid would have named. Pure.

Per direction, against the exact grid's top-k (the k cells whose patch moves the metric furthest, either way, of
those that move it by more than the effect floor: fewer where fewer do):

- **overlap**: how many of the screen's top-k are in the exact top-k;
- **mass**: the |exact change| the screen's top-k holds, over the exact top-k's (1: the best k cells; a screen can
  hold the mass with other cells of equal size, which overlap alone would count as misses);
- **the verified-recall curve**: verifying cells exactly in the screen's order, after n verifications how many of
  the exact top-k have been found; its **area** is the mean of that share over n = 1..cells (1: all of them first;
  about 0.5 for an order that knows nothing).

Over a chapter the counts and the masses are summed (a ratio of sums, as MIB normalises over a task's pairs) and the
curves added at the same numbers of verifications. A direction under the effect floor has no ranking and takes no
part (results/effects.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from .schema import ScreenScore
from .typed import dataclass as typed
from .vocabulary import Cell

CHECKPOINTS = (1, 2, 5, 10)  # the curve is shown at these multiples of k verifications


def exact_top(changes: dict[Cell, float], k: int, least: float = 0.0) -> list[Cell]:
    """The k cells whose |exact change| is largest (cell order among equals), of those that move the metric by
    ``least`` or more (and at all)."""
    moved = (c for c in changes if changes[c] and abs(changes[c]) >= least)
    return sorted(moved, key=lambda c: (-abs(changes[c]), c))[:k]


def found_at(order: Sequence[Cell], top: Sequence[Cell]) -> list[int]:
    """For each cell of ``top``, its 1-based place in the screen's ``order`` (every cell is somewhere in it)."""
    place = {cell: n for n, cell in enumerate(order, 1)}
    return [place[cell] for cell in top]


def area(places: Sequence[int], cells: int) -> float:
    """The mean over n = 1..cells of the share of the cells at ``places`` found within n verifications."""
    if not places or not cells:
        return 0.0
    return sum(cells - p + 1 for p in places) / (len(places) * cells)


def screen_score(order: Sequence[Cell], plain: Sequence[Cell], changes: dict[Cell, float], k: int,
                 least: float = 0.0) -> ScreenScore | None:
    """One direction's screen against its exact grid: ``order`` is every cell in the screen's ranking (GradDrop
    included), ``plain`` the same by |estimate| alone, ``changes`` every cell's exact value less unpatched; the exact
    top-k only of cells that move the metric by ``least`` or more (the effect floor's, results/effects.py: a cell a
    step or two of the metric's dtype from unpatched is tied with hundreds of others, and which of them a top-k
    holds is the rounding's choice, not the screen's). None where no such cell is left (nothing to find)."""
    top = exact_top(changes, k, least)
    if not top:
        return None
    mine = list(order[:len(top)])
    best = sum(abs(changes[c]) for c in top)
    places = found_at(order, top)
    return ScreenScore(k=len(top), cells=len(changes), overlap=len(set(mine) & set(top)),
                       mass=sum(abs(changes[c]) for c in mine) / best if best else 0.0, top_mass=best, found_at=places,
                       area=area(places, len(changes)), area_plain=area(found_at(plain, top), len(changes)),
                       least=least)


def found_within(score: ScreenScore, n: int) -> int:
    """How many of the exact top-k the first n verifications in the screen's order find."""
    return sum(p <= n for p in score.found_at)


@typed
class ScreenSum:
    """The screen over several directions: the counts and masses summed, the curve added."""

    directions: int
    k: int  # the exact top-k's sizes, summed
    overlap: int
    mass: float  # a ratio of sums: the screen's top-k's |exact change| over the exact top-k's
    curve: list[list[int]]  # [verifications as a multiple of each direction's k, found] at CHECKPOINTS
    all_found: int  # the verifications that find every exact top-k cell, summed over the directions
    area: float  # the mean of the directions' areas
    area_plain: float


def screen_sum(scores: Sequence[ScreenScore]) -> ScreenSum | None:
    """The sum over the directions' scores (the mass a ratio of sums, in logits); None without a score."""
    if not scores:
        return None
    exact = sum(s.top_mass for s in scores)
    curve = [[m, sum(found_within(s, m * s.k) for s in scores)] for m in CHECKPOINTS]
    return ScreenSum(len(scores), sum(s.k for s in scores), sum(s.overlap for s in scores),
                     sum(s.mass * s.top_mass for s in scores) / exact if exact else 0.0, curve,
                     sum(max(s.found_at, default=0) for s in scores), sum(s.area for s in scores) / len(scores),
                     sum(s.area_plain for s in scores) / len(scores))
