"""--gotchas-patch's pairs: which pairs (and twins) a scored case patches, and with which other member. Pure: it reads
the chapter's pairs and twins, its case order and the cases selected for the same model.

The item of a pair's last member in chapter order patches the pair in its own process (scoring/pairpatch.py), so that
under xdist, where the other member may be scored by another worker, serial and parallel runs give the same cells.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..results.verdict import Status
from .collect import Planned


@dataclass(frozen=True)
class Partner:
    """A pair (or twin) the scored case is the last member of, and its other member (a planned case)."""

    group: str
    twin: bool
    other: Planned


def partners(planned: Planned, order: Mapping[str, int], selected: Mapping[str, Planned]) -> list[Partner]:
    """The pairs (and twins) `planned` is the last member of in chapter order (`order`: case id -> place), whose
    other member is selected too (`selected`: case id -> planned case, for the same model; ``-k`` may leave it out)
    and scored."""
    info, me = planned.info, planned.case.id
    found = []
    for twin, groups in ((False, info.pairs), (True, info.twins)):
        for group, members in groups.items():
            if len(members) != 2 or me not in members or max(members, key=lambda m: order.get(m, -1)) != me:
                continue
            other = selected.get(members[0] if members[1] == me else members[1])
            if other is not None and other.status == Status.SCORED:
                found.append(Partner(group, twin, other))
    return found
