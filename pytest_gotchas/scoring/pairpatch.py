"""--gotchas-patch for the pairs (and twins) a case is the last member of: both directions, under each primer the
two members share, on this process's model (patching.py computes the cells, results/schema.Patching holds them).

The item of a pair's last member (in chapter order) computes the pair's patching in its own process, so that under
xdist, where the other member may be scored by another worker, serial and parallel runs give the same cells. The
other member's cuts come from the cut cache (or the tokenizer), as its own item's do.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..results.circuits import Edges
from ..results.effects import Floor, least, under_floor, why_under
from ..results.schema import Components, EffectFloor, HeadPattern, Patching, Screened
from ..results.screening import screen_score
from ..results.vocabulary import (Cell, ComponentKind, ComponentsMethod, EdgeCorruption, PatchMethod, PatchMetric,
                                  PatchMode)
from ..truth.collect import Planned
from ..truth.partners import Partner
from .cut import CutPlan
from .pairedges import EdgeConfig


def _by_primer(planned: Planned, cuts: list[CutPlan]) -> dict[str | None, CutPlan]:
    return {p.primer: cut for p, cut in zip(planned.prompts, cuts) if p.variant is None}


@dataclass(frozen=True)
class PatchRequest:
    """What a run asks of every direction's patching (the options scoring passes on)."""

    method: PatchMethod
    metric: PatchMetric
    mode: PatchMode
    k: int  # the screen's top-k
    floor: Floor = Floor()
    edges: EdgeConfig | None = None  # --gotchas-patch-edges (pairedges.py); None: no edges


def floored(entry: Patching, magnitude: float, floor: Floor) -> Patching:
    """The direction with its effect floor (results/effects.py): the noise the kernels made measurable in it (the
    shared prefix patched, every head against the attention write), and why it is under the floor, if it is; under
    it, nothing ranked is kept (the screen's score, the top heads' attention), the logit changes are."""
    from dataclasses import replace

    grid = entry.components
    noise = max(entry.prefix_shift, grid.heads_apart if grid is not None else 0.0)
    under = why_under(entry.source_value - entry.unpatched, magnitude, entry.metric_dtype, floor, noise)
    record = EffectFloor(steps=floor.steps, logits=floor.logits, magnitude=magnitude, noise=noise, under=under)
    if under is not None and grid is not None:
        grid = replace(grid, score=None, patterns=[])
    return replace(entry, floor=record, components=grid)


def _direction(model: Any, passes: dict[tuple[int, ...], Any], source: tuple[str, CutPlan],
               target: tuple[str, CutPlan], decode: Callable[[int], str], request: PatchRequest,
               writes: dict[tuple[int, ...], Any] | None = None, mean: Callable[[Any], Any] | None = None
               ) -> tuple[Any, Patching]:
    from .components import component_pass
    from .patching import member_pass, patch_exact

    for _, cut in (source, target):
        if cut.context_ids not in passes:
            passes[cut.context_ids] = (member_pass(model, cut.context_ids) if request.mode == PatchMode.RESIDUAL
                                       else component_pass(model, cut.context_ids))
    ids = (target[1].correct_ids[0], target[1].wrong_ids[0])
    mine, theirs = passes[source[1].context_ids], passes[target[1].context_ids]
    started = time.perf_counter()
    method, metric, mode, k = request.method, request.metric, request.mode, request.k
    result = patch_exact(model, getattr(mine, "member", mine), getattr(theirs, "member", theirs), ids, method, metric)
    seconds = time.perf_counter() - started
    a = result.alignment
    return result, floored(Patching(
        source=source[0], target=target[0], primer=None, source_ids=list(source[1].context_ids),
        target_ids=list(target[1].context_ids), candidate_ids=list(ids), layers=result.layers,
        positions=result.positions, tokens=[decode(target[1].context_ids[t]) for _, t in result.positions],
        source_tokens=[decode(source[1].context_ids[s]) for s, _ in result.positions],
        unpatched=result.unpatched, source_value=result.source_value, cells=result.cells, method=result.method,
        unaligned_source=list(a.unaligned_source), unaligned_target=list(a.unaligned_target), prefix=a.prefix,
        prefix_apart=result.prefix_apart, prefix_shift=result.prefix_shift, metric_dtype=result.metric_dtype,
        step=result.step, seconds=seconds,
        components=None if mode == PatchMode.RESIDUAL else _components(model, mine, theirs, ids, metric, k, decode,
                                                                       mode, request.floor),
        edges=None if request.edges is None else _edges(model, getattr(mine, "member", mine),
                                                        getattr(theirs, "member", theirs), ids, request.edges,
                                                        request.floor, {} if writes is None else writes, mean)),
        result.magnitude, request.floor)


def _edges(model: Any, source: Any, target: Any, ids: tuple[int, int], config: EdgeConfig, floor: Floor,
           writes: dict, mean: Callable[[Any], Any] | None = None) -> Edges:
    """A direction's edges (pairedges.py), or its record that it is under the floor (results/effects.py): the
    floor the component grid stands on, judged on the effect the edges explain, their float32 one, in steps of the
    dtype the model computed its hidden states in (a bfloat16 effect of one step can be a fraction of it in float32:
    SmolLM2's list-vs-set-reversed, 0.125 and 0.0094) and in logits."""
    from .edgegraph import member_writes
    from .head import Float32Head
    from .pairedges import edge_entry

    head = Float32Head(model, ids)
    own, theirs = head.reading(target.head_input), head.reading(source.head_input)
    effect = (theirs[0] - theirs[1]) - (own[0] - own[1])
    dtype = str(target.logits.dtype).split(".")[-1]
    under = under_floor(effect, max(abs(v) for v in (*own, *theirs)), dtype, floor)

    def writes_of(token_ids: tuple[int, ...], graph: Any) -> Any:
        if token_ids not in writes:
            writes[token_ids] = member_writes(model, graph, token_ids)
        return writes[token_ids]

    return edge_entry(model, source, target, ids, config, writes_of, under, mean)


def _components(model: Any, source: Any, target: Any, ids: tuple[int, int], metric: PatchMetric, k: int,
                decode: Callable[[int], str], mode: PatchMode = PatchMode.COMPONENTS, floor: Floor = Floor()
                ) -> Components:
    """The exact component grid of one direction (not with PatchMode.SCREEN), the screen's top-k with their exact
    values beside them, and where the heads that restore most at the cut read from; with the seconds each took."""
    from dataclasses import replace

    from .components import patch_components
    from .screen import screen

    started = time.perf_counter()
    grid = None if mode == PatchMode.SCREEN else patch_components(model, source, target, ids, metric)
    grid_seconds = time.perf_counter() - started if grid is not None else 0.0
    started = time.perf_counter()
    screened = screen(model, source, target, ids, k, metric=metric)
    screen_seconds = time.perf_counter() - started - screened.verify_seconds  # unpatched's reading included
    entry = (screen_entry(model, target, screened, k, decode) if grid is None
             else components_entry(model, target, grid, screened, k, decode, floor))
    return replace(entry, grid_seconds=grid_seconds, screen_seconds=screen_seconds,
                   verify_seconds=screened.verify_seconds)


SCREEN_ONLY = ("exact grid: not run (--gotchas-patch-screen): the screen's top-k are verified by exact patching, "
               "the grid's checks and the screen's score (its top-k and its order against the grid) are not computed")


def screen_entry(model: Any, target: Any, screened: Any, k: int, decode: Callable[[int], str]) -> Components:
    """The typed entry of a direction's screen alone (screen.Screened): the top-k with their verified exact values
    beside the estimates, no grid and no score (it needs the grid), and the attention of the verified heads that
    move the metric most at the cut."""
    from .components import layer_blocks

    found = layer_blocks(model)
    top = [Screened(kind=c.kind, layer=c.layer, head=c.head, position=c.position, estimate=screened.estimates[c],
                    exact=screened.verified[c], graddrop=screened.graddrop.get(c)) for c in screened.top(k)]
    cut = max(c.position for c in screened.estimates)  # the last aligned pair: the target's cut
    return Components(layers=[], heads=found[0].heads, attn=[], mlp=[], head=[], post_norms=found[0].post_norms,
                      batched=False, checks=[SCREEN_ONLY], screened=top, method=ComponentsMethod.SCREEN,
                      patterns=_patterns(model, target, top_heads_at_cut(screened.verified, screened.unpatched, cut),
                                         decode))


def _patterns(model: Any, target: Any, heads: list[tuple[int, int]], decode: Callable[[int], str]
              ) -> list[HeadPattern]:
    from .attention import cut_patterns

    weights = cut_patterns(model, target.member.ids, heads)
    tokens = [decode(i) for i in target.member.ids]
    return [HeadPattern(layer=layer, head=head, weights=weights[(layer, head)], tokens=tokens) for layer, head in heads]


def components_entry(model: Any, target: Any, grid: Any, screened: Any, k: int, decode: Callable[[int], str],
                     floor: Floor = Floor()) -> Components:
    """The typed entry of a direction's exact grid (components.ComponentResult) and screen (screen.Screened): the
    top-k with exact values beside estimates, the screen judged against the grid (results/screening.py: overlap,
    mass, the verified-recall curve), the all-heads check's measured disagreement, and the top heads' attention."""
    exact = {}
    for i, layer in enumerate(grid.layers):
        for j in range(len(grid.positions)):
            exact[Cell(ComponentKind.ATTN, layer, 0, j)] = grid.attn[i][j]
            exact[Cell(ComponentKind.MLP, layer, 0, j)] = grid.mlp[i][j]
            exact.update((Cell(ComponentKind.HEAD, layer, h, j), grid.head[i][h][j]) for h in range(grid.heads))
    top = [Screened(kind=c.kind, layer=c.layer, head=c.head, position=c.position, estimate=screened.estimates[c],
                    exact=exact[c], graddrop=screened.graddrop.get(c)) for c in screened.top(k)]
    effect = grid.source_value - grid.unpatched
    changes = {cell: value - grid.unpatched for cell, value in exact.items()}
    every = len(screened.estimates)
    score = (screen_score(screened.top(every), screened.top(every, graddrop=False), changes, k,
                          least(grid.magnitude, grid.metric_dtype, floor)) if effect else None)
    heads = top_heads_at_cut(exact, grid.unpatched, len(grid.positions) - 1) if effect else []
    return Components(layers=grid.layers, heads=grid.heads, attn=grid.attn, mlp=grid.mlp, head=grid.head,
                      post_norms=grid.post_norms, batched=grid.batched,
                      checks=[f"{c.name}: {c.detail}" for c in grid.checks], screened=top, score=score,
                      patterns=_patterns(model, target, heads, decode), heads_apart=grid.heads_apart)


PATTERNS = 3  # heads whose attention at the cut the report shows


def top_heads_at_cut(exact: dict[Cell, float], unpatched: float, cut: int,
                     count: int = PATTERNS) -> list[tuple[int, int]]:
    """The (layer, head) of the ``count`` heads whose patch at the cut moves the metric furthest (either way), those
    that move it at all."""
    moved = [(abs(v - unpatched), c.layer, c.head) for c, v in exact.items() if c.kind == ComponentKind.HEAD
             and c.position == cut
             and v != unpatched]
    return [(layer, head) for _, layer, head in sorted(moved, key=lambda m: (-m[0], m[1], m[2]))[:count]]


def patch_partners(model: Any, planned: Planned, cuts: list[CutPlan], partners: list[Partner],
                   cuts_of: Callable[[Planned], list[CutPlan]], decode: Callable[[int], str], request: PatchRequest,
                   chapter: Sequence[Planned] = (), means: dict | None = None) -> list[Patching]:
    """Every partner's pair in both directions (first member -> last, then last -> first), per shared primer, by
    patching.py's method (``full`` again where its checks fail: patch_exact), the metric's logits by head.py's
    metric; with PatchMode.COMPONENTS also components.py's exact grid of each direction and screen.py's top k
    beside it, with PatchMode.SCREEN the screen's verified top k without the grid; with ``request.edges`` the
    scores, top edges and circuits of each direction (pairedges.py), their circuits against the mean over
    ``chapter`` (every case of the chapter, chaptermean.py; ``means`` the process's) with the mean corruption;
    each held to the effect floor. A failed check of ``full`` (or of the component grid) raises CheckError, a model
    without decoder layers PatchingError."""
    from dataclasses import replace

    from .patching import CheckError

    mine = _by_primer(planned, cuts)
    passes: dict[tuple[int, ...], Any] = {}
    writes: dict[tuple[int, ...], Any] = {}  # each member's writes, for the edges
    means_of = _means(model, chapter, cuts_of, request, {} if means is None else means)
    found = []
    for partner in partners:
        theirs = _by_primer(partner.other, cuts_of(partner.other))
        for primer in [p for p in mine if p in theirs]:
            first, last = (partner.other.case.id, theirs[primer]), (planned.case.id, mine[primer])
            for source, target in ((first, last), (last, first)):
                try:
                    _, entry = _direction(model, passes, source, target, decode, request, writes,
                                          None if means_of is None else means_of(primer))
                except CheckError as error:
                    under = f" under primer {primer!r}" if primer else ""
                    kind = "twin" if partner.twin else "pair"
                    raise CheckError(f"{planned.where}: {kind} {partner.group!r}, {source[0]} -> {target[0]}{under}: "
                                     f"{error}") from None
                found.append(replace(entry, primer=primer, group=partner.group, twin=partner.twin))
    return found


def _means(model: Any, chapter: Sequence[Planned], cuts_of: Callable[[Planned], list[CutPlan]],
           request: PatchRequest, kept: dict) -> Callable[[str | None], Callable[[Any], Any]] | None:
    """With the mean corruption, per primer the chapter's mean as the edges ask for it (on first use, once per
    process); None with the partner's."""
    if request.edges is None or request.edges.corrupt != EdgeCorruption.MEAN:
        return None
    from .chaptermean import chapter_contexts, chapter_mean

    contexts: list[dict[str | None, Any]] = []  # the chapter's cut contexts, read once, on first use

    def of(primer: str | None) -> Callable[[Any], Any]:
        def mean(graph: Any) -> Any:
            if not contexts:
                contexts.append(chapter_contexts(chapter, cuts_of))
            return chapter_mean(model, graph, contexts[0].get(primer, ()), kept)
        return mean
    return of
