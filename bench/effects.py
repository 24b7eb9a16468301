"""The effect of every pair and twin direction over the library, cheaply: the two members' own passes, no grid.

A patched direction's effect is source_value - unpatched: logit(target's correct) - logit(target's wrong) at the cut,
on the source's pass and on the target's (scoring/patching.py), in the metric's dtype (the model's, or float32 by
the head's product from the same hidden states: scoring/head.py). It needs one plain pass per member and primer,
not the grid, so every direction of the library costs a few seconds. The distribution of |effect|, in logits and in
steps of the metric's dtype, is what the floor's defaults (results/effects.py) are chosen from.

    pytest --gotchas cases/ -p no:randomly -p no:cacheprovider --gotchas-json gemma.json   # any run: its prompts
    python -m bench.effects gemma.json --out effects-gemma.json
    python -m bench.effects gemma.json --model smollm2-135m --out effects-smol.json         # cut by its tokenizer
    python -m bench.effects --summarize effects-gemma.json effects-smol.json [--steps 4 --logits 0.05]

Each member is cut again by the model's own tokenizer from the report's prompt and candidates (scoring/cut.plan_cut,
as the plugin cuts it), so one report serves both models; primers as the plugin pairs them (those both members share).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pytest_gotchas.results.effects import Floor, spacing, why_under

SPEC = ("pep289", "floats", "sets", "bound-methods", "versions")  # bench/scenarios.SPEC_CHAPTERS by name
STEPS = (1.0, 2.0, 3.0, 4.0, 8.0)  # the floors the summary tries
LOGITS = (0.05, 0.1, 0.2, 0.3, 0.5)


@dataclass(frozen=True)
class Effect:
    """One direction's effect in both metric dtypes, with the magnitude each is measured at."""

    chapter: str
    group: str
    twin: bool
    source: str
    target: str
    primer: str | None
    model: str
    dtype: str  # the model's: the metric's dtype by default
    effect: float  # source_value - unpatched, the logits in the model's dtype
    magnitude: float  # the largest |logit| of the four
    effect32: float  # the same with --gotchas-patch-metric float32
    magnitude32: float


def _prompts(report: Any) -> dict[tuple[str, str], dict[str | None, tuple[str, str, str]]]:
    """(chapter, case) -> primer -> (prompt, correct, wrong), the case's own runs (no variant), scored cases only."""
    found: dict[tuple[str, str], dict[str | None, tuple[str, str, str]]] = {}
    for case in report.results:
        if case.scored:
            found[(case.chapter, case.id)] = {r.primer: (r.prompt, r.correct, r.wrong) for r in case.runs
                                              if r.variant is None}
    return found


def measure(report: Any, loaded: Any, bos: str = "auto") -> list[Effect]:
    """Every direction of every pair and twin in the report's chapters whose two members were scored."""
    import torch

    from pytest_gotchas.scoring.cut import plan_cut
    from pytest_gotchas.scoring.head import Float32Head
    from pytest_gotchas.scoring.patching import member_pass

    model, dtype = loaded.model, str(loaded.model.dtype).split(".")[-1]
    prompts, passes, out = _prompts(report), {}, []

    def own(chapter: str, case: str, primer: str | None) -> tuple[Any, Any]:
        key = (chapter, case, primer)
        if key not in passes:
            cut = plan_cut(loaded.tokenizer, *prompts[(chapter, case)][primer], bos=bos)
            passes[key] = (cut, member_pass(model, cut.context_ids))
        return passes[key]

    for info in report.infos.values():
        groups = [(g, m, False) for g, m in info.pairs.items()] + [(g, m, True) for g, m in info.twins.items()]
        for group, members, twin in groups:
            first, last = ((info.name, m) for m in members)
            if first not in prompts or last not in prompts:
                continue
            for primer in [p for p in prompts[last] if p in prompts[first]]:
                for source, target in ((first, last), (last, first)):
                    (cut, theirs), (_, mine) = own(*target, primer), own(*source, primer)
                    ids = (cut.correct_ids[0], cut.wrong_ids[0])
                    logits = [float(x) for p in (theirs, mine) for x in p.logits[list(ids)]]
                    head = Float32Head(model, ids)
                    with torch.inference_mode():
                        wide = [x for p in (theirs, mine) for x in head.reading(p.head_input)]
                    out.append(Effect(info.name, group, twin, source[1], target[1], primer, loaded.info.id, dtype,
                                      (logits[2] - logits[3]) - (logits[0] - logits[1]), max(map(abs, logits)),
                                      (wide[2] - wide[3]) - (wide[0] - wide[1]), max(map(abs, wide))))
    return out


def _quantiles(values: list[float]) -> str:
    if len(values) < 2:
        return ", ".join(f"{v:.3g}" for v in values)
    q = statistics.quantiles(values, n=20, method="inclusive")  # every 5%
    return (f"min {min(values):.3g}, 5% {q[0]:.3g}, 10% {q[1]:.3g}, 25% {q[4]:.3g}, median {q[9]:.3g}, "
            f"75% {q[14]:.3g}, max {max(values):.3g}")


def _under(e: Effect, floor: Floor, wide: bool) -> bool:
    effect, magnitude, dtype = (e.effect32, e.magnitude32, "float32") if wide else (e.effect, e.magnitude, e.dtype)
    return why_under(effect, magnitude, dtype, floor) is not None


def misjudged(e: Effect) -> bool:
    """The model's dtype gets the effect wrong: another sign than float32's, or more than half of it off."""
    return e.effect * e.effect32 <= 0 or abs(e.effect - e.effect32) > 0.5 * abs(e.effect32)


def rounding(mine: list[Effect]) -> list[str]:
    """What the metric's rounding does to the effect: the model's dtype against the float32 head over the same
    hidden states, in logits and in steps; and how many directions each floor tried leaves misjudged above it."""
    shift = [abs(e.effect - e.effect32) for e in mine]
    steps = [abs(e.effect - e.effect32) / spacing(e.magnitude, e.dtype) for e in mine]
    lines = [f"- |{mine[0].dtype} effect - float32 effect| in logits: {_quantiles(shift)}",
             f"- the same in steps of {mine[0].dtype} at the magnitude: {_quantiles(steps)}",
             f"- misjudged by {mine[0].dtype} (another sign than float32's, or more than half of it off): "
             f"{sum(map(misjudged, mine))}", "",
             f"Directions under each floor ({mine[0].dtype} metric), and of those above it how many are misjudged:", "",
             "| steps \\ logits | " + " | ".join(f"{x:g}" for x in LOGITS) + " |", "|---|" + "---:|" * len(LOGITS)]
    for s in STEPS:
        cells = []
        for x in LOGITS:
            above = [e for e in mine if not _under(e, Floor(s, x), False)]
            cells.append(f"{len(mine) - len(above)} ({sum(map(misjudged, above))})")
        lines.append(f"| {s:g} | " + " | ".join(cells) + " |")
    return lines


def summary(effects: list[Effect], floor: Floor) -> list[str]:
    """The distribution per model (|effect| in logits and in steps), what the metric's rounding does to it, how
    many directions fall under each floor tried, and per chapter of the spec at ``floor``: under it, of how many."""
    lines = []
    for model in sorted({e.model for e in effects}):
        mine = [e for e in effects if e.model == model]
        steps = [abs(e.effect) / spacing(e.magnitude, e.dtype) for e in mine]
        lines += [f"#### {model}: {len(mine)} directions ({len({(e.chapter, e.group) for e in mine})} pairs and twins)",
                  "", f"- |effect| in logits, the model's dtype ({mine[0].dtype}): "
                  f"{_quantiles([abs(e.effect) for e in mine])}",
                  f"- |effect| in steps of {mine[0].dtype} at its magnitude: {_quantiles(steps)}",
                  f"- |effect| in logits, float32 metric: {_quantiles([abs(e.effect32) for e in mine])}",
                  f"- exactly 0 in {mine[0].dtype}: {sum(e.effect == 0 for e in mine)}; in float32: "
                  f"{sum(e.effect32 == 0 for e in mine)}; under the floor with the float32 metric: "
                  f"{sum(_under(e, floor, True) for e in mine)}", *rounding(mine)]
        spec = [e for e in mine if e.chapter in SPEC]
        by: Counter[str] = Counter(e.chapter for e in spec)
        under = Counter(e.chapter for e in spec if _under(e, floor, False))
        lines += ["", f"The spec chapters at the floor ({floor.steps:g} steps, {floor.logits:g} logits), "
                  f"{mine[0].dtype} metric: " + ", ".join(f"{c} {under[c]} of {by[c]}" for c in SPEC if by[c])
                  + f"; {sum(under.values())} of {len(spec)} in all. Under it:", ""]
        lines += [f"- {e.chapter} {e.source} -> {e.target}{f' [{e.primer}]' if e.primer else ''}: {e.effect:+.4g} "
                  f"at |logit| {e.magnitude:.3g} ({abs(e.effect) / spacing(e.magnitude, e.dtype):.2g} steps); "
                  f"float32 {e.effect32:+.4g}" for e in spec if _under(e, floor, False)]
        lines.append("")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.effects", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", type=Path, nargs="+",
                        help="a JSON report (its prompts); with --summarize, --out files")
    parser.add_argument("--model", default=None, help="the model to measure (default: the embedded default)")
    parser.add_argument("--out", type=Path, help="write the directions' effects here (JSON)")
    parser.add_argument("--summarize", action="store_true", help="print the distribution of --out files")
    parser.add_argument("--steps", type=float, default=Floor().steps,
                        help="the floor's steps for the per-chapter count")
    parser.add_argument("--logits", type=float, default=Floor().logits, help="the floor's logits, likewise")
    args = parser.parse_args(argv)
    if args.summarize:
        effects = [Effect(**e) for path in args.files for e in json.loads(path.read_text(encoding="utf-8"))]
        print("\n".join(summary(effects, Floor(args.steps, args.logits))))
        return
    from pytest_gotchas.model.load import ModelSpec, load_model
    from pytest_gotchas.results.report import from_data
    from pytest_gotchas.settings.options import Settings

    report = from_data(json.loads(args.files[0].read_text(encoding="utf-8")))
    loaded = load_model(ModelSpec(name=args.model, device="cpu"), Settings().model_cache)
    effects = measure(report, loaded)
    if not effects:
        sys.exit("bench: no pair or twin with both members scored in the report")
    if args.out:
        args.out.write_text(json.dumps([asdict(e) for e in effects], indent=1), encoding="utf-8")
    print("\n".join(summary(effects, Floor(args.steps, args.logits))))


if __name__ == "__main__":
    main()
