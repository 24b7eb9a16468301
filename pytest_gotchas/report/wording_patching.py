"""The words of activation patching, once: a direction's line, its heatmaps' captions and cell titles, the component
grid and the screen (--gotchas-patch, --gotchas-patch-components). Beside wording.py, for the same reason as
wording_claims.py: one fact reads the same in the terminal and on the page.
"""

from __future__ import annotations

from ..results.patching import (Component, Verified, carried_from, strongest, top_components, top_verified,
                                verified_cells)
from ..results.schema import Patching, ScreenScore
from ..results.screening import CHECKPOINTS, found_within
from ..results.vocabulary import ComponentKind, ComponentsMethod, Under


def _span(positions: list[int]) -> str:
    if not positions:
        return ""
    if positions == list(range(positions[0], positions[-1] + 1)):
        return str(positions[0]) if len(positions) == 1 else f"{positions[0]}-{positions[-1]}"
    return ",".join(map(str, positions))


PATCHING_EXPLAIN = ("Activation patching (--gotchas-patch): each cell replaces one decoder layer's output at one "
                    "of the target's positions with the source's at the aligned position, and reads logit(correct) "
                    "- logit(wrong) at the target's cut (in the dtype each caption names: the model's, or float32 "
                    "with --gotchas-patch-metric float32). Its colour is the fraction of the effect restored, "
                    "(cell - unpatched) / (source - unpatched): blue moves the target towards the source's answer, "
                    "red away from it, white changes nothing; the percentage is printed in the cell, the figures "
                    "are on hover. Where the effect is under the floor (too few steps of its dtype, and too few "
                    "logits, to divide by: --gotchas-patch-floor-steps, --gotchas-patch-floor-logits) the cells are "
                    "grey and carry no percentage: the logit differences are on hover. Positions of the shared prefix "
                    "are left out: patching them changes nothing (checked, unless the members' own passes round that "
                    "prefix differently: the line below says so).")


def resolution(p: Patching) -> str:
    """The effect in steps of the metric's dtype, and which dtype computed it; "" where the report does not say."""
    if not p.step or p.effect_steps is None or p.source_value == p.unpatched:
        return ""
    return (f"effect {p.source_value - p.unpatched:+g} = {p.effect_steps:+g} {_steps(p.effect_steps)} of {p.step:g} "
            f"(logits in {p.metric_dtype})")


def _steps(count: float) -> str:
    return "step" if abs(count) == 1 else "steps"


def dtype_of(p: Patching) -> str:
    """" in bfloat16" (the dtype of the metric's logits), or "" where the report does not say."""
    return f" in {p.metric_dtype}" if p.metric_dtype else ""


UNDER = {Under.NO_EFFECT: "no effect to restore", Under.FLOOR: "no difference to localize",
         Under.NOISE: "no difference to localize above the kernels' noise"}


def floor_text(p: Patching) -> str:
    """Why a direction is under the effect floor, with the floor it was held to; "" above it (or not recorded)."""
    floor, why = p.floor, p.under
    if floor is None or why is None:
        return ""
    effect = p.source_value - p.unpatched
    if why == Under.NO_EFFECT:
        return UNDER[why]
    if why == Under.NOISE:
        return (f"{UNDER[why]}: the effect, {effect:+g}{dtype_of(p)}, is within {floor.steps:g} times the "
                f"disagreement the kernels made measurable in it ({floor.noise:g}: {noise_source(p)}); no fraction is "
                "taken of it")
    steps = (f" = {p.effect_steps:+.3g} {_steps(p.effect_steps)} of {p.step:g}" if p.effect_steps is not None
             else "")
    return (f"{UNDER[why]}: the effect, {effect:+g}{steps} (logits{dtype_of(p)}), is under the floor of "
            f"{floor.steps:g} steps of {p.metric_dtype or 'its dtype'} at |logit| {floor.magnitude:.3g} and "
            f"{floor.logits:g} logits; no fraction is taken of it")


def noise_source(p: Patching) -> str:
    """Which check measured a direction's kernel noise."""
    grid = p.components
    found = []
    if grid is not None and grid.heads_apart:
        found.append(f"every head against the attention write, {grid.heads_apart:g} apart")
    if p.prefix_shift:
        found.append(f"the shared prefix patched moved the metric by {p.prefix_shift:g}")
    return "; ".join(found)


def heatmap_caption(p: Patching) -> str:
    primer = f", primer {p.primer}" if p.primer else ""
    steps = f"; {resolution(p)}" if resolution(p) else ""
    under = f"; {UNDER[p.under]}, under the effect floor: no colour" if p.under is not None else ""
    return (f"{p.source} \u2192 {p.target}{primer}: logit difference{dtype_of(p)} {p.unpatched:+g} unpatched, "
            f"{p.source_value:+g} on the source ({p.method}){steps}{under}")


def cell_tokens(source: str | None, target: str) -> str:
    """Both tokens of a patched cell, the source's first (only the target's in reports written without it)."""
    return repr(target) if source is None else f"{source!r} -> {target!r}"


def patched_tokens(p: Patching) -> list[str]:
    """Each aligned position's tokens, source -> target, as every line and heatmap axis names them."""
    sources: list[str | None] = list(p.source_tokens) if p.source_tokens else [None] * len(p.tokens)
    return [cell_tokens(s, t) for s, t in zip(sources, p.tokens)]


def heatmap_cell_title(layer: int, tokens: str, value: float, fraction: float | None, why: str = "no effect to restore"
                       ) -> str:
    """A cell on hover: its fraction (or ``why`` there is none) and the metric's value; + 0.0: a cell that
    restores nothing reads 0.0%, not -0.0%."""
    restored = why if fraction is None else f"{round(fraction * 100, 1) + 0.0}% of the effect restored"
    return f"layer {layer} at {tokens}: {restored}; logit difference {value:+g}"


def patching_line(p: Patching) -> str:
    """One patched direction (--gotchas-patch): the cell that restores most of the effect, from which layer the last
    position carries it, and what could not be aligned."""
    primer = f" [{p.primer}]" if p.primer else ""
    head = f"{p.source} -> {p.target}{primer}: "
    effect = f"logit difference {p.unpatched:+g} on {p.target}, {p.source_value:+g} from {p.source}{dtype_of(p)}"
    best = strongest(p)
    if p.under is not None and p.under != Under.NO_EFFECT:
        return _rest(p, head + f"{floor_text(p)} ({effect})", False)
    if p.source_value == p.unpatched:
        text = f"no effect to restore ({effect})"
    elif best is None:
        text = f"only the last position aligned ({effect})"
    elif best.fraction <= 0:
        text = f"no position before the cut restores any of the effect ({effect})"
    else:
        where = (f"position {best.position[1]}" if best.source_token is None
                 else f"positions {best.position[0]} -> {best.position[1]}")
        text = (f"layer {best.layer} at {cell_tokens(best.source_token, best.token)} ({where}) restores "
                f"{best.fraction * 100:.0f}% of the effect ({effect})")
    if resolution(p):
        text += f"; {resolution(p)}"
    return _rest(p, head + text, True)


def _rest(p: Patching, text: str, above: bool) -> str:
    """A direction's line after its main clause: from which layer the last position carries the effect (above the
    floor), what could not be aligned, and a shared prefix the members computed differently."""
    carried = carried_from(p) if above else None
    if carried is not None:
        text += f"; the last position carries it from layer {carried} of {p.layers[-1]}"
    left = [f"{side} positions {_span(positions)}" for side, positions in
            (("source", p.unaligned_source), ("target", p.unaligned_target)) if positions]
    if left:
        shown = len(p.positions)
        text += f"; not aligned by the token diff: {', '.join(left)}; {shown} aligned"
    if p.prefix_apart:
        text += f"; {prefix_drift(p)}"
    return text


def prefix_drift(p: Patching) -> str:
    """Why the shared-prefix check did not run for a direction, with how far patching there moved the metric."""
    effect = p.source_value - p.unpatched
    share = f" ({abs(p.prefix_shift / effect) * 100:.1f}% of the effect)" if effect and p.under is None else ""
    return (f"shared prefix not checked: the members' own states there differ by up to {p.prefix_apart:g} "
            f"(lengths {len(p.source_ids)} and {len(p.target_ids)} round it differently on this machine), and "
            f"patching there moved the logit difference by up to {p.prefix_shift:g}{share}")


def component_name(c: Component) -> str:
    """A component as the lines name it: head 5.2 (layer 5, query head 2), MLP 3, attention 4 (its write)."""
    if c.kind == ComponentKind.HEAD:
        return f"head {c.layer}.{c.head}"
    return f"MLP {c.layer}" if c.kind == ComponentKind.MLP else f"attention {c.layer}"


def components_line(p: Patching, shown: int = 3) -> str:
    """A direction's component grid (--gotchas-patch-components): the components that restore most, exact."""
    grid = p.components
    if grid is None:
        return ""
    head = f"components {p.source} -> {p.target}{f' [{p.primer}]' if p.primer else ''}: "
    if p.source_value == p.unpatched or p.under is not None:
        why = UNDER[p.under] if p.under is not None else UNDER[Under.NO_EFFECT]
        return head + why + ("" if p.under in (None, Under.NO_EFFECT) else ", under the effect floor: no component "
                             "ranked, the cells' logit changes are in the JSON") + heads_measured(p) + (
            "; screen only" if grid.method == ComponentsMethod.SCREEN else "")
    if grid.method == ComponentsMethod.SCREEN:
        return head + screen_only_text(p, shown)
    top = [c for c in top_components(p, shown) if c.fraction > 0]
    if not top:
        return head + "no component at any aligned position restores any of the effect"
    named = [f"{component_name(c)} at {component_place(p, c)} {c.fraction * 100:.0f}%" for c in top]
    writes = "post-norm writes" if grid.post_norms else "writes"
    batch = "" if grid.batched else "; a pass per cell (the batch's checks failed on this machine)"
    return head + ", ".join(named) + f" (exact; attention and MLP {writes}, heads before o_proj){batch}" + \
        heads_measured(p) + screen_text(p)


def heads_measured(p: Patching) -> str:
    """The all-heads check's disagreement, where this machine's kernels made it a measurement."""
    grid = p.components
    if grid is None or not grid.heads_apart:
        return ""
    effect = abs(p.source_value - p.unpatched)
    share = f", {grid.heads_apart / effect * 100:.0f}% of the effect" if effect and p.under is None else ""
    return (f"; every head at once and the attention write disagree by up to {grid.heads_apart:g}{share} "
            "(o_proj rounds a row otherwise in another shape on this machine: noise in every cell, measured)")


SCORE_NEEDS_GRID = ("the screen's score not measured: it compares the screen's top-k and its order with the exact "
                    "component grid, which --gotchas-patch-screen does not compute (--gotchas-patch-components does)")


def component_place(p: Patching, c: Component) -> str:
    """Where a component cell sits: "the cut", or its two tokens (source -> target)."""
    return "the cut" if c.position[1] == len(p.target_ids) - 1 else cell_tokens(c.source_token, c.token)


def screen_only_text(p: Patching, shown: int = 3) -> str:
    """A direction run with the screen alone: its verified cells that restore most, each exact with the estimate
    beside it, and why there is no score."""
    grid = p.components
    if grid is None:
        return ""
    writes = "post-norm writes" if grid.post_norms else "writes"
    how = (f"(screen only: top-{len(grid.screened)} by attribution patching, verified by exact patching; attention "
           f"and MLP {writes}, heads before o_proj); {SCORE_NEEDS_GRID}")
    top = [v for v in top_verified(p, shown) if v.component.fraction > 0]
    if not top:
        return f"no cell of the screen's top-{len(grid.screened)} restores any of the effect, patched exactly {how}"
    named = [f"{component_name(v.component)} at {component_place(p, v.component)} "
             f"{v.component.fraction * 100:.0f}% exact (estimated {v.estimate * 100:.0f}%)" for v in top]
    return ", ".join(named) + " " + how


def screen_caption(p: Patching) -> str:
    """The caption of a direction's table of the screen's top-k."""
    grid = p.components
    k = len(grid.screened) if grid is not None else 0
    alone = f"; {SCORE_NEEDS_GRID}" if grid is not None and grid.method == ComponentsMethod.SCREEN else ""
    return (f"the screen's top-{k} (attribution patching, ranked by the larger of |estimate| and GradDrop's score), "
            f"each patched exactly: the estimate and the exact fraction side by side{alone}: {heatmap_caption(p)}")


SCREEN_COLUMNS = ("rank", "component", "tokens", "estimated", "exact", "GradDrop")


def screen_row(p: Patching, rank: int, v: Verified) -> tuple[str, ...]:
    """One verified cell as the page's table lists it, under SCREEN_COLUMNS."""
    c = v.component
    graddrop = "" if v.graddrop is None else f"{v.graddrop * 100:.0f}%"
    cut = ": the cut" if c.position[1] == len(p.target_ids) - 1 else ""
    return (str(rank), component_name(c), f"{cell_tokens(c.source_token, c.token)} (position {c.position[1]}{cut})",
            f"{v.estimate * 100:.0f}%", f"{c.fraction * 100:.0f}%", graddrop)


def screen_rows(p: Patching) -> list[tuple[str, ...]]:
    """The screen's table; none under the effect floor (its fractions would be of nothing)."""
    return [] if p.under is not None else [screen_row(p, n, v) for n, v in enumerate(verified_cells(p), 1)]


def screen_text(p: Patching) -> str:
    """The screen judged against the exact grid (results/screening.py), and its first cell's estimate beside the
    exact value; "" without a screen, or without a score (under the floor, an older report)."""
    grid = p.components
    effect = p.source_value - p.unpatched
    if grid is None or not grid.screened or not effect or grid.score is None:
        return ""
    first = grid.screened[0]
    name = (f"head {first.layer}.{first.head}" if first.kind == ComponentKind.HEAD
            else f"{'MLP' if first.kind == ComponentKind.MLP else 'attention'} {first.layer}")
    return (f"; screen top-{len(grid.screened)}: {score_text(grid.score)}; its first, {name} at position "
            f"{p.positions[first.position][1]}, estimated {first.estimate / effect * 100:.0f}%, exact "
            f"{(first.exact - p.unpatched) / effect * 100:.0f}%")


def score_text(s: ScreenScore) -> str:
    """A direction's screen against the exact grid, in one clause."""
    curve = "/".join(str(found_within(s, m * s.k)) for m in CHECKPOINTS)
    plain = f" (by |estimate| alone {s.area_plain:.3f})" if s.area_plain != s.area else ""
    return (f"{s.overlap} of the exact top-{s.k} in its top-{s.k}, {s.mass * 100:.0f}% of their mass; verified in "
            f"its order, {curve} of them found within " + "/".join(f"{m}k" for m in CHECKPOINTS) + " verifications, "
            f"all {s.k} after {max(s.found_at)} of {s.cells} (the curve's area {s.area:.3f}{plain})")


def pattern_caption(p: Patching) -> str:
    return (f"where the heads that move the metric most at the cut read from (attention weight at the cut, head x "
            f"{p.target}'s token; eager attention): {heatmap_caption(p)}")


def pattern_cell_title(layer: int, head: int, position: int, token: str, weight: float) -> str:
    return f"head {layer}.{head} at the cut reads {token!r} (position {position}) with weight {weight * 100:.1f}%"


def patched_lines(p: Patching, model: str | None = None) -> list[str]:
    """The terminal's lines of one patched direction: the residual grid's, then the component grid's if any."""
    label = f"[{model}] " if model else ""
    lines = [f"patched {label}{patching_line(p)}"]
    if p.components is not None:
        lines.append(f"  {label}{components_line(p)}")
    return lines
