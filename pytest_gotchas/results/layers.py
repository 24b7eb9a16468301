"""Who leads after each layer, and from which layer the final leader stays ahead (--gotchas-layers), pure. A layer
whose two probabilities are closer than the effect floor (results/effects.py; marked on its LayerReading) leads
nobody, as an exact tie does: the layer a verdict is "decided at" is one the floor lets count."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .vocabulary import Leader


def leader(p_correct: float, p_wrong: float) -> str:
    """Leader.CORRECT or WRONG when strictly ahead; an exact tie (equal probabilities) is nobody's lead: TIE."""
    if p_correct > p_wrong:
        return Leader.CORRECT
    if p_wrong > p_correct:
        return Leader.WRONG
    return Leader.TIE


@dataclass(frozen=True)
class Stretch:
    """Consecutive layers with the same leader (TIE: nobody ahead)."""

    leader: str
    first: int
    last: int


@dataclass(frozen=True)
class Lead:
    """How the lead went over the layers."""

    stretches: tuple[Stretch, ...]  # in layer order, covering every layer read
    final: str  # the leader after the last layer: CORRECT, WRONG or TIE
    decided_at: int | None  # the first layer from which the final leader is ahead at every later layer; None: a tie
    # or within the floor after the last layer
    changed_hands: bool  # the side that is behind at the end was ahead after some layer

    @property
    def last_layer(self) -> int:
        return self.stretches[-1].last


def lead(readings: Sequence[tuple[float, float]], first_layer: int = 1, under: Sequence[bool] = ()) -> Lead:
    """From (p_correct, p_wrong) after each layer, from ``first_layer`` on: who led where, and where it was decided.
    A layer marked in ``under`` (the two closer than the effect floor) is nobody's lead: Leader.FLOOR."""
    if not readings:
        raise ValueError("lead needs the reading of at least one layer")
    stretches: list[Stretch] = []
    for n, (p_correct, p_wrong) in enumerate(readings):
        layer = first_layer + n
        close = n < len(under) and under[n] and p_correct != p_wrong
        who = Leader.FLOOR if close else leader(p_correct, p_wrong)
        if stretches and stretches[-1].leader == who:
            stretches[-1] = Stretch(who, stretches[-1].first, layer)
        else:
            stretches.append(Stretch(who, layer, layer))
    final = stretches[-1].leader
    if final in (Leader.TIE, Leader.FLOOR):
        return Lead(tuple(stretches), final, None, False)
    other = Leader.WRONG if final == Leader.CORRECT else Leader.CORRECT
    changed = any(s.leader == other for s in stretches)
    return Lead(tuple(stretches), final, stretches[-1].first, changed)
