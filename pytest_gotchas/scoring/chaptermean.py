"""The mean over a chapter of every node's write (--gotchas-patch-edges-corrupt mean): what a circuit's corrupted
edges read in place of the partner's write, as MIB's mean ablation (Mueller et al. 2025).

The chapter is every case of the chapter that is scored and verified (its ground truth executed and checked, none
refused), whatever -k selected, under the direction's primer: each case's prompt without a variant, cut where its
candidates part (its cut context, from the cut cache or the tokenizer, as the partner's is). So a direction's curve
is the same whichever of the chapter's cases a run selects, and in every process of an xdist run.

Positions are matched back from the cut: the prompts differ in length, and what the cut reads is the last line of
the transcript, so a position d tokens before a prompt's cut is averaged with the positions d tokens before every
other prompt's cut. A position further back than a shorter prompt reaches takes the mean over the prompts that have
it (never a zero for the missing ones, which would pull it towards an empty write). The sums are in float64 in
chapter order, then float32: the same prompts give the same bits.

Each process computes a chapter's mean once per primer (a forward pass per case, its writes summed and dropped:
they are not kept) and keeps it for every direction of that chapter and primer (the last few means only:
`chapter_mean`).

torch is imported inside the functions that need it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..results.verdict import Status
from ..truth.collect import Planned
from .cut import CutPlan
from .edgegraph import Graph, Writes, member_writes

Contexts = tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class ChapterMean:
    """The mean write of every node at each distance back from the cut: index d of ``nodes`` [longest, nodes,
    hidden], ``o`` and ``attn`` [longest, layers, hidden] (edgegraph.Writes's fields) is d positions before the cut
    (0: the cut), over the ``count[d]`` of the chapter's ``prompts`` prompts that reach that far."""

    nodes: Any
    o: Any
    attn: Any
    count: tuple[int, ...]
    prompts: int

    def at(self, positions: Sequence[int], length: int) -> Writes:
        """The mean writes at ``positions`` of a prompt of ``length`` tokens (its last the cut), as one row; a
        position further back than every prompt of the chapter reaches is an error (the prompt is one of them)."""
        back = [length - 1 - t for t in positions]
        if any(d >= len(self.count) for d in back):
            raise ValueError(f"a position {max(back)} tokens before the cut: no prompt of the chapter's mean reaches "
                             f"it (the longest has {len(self.count)} tokens)")
        return Writes(self.nodes[back][None], self.o[back][None], self.attn[back][None])


def mean_of(writes: Iterable[Writes], longest: int) -> ChapterMean:
    """The mean of prompts' writes (each a member's pass, one row, every position; none longer than ``longest``),
    matched back from the cut; each is summed as it comes, so that one prompt's writes are held at a time."""
    import torch

    sums: list[Any] = []
    count = [0] * longest
    prompts = 0
    for w in writes:
        if not sums:
            sums = [torch.zeros(longest, *part.shape[2:], dtype=torch.float64, device=part.device)
                    for part in (w.nodes, w.o, w.attn)]
        prompts += 1
        length = w.nodes.shape[1]
        for total, part in zip(sums, (w.nodes, w.o, w.attn)):
            total[:length] += part[0].flip(0).double()  # index d: d positions before the cut
        for d in range(length):
            count[d] += 1
    divide = torch.tensor(count, dtype=torch.float64, device=sums[0].device)[:, None, None]
    nodes, o, attn = ((total / divide).float() for total in sums)
    return ChapterMean(nodes, o, attn, tuple(count), prompts)


def chapter_contexts(chapter: Sequence[Planned], cuts_of: Callable[[Planned], list[CutPlan]]
                     ) -> dict[str | None, Contexts]:
    """Per primer, the cut context of each scored, verified case of ``chapter`` (its prompt without a variant), in
    chapter order."""
    found: dict[str | None, list[tuple[int, ...]]] = {}
    for planned in chapter:
        if not planned.verified or planned.status != Status.SCORED or planned.refusals:
            continue
        for prompt, cut in zip(planned.prompts, cuts_of(planned)):
            if prompt.variant is None:
                found.setdefault(prompt.primer, []).append(cut.context_ids)
    return {primer: tuple(contexts) for primer, contexts in found.items()}


KEPT = 4  # means a process keeps: a chapter's primers, as the items run in chapter order


def chapter_mean(model: Any, graph: Graph, contexts: Contexts, kept: dict[Contexts, ChapterMean]) -> ChapterMean:
    """The mean over ``contexts`` on this model, computed once per process (``kept``: the process's means, the last
    KEPT asked for: a mean holds every node's write at every position, tens of MB on the embedded models, and a run
    over the library would hold one per chapter and primer; one computed again is the same bits)."""
    if contexts not in kept:
        while len(kept) >= KEPT:
            kept.pop(next(iter(kept)))
        kept[contexts] = mean_of((member_writes(model, graph, ids) for ids in contexts),
                                 max(len(ids) for ids in contexts))
    return kept[contexts]
