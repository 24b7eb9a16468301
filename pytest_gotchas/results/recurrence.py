"""What a chapter's patched directions share: the components that recur among their top cells. Pure.

A researcher's sentence about a chapter is not about one direction: "in the sets chapter, MLP 11 at the cut carries
the answer in 5 of 6 directions". A component here is a kind, a layer and (for a head) a head, at one of two places:
the target's cut, or before it (the largest of its cells at the aligned positions before the cut, which are other
tokens in each direction). Each direction above the effect floor with an exact component grid names its TOP
components by the fraction of its effect they restore; a component recurs where two or more directions name it.

Its share of the effect over the chapter is a ratio of means, as MIB normalises faithfulness over a task's pairs:
the sum over the directions of its change, oriented by the direction's effect, over the sum of their |effects|
(each direction weighs by its effect, so a direction of a tiny effect cannot carry the mean with a huge fraction).
"""

from __future__ import annotations

from collections.abc import Sequence

from .schema import Patching
from .typed import dataclass as typed
from .vocabulary import ComponentKind, ComponentsMethod

TOP = 3  # a direction's top components: as many as its components line names
Key = tuple[ComponentKind, int, int, bool]  # kind, layer, head (0 but for a head), at the cut


@typed
class Recurring:
    """One component among the top cells of two or more of a chapter's directions."""

    kind: ComponentKind
    layer: int
    head: int | None  # the query head, for a head
    at_cut: bool  # at the target's cut; False: at an aligned position before it
    directions: int  # the directions that name it among their top components
    of: int  # the chapter's directions above the floor with an exact grid
    share: float  # its change over those directions, a ratio of means: sum of oriented changes / sum of |effects|


def explained(directions: Sequence[Patching]) -> list[Patching]:
    """The directions a chapter's recurrence reads: an exact grid, an effect, above the floor."""
    return [p for p in directions if p.components is not None and p.components.method == ComponentsMethod.EXACT
            and p.source_value != p.unpatched and p.under is None]


def changes(p: Patching) -> dict[Key, float]:
    """Every component of one direction at the cut and before it: its largest change of the metric, oriented so
    that restoring the effect is positive (in logits)."""
    grid = p.components
    assert grid is not None
    sign = 1.0 if p.source_value > p.unpatched else -1.0
    cut = len(p.positions) - 1
    found: dict[Key, float] = {}

    def add(kind: ComponentKind, layer: int, head: int, row: list[float]) -> None:
        oriented = [(v - p.unpatched) * sign for v in row]
        found[(kind, layer, head, True)] = oriented[cut]
        if cut:
            found[(kind, layer, head, False)] = max(oriented[:cut])

    for i, layer in enumerate(grid.layers):
        add(ComponentKind.ATTN, layer, 0, grid.attn[i])
        add(ComponentKind.MLP, layer, 0, grid.mlp[i])
        for h, row in enumerate(grid.head[i]):
            add(ComponentKind.HEAD, layer, h, row)
    return found


def recurring(directions: Sequence[Patching], top: int = TOP) -> list[Recurring]:
    """The components two or more of ``directions`` (one chapter, one model) name among their ``top``, most
    directions first, then by their share."""
    mine = explained(directions)
    if len(mine) < 2:
        return []
    per = [changes(p) for p in mine]
    total = sum(abs(p.source_value - p.unpatched) for p in mine)
    named: dict[Key, int] = {}
    for found in per:
        for key in sorted((k for k in found if found[k] > 0), key=lambda k: (-found[k], k))[:top]:
            named[key] = named.get(key, 0) + 1
    out = [Recurring(kind=key[0], layer=key[1], head=key[2] if key[0] == ComponentKind.HEAD else None, at_cut=key[3],
                     directions=n, of=len(mine), share=sum(found.get(key, 0.0) for found in per) / total)
           for key, n in named.items() if n >= 2]
    return sorted(out, key=lambda r: (-r.directions, -r.share, r.kind, r.layer, r.head or 0, not r.at_cut))
