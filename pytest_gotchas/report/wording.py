"""The words, once: every sentence a view shows about a fact computed below (rollups, comparisons, layers; the
baseline's in wording_baseline.py, claims, patching, merging and the run's in their own wording_*.py).

The terminal, the page, `gotchas merge` and the items' failure texts all take their sentences from here, so one
fact reads the same wherever it is shown. A line is (text, markup): markup is pytest's terminal markup, which the
page maps to its own classes.
"""

from __future__ import annotations

import math

from ..model.kernels import FLOAT32_MATMUL
from ..results.consistency import Inconsistency
from ..results.baselines import Probability
from ..results.hardware import SlowBfloat16
from ..results.layers import Lead, Stretch
from ..results.onepass import OnePassCheck, ReadingDifference
from ..results.pairwise import Differences, ModelComparison
from ..results.rollup import ChapterRollup
from ..results.schema import BackendInfo, ModelInfo
from ..results.stats import Interval
from ..results.clustering import ClusteredInterval
from .wording_claims import clustered_text, comparison_families, interval_text, p_text
from ..results.vocabulary import IntervalMethod, Leader

Line = tuple[str, dict[str, bool]]
RED: dict[str, bool] = {"red": True}
GREEN: dict[str, bool] = {"green": True}
YELLOW: dict[str, bool] = {"yellow": True}
UNSTYLED: dict[str, bool] = {}


def pct(p: float | None) -> str:
    return "-" if p is None else f"{p * 100:.2f}%"


def probabilities(p_correct: Probability, p_wrong: Probability) -> str:
    if isinstance(p_correct, dict) and isinstance(p_wrong, dict):
        return "  ".join(f"{name}: P(correct) {pct(p_correct[name])} P(wrong) {pct(p_wrong.get(name, math.nan))}"
                         for name in p_correct)
    assert not isinstance(p_correct, dict) and not isinstance(p_wrong, dict)
    return f"P(correct) {pct(p_correct)}  P(wrong) {pct(p_wrong)}"


# -- chapters, comparisons, layers --------------------------------------------------------------------------------


def chapter_line(rollup: ChapterRollup, intervals: tuple[Interval, Interval] | None = None,
                 clustered: ClusteredInterval | None = None) -> str:
    """"ch.2 sets: ...: 1/3 pairs (1 not scored); twins agree 0/2"; given the chapter's `intervals` (pairs passed,
    cases ok), each count with its interval: "2/6 pairs [9.7%, 70.0%]; 7/14 cases ok [...]"; the pairs `clustered`
    in families (results/clustering.py) with the interval that accounts for them."""
    info = rollup.info
    if intervals is not None:
        pairs, cases = intervals
        in_families = clustered is not None and clustered.method == IntervalMethod.WILSON_CLUSTERED
        shown = clustered_text(clustered) if clustered is not None and in_families else interval_text(pairs, "pairs")
        text = f"{info.label}: " + (f"{shown}; " if rollup.pairs else "no pairs; ")
        text += interval_text(cases, "cases ok")
    else:
        text = f"{info.label}: {rollup.passed}/{rollup.counted} pairs" if rollup.pairs else f"{info.label}: no pairs"
    incomplete = len(rollup.pairs) - rollup.counted
    if incomplete:
        text += f" ({incomplete} not scored)"
    if rollup.twins:
        text += f"; twins agree {rollup.agreeing}/{rollup.twins_counted}"
    return text


def comparison_outcome(c: ModelComparison) -> str:
    """What the exact McNemar test, corrected for the run's family, allows one to say."""
    return f"{c.ahead} ahead" if c.ahead else "no difference shown"


def comparison_line(c: ModelComparison) -> str:
    counts = (f"{c.unit}: {c.a} only {c.a_only}, {c.b} only {c.b_only}, both {c.both}, neither {c.neither}; "
              f"{p_text(c.p_value, c.p_adjusted)}")
    return f"{counts}: {comparison_outcome(c)}{comparison_families(c)}"


def differences_text(d: Differences) -> str:
    """Which case verdicts and pair results two models of a run answer differently, each named."""
    cases = ", ".join(f"{key} {va} -> {vb}" for key, va, vb in d.cases)
    pairs = ", ".join(f"{key} {'pass' if pa else 'FAIL'} -> {'pass' if pb else 'FAIL'}" for key, pa, pb in d.pairs)
    text = (f"{d.a} -> {d.b}: {len(d.cases)} of {d.cases_compared} case verdicts differ" + (f" ({cases})" if cases else "")
            + f"; {len(d.pairs)} of {d.pairs_compared} pairs" + (f" ({pairs})" if pairs else ""))
    if d.largest_dp is not None:
        text += f"; same weights, largest |dP| {d.largest_dp:.4f} ({d.largest_at})"
    return text


def backend_layout(backend: BackendInfo) -> str:
    return (f"tensor parallel {backend.tensor_parallel} x pipeline parallel {backend.pipeline_parallel}, executor "
            f"{backend.executor or 'default'}")


def batch_invariant_text(backend: BackendInfo) -> str:
    if backend.batch_invariant:
        return "on"
    return "off" + (f" ({backend.batch_invariant_note})" if backend.batch_invariant_note else "")


def backend_summary(backend: BackendInfo) -> str:
    """One line: the engine, its layout and its kernels' mode."""
    return (f"{backend.package} {backend.version} on {backend.platform}; {backend_layout(backend)}; "
            f"batch-invariant {batch_invariant_text(backend)}")


def backend_text(backend: BackendInfo) -> str:
    """How a model read through another backend than transformers was read, in one line."""
    logits = (f"logits computed in {backend.logits_dtype} by the engine, returned as float32 (exact), softmax in "
              "the model's dtype and in float32 by the plugin, as for transformers")
    if backend.logits_dtype == "float32":
        logits = ("logits returned in float32 that the model's dtype cannot hold: the model-dtype softmax rounds "
                  "them first")
    return (f"read through {backend_summary(backend)}; prefix caching {'on' if backend.prefix_caching else 'off'}; "
            f"{logits}")


def stretch_text(stretch: Stretch) -> str:
    who = ("tied" if stretch.leader == Leader.TIE else "within the effect floor" if stretch.leader == Leader.FLOOR
           else f"{stretch.leader} ahead")
    where = f"layer {stretch.first}" if stretch.first == stretch.last else f"layers {stretch.first}-{stretch.last}"
    return f"{who} at {where}"


def lead_text(lead: Lead) -> str:
    """E.g. "decided at layer 12 of 18 (correct)", "correct ahead at layers 1-13, then wrong from layer 14 of 18"."""
    n = lead.last_layer
    if lead.decided_at is None:
        earlier = [stretch_text(s) for s in lead.stretches[:-1]]
        tied = (f"within the effect floor after the last layer ({n}): no lead to place" if lead.final == Leader.FLOOR
                else f"tied after the last layer ({n})")
        return tied + (f"; before: {', '.join(earlier)}" if earlier else "")
    before = [s for s in lead.stretches if s.last < lead.decided_at]
    if not lead.changed_hands:
        main = f"decided at layer {lead.decided_at} of {n} ({lead.final})"
        return main + (f"; before: {', '.join(stretch_text(s) for s in before)}" if before else "")
    return f"{', '.join(stretch_text(s) for s in before)}, then {lead.final} from layer {lead.decided_at} of {n}"


# -- one pass per prompt ------------------------------------------------------------------------------------------


def _model(model: str | None, several: bool) -> str:
    return f"{model}:" if several and model else ""


def reading_difference_text(d: ReadingDifference, several_models: bool = False) -> str:
    """"demo/b[primer] token ok -> tie": the case, its run, the reading, and the verdict when it changes."""
    run = f"[{d.run}]" if d.run else ""
    a, b = d.one_pass.verdict, d.separate.verdict
    return f"{_model(d.model, several_models)}{d.case}{run} {d.reading}" + (f" {a} -> {b}" if a != b else "")


def one_pass_check_line(c: OnePassCheck, several_models: bool = False) -> str:
    """--gotchas-one-pass-check: the terminal summary's closing line."""
    by_name: dict[str, int] = {}
    for d in c.readings_differ:
        by_name[d.reading] = by_name.get(d.reading, 0) + 1
    names = ", ".join(f"{name} {n}" for name, n in by_name.items())
    listed = "; ".join(reading_difference_text(d, several_models) for d in c.readings_differ)
    verdicts = ", ".join(f"{_model(v.model, several_models)}{v.case} {v.one_pass} -> {v.separate}"
                         for v in c.case_verdicts_differ)
    return (f"one pass checked against separate full passes: {len(c.readings_differ)} of {c.readings} readings "
            f"differ" + (f" ({names}: {listed})" if c.readings_differ else "") + f"; {len(c.case_verdicts_differ)} "
            f"of {c.case_verdicts} case verdicts would differ" + (f": {verdicts}" if verdicts else ""))


# -- reports read back -------------------------------------------------------------------------------------------

SHOWN_INCONSISTENCIES = 5


def inconsistency_text(i: Inconsistency) -> str:
    model = f" of model {i.model!r}" if i.model is not None else ""
    numbers = f"{i.numbers} give" if i.numbers else "its numbers give"
    return f"{i.subject}{model}, {i.field}: the file says {i.stored}, {numbers} {i.computed}"


def inconsistent_text(source: str, found: list[Inconsistency]) -> str:
    """A report whose derived fields are not what its numbers give (results/consistency.py): refused, each named."""
    shown = "; ".join(inconsistency_text(i) for i in found[:SHOWN_INCONSISTENCIES])
    more = f"; and {len(found) - SHOWN_INCONSISTENCIES} more" if len(found) > SHOWN_INCONSISTENCIES else ""
    fields = "1 derived field is" if len(found) == 1 else f"{len(found)} derived fields are"
    return (f"{source} is inconsistent: {fields} not what its numbers give ({shown}{more}). A report's "
            "verdicts, pair results and rollups follow from its probabilities, so this one was edited or damaged and "
            "is not merged: write it again with the run that made it")


def duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{math.ceil(seconds / 60)} min"


def progress_text(what: str, done: int, total: int, seconds: float, detail: str = "") -> str:
    """A terminal's progress line (plugin/progress.py): unit `done + 1` of `total` is under way, `seconds` after the
    first began; the time left is estimated from the units done so far."""
    text = what + (f" {min(done + 1, total)}/{total}" if total else "") + (f": {detail}" if detail else "")
    left = seconds / done * (total - done) if 0 < done < total else 0.0
    return text + (f", about {duration(left)} left" if left >= 0.5 else "")  # under a second: no estimate to give


def cache_folder_lost(folder: str, reason: str) -> str:
    """The plugin's cache folder cannot be made: the run goes on without it."""
    return (f"gotchas: the cache folder {folder} cannot be written ({reason}); this run executes every snippet and "
            "tokenizes every cut again")


def transcript_cache_lost(folder: str, reason: str) -> str:
    """The transcript cache was given up mid-run (truth/execute.py's CacheLost): what ran is used, nothing is kept."""
    return (f"gotchas: the transcript cache {folder} cannot be written ({reason}); this run executes every snippet "
            "afresh and keeps none of them")


def model_line(info: ModelInfo, softmax_dtype: str | None) -> str:
    """The summary's first line: which model the run scored, in which dtype, on which device (a user's own model is
    otherwise named only by a baseline's path)."""
    softmax = f", softmax {softmax_dtype}" if softmax_dtype else ""
    allowed = "; its tokenizer's round trip not enforced (allow-unfaithful-tokenizer)" if (
        info.allow_unfaithful_tokenizer) else ""
    return (f"model {info.name!r}: {info.dtype}{softmax}, {info.device} (weights sha256 {info.weights_sha256[:12]}..."
            f"){allowed}")


def slow_bfloat16_line(slow: SlowBfloat16) -> str:
    """The summary's line under the model's on a CPU without native bfloat16: what it costs and what to do instead, or, on the
    float32-matmul path, what that path gave up. The figures are bench/RESULTS.md's ("First runs and bfloat16")."""
    where = f"{', '.join(slow.models)}: bfloat16 on a CPU without native bfloat16 kernels ({slow.hardware})"
    if slow.kernels == FLOAT32_MATMUL:
        return (f"{where}, its matmuls computed in float32 (--gotchas-kernels {FLOAT32_MATMUL}): float32's speed, "
                "but not the bits of the plain bfloat16 kernels, so close verdicts can differ from a plain run's "
                "(1 of 199 over the library on an Intel Xeon; docs/determinism.md).")
    return (f"{where} is emulated, at a cost: a pass of the library's prompts took 1.5x float32's time on an Intel "
            "Xeon with AVX-512 but not AVX-512-BF16, and a pass of the spec's prompts 2.4x on an AVX2-only AMD "
            f"EPYC. Faster: --gotchas-kernels {FLOAT32_MATMUL} (float32 matmuls of the bfloat16 values: float32's "
            "speed, other last bits, so close verdicts can change), --gotchas-dtype float32 (other numbers, its own "
            "baseline file), or a GPU or a CPU with AVX-512-BF16 or AMX (docs/determinism.md).")
