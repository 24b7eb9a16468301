"""The page's view of one run: its prompt, its bar and numbers, how the cut was read, the tokens at the cut, the
layer chart, and a case's variants table. Pure data built from the schema; the templates only lay it out.

Numbers stay probabilities (floats); the templates format them with the `pct` and `width` filters. Tokens are shown
as Python reprs, made here.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..cases.transcript import CURSOR
from ..results.schema import CaseResult, Reading, Run
from ..results.verdict import Verdict
from .terminal import NEGLIGIBLE, layer_note
from ..results.vocabulary import ReadingKind, ReadingName

LABELLED = 0.16  # a bar segment this wide or wider carries its token and number
CUT_LABELS = {"healed": "healed cut", "chain": "multi-token cut"}
CUT_WHY = {
    "healed": "the tokenizer merges the text before the cut with the candidates, so the model is read where the "
              "merged tokens start",
    "chain": "from the shared context a candidate takes several tokens; its probability is the product along its "
             "chain",
}


@dataclass(frozen=True)
class Prompt:
    """What the model was shown: the primer's lines (empty when nothing is primed), then the case's own."""

    primer: str
    own: str


@dataclass(frozen=True)
class Segment:
    """One part of the bar: P(correct), P(wrong) or the rest."""

    cls: str  # pc | pw | rest
    p: float
    label: str  # the token's repr, or "rest"
    labelled: bool  # wide enough to carry its label


@dataclass(frozen=True)
class Figure:
    """A probability as the numbers under the bar show it."""

    cls: str  # n-correct | n-wrong | n-rest
    name: str  # correct | wrong | rest
    token: str | None  # the candidate's repr; None for the rest
    p: float


@dataclass(frozen=True)
class CutNote:
    """A token reading that had to heal or chain, with the plain reading beside it."""

    label: str
    why: str
    correct: list[str]  # the chain of token reprs
    wrong: list[str]
    plain: Reading | None


@dataclass(frozen=True)
class TextReading:
    correct: str  # its largest contributions, or "–"
    wrong: str
    neglected: float | None  # the mass it did not follow, when not negligible


@dataclass(frozen=True)
class OtherReading:
    """The text or token reading the verdict does not come from."""

    name: str
    reading: Reading
    differs: bool  # its verdict is not the run's


@dataclass(frozen=True)
class Alternative:
    """One of the most probable tokens at the cut."""

    token: str  # repr
    p: float
    cls: str  # t-correct | t-wrong | "": whether it starts a candidate


@dataclass(frozen=True)
class Label:
    x: float
    y: float
    anchor: str  # start | middle | end
    text: str


@dataclass(frozen=True)
class Line:
    cls: str  # pc | pw
    points: str  # "x,y x,y ...", SVG polyline points


@dataclass(frozen=True)
class LayerChart:
    """P(correct) and P(wrong) after each layer, as SVG coordinates (0 at the bottom of the frame, 1 at its top)."""

    width: int
    height: int
    frame: tuple[float, float, float, float]  # x, y, width, height
    lines: list[Line]
    first: Label  # the first layer's number, under the frame's left edge
    legend: tuple[float, float]  # where the key of the two lines goes, under the frame's middle
    last: Label
    note: str  # wording: where the lead was decided
    scale: str  # the frame's vertical range, said in the key: scaled down when both lines stay low


@dataclass(frozen=True)
class Answer:
    """The model's answer at the cut: bar, numbers, readings, the tokens there and the layer chart."""

    verdict: str
    show_verdict: bool  # a primed run's verdict is shown in its head instead
    aria: str
    segments: list[Segment]
    figures: list[Figure]
    coverage: float
    margin: float
    cut: CutNote | None
    text: TextReading | None
    others: list[OtherReading]
    chart: LayerChart | None
    top: list[Alternative]


@dataclass(frozen=True)
class RunBlock:
    """One run in a model's cell: its primer (when primed), its prompt (when not shown above) and its answer."""

    primer: str | None  # None: the case is not primed
    verdict: str
    prompt: Prompt | None
    answer: Answer


@dataclass(frozen=True)
class VariantRow:
    label: str
    p_correct: float
    p_wrong: float
    verdict: str


@dataclass(frozen=True)
class Variants:
    surface_dep: bool  # they answer unlike the case
    rows: list[VariantRow]


def pct(p: float | None) -> str:
    return "\u2013" if p is None else f"{p * 100:.2f}%"


def width(p: float | None) -> str:
    """A probability as a CSS width, clamped to 0..100%."""
    return f"{min(max(p or 0.0, 0.0), 1.0) * 100:.3f}%"


def own_runs(case: CaseResult) -> list[Run]:
    """The runs of the case's own transcript, one per primer order (its variants' runs left out)."""
    return [run for run in case.runs if run.variant is None]


def shared_tail(runs: list[Run]) -> int:
    """How many trailing lines every primed prompt shares: the case itself; the lines above it are the primer."""
    split = [run.prompt.split("\n") for run in runs]
    n = 0
    while all(len(s) > n for s in split) and len({s[len(s) - 1 - n] for s in split}) == 1:
        n += 1
    return n


def prompts(runs: list[Run]) -> list[Prompt]:
    """Each run's prompt split into primer and case; unprimed, the whole prompt is the case's."""
    tail = shared_tail(runs) if len(runs) > 1 else None
    out = []
    for run in runs:
        lines = run.prompt.split("\n")
        if tail is not None and 0 < tail < len(lines):
            out.append(Prompt("\n".join(lines[:len(lines) - tail]) + "\n", "\n".join(lines[len(lines) - tail:])))
        else:
            out.append(Prompt("", run.prompt))
    return out


def run_blocks(case: CaseResult, with_prompts: bool) -> list[RunBlock]:
    """The case's own runs in a model's cell; `with_prompts`: each shows its prompt (none are shown above)."""
    runs = own_runs(case)
    primed = len(runs) > 1
    shown = prompts(runs) if with_prompts else [None] * len(runs)
    return [RunBlock(run.primer if primed else None, run.verdict, prompt, answer(run, primed))
            for run, prompt in zip(runs, shown)]


def answer(run: Run, primed: bool) -> Answer:
    r = run.reading
    rest = max(0.0, 1.0 - r.coverage)
    correct, wrong = repr(run.correct), repr(run.wrong)
    parts = [("pc", r.p_correct, correct), ("pw", r.p_wrong, wrong), ("rest", rest, "rest")]
    return Answer(
        verdict=r.verdict, show_verdict=not primed,
        aria=f"P(correct) {pct(r.p_correct)}, P(wrong) {pct(r.p_wrong)}, rest {pct(rest)}",
        segments=[Segment(cls, p, label, p >= LABELLED) for cls, p, label in parts],
        figures=[Figure("n-correct", "correct", correct, r.p_correct), Figure("n-wrong", "wrong", wrong, r.p_wrong),
                 Figure("n-rest", "rest", None, rest)],
        coverage=r.coverage, margin=r.margin, cut=cut(run), text=text_reading(run), others=other_readings(run),
        chart=layer_chart(run), top=alternatives(run),
    )


def cut(run: Run) -> CutNote | None:
    token = run.readings.get(ReadingName.TOKEN)
    if token is None or token.kind == ReadingKind.PLAIN:
        return None
    return CutNote(CUT_LABELS.get(token.kind, f"{token.kind} cut"), CUT_WHY.get(token.kind, ""),
               [repr(t) for t in token.correct_tokens], [repr(t) for t in token.wrong_tokens],
               run.readings.get(ReadingName.PLAIN))


def text_reading(run: Run) -> TextReading | None:
    text = run.readings.get(ReadingName.TEXT)
    if text is None:
        return None
    return TextReading(", ".join(text.correct_tokens) or "\u2013", ", ".join(text.wrong_tokens) or "\u2013",
                       text.neglected if text.neglected >= NEGLIGIBLE else None)


def other_readings(run: Run) -> list[OtherReading]:
    return [OtherReading(name, run.readings[name], run.readings[name].verdict != run.verdict)
            for name in (ReadingName.TEXT, ReadingName.TOKEN) if name != run.main and name in run.readings]


def alternatives(run: Run) -> list[Alternative]:
    """The top tokens at the cut, each marked when it is the first token of a candidate's chain."""
    token = run.readings.get(ReadingName.TOKEN, run.reading)
    first_correct = token.correct_tokens[0] if token.correct_tokens else None
    first_wrong = token.wrong_tokens[0] if token.wrong_tokens else None
    return [Alternative(repr(top.token), top.p,
                        "t-correct" if top.token == first_correct else "t-wrong" if top.token == first_wrong else "")
            for top in run.top]


CHART_WIDTH, CHART_HEIGHT, CHART_PAD, CHART_TOP, CHART_FOOT = 260, 96, 14, 4, 22


# The frame's top: the smallest of these above every value read. A case of low coverage (both candidates a few
# percent at every layer) drawn on 0-1 is two flat lines at the floor; its own scale shows where the lead changes.
CHART_TOPS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)


def chart_top(values: list[float]) -> float:
    highest = max(values, default=1.0)
    return next((top for top in CHART_TOPS if highest <= top), 1.0)


def layer_chart(run: Run) -> LayerChart | None:
    """--gotchas-layers: a polyline per candidate over the layers read, in a frame under which the layers are named;
    the frame runs from 0 to 1, or to a lower top that the key names when every value stays under it."""
    if not run.layers:
        return None
    w, h, pad = CHART_WIDTH, CHART_HEIGHT, CHART_PAD
    inner_w, inner_h = w - 2 * pad, h - CHART_FOOT
    steps = max(len(run.layers) - 1, 1)
    xs = [pad + inner_w * n / steps for n in range(len(run.layers))]
    top = chart_top([p for x in run.layers for p in (x.p_correct, x.p_wrong)])

    def points(values: list[float]) -> str:
        return " ".join(f"{x:.1f},{CHART_TOP + inner_h * (1 - p / top):.1f}" for x, p in zip(xs, values))

    lines = [Line("pc", points([x.p_correct for x in run.layers])), Line("pw", points([x.p_wrong for x in run.layers]))]
    foot = h - 5
    return LayerChart(w, h, (pad, CHART_TOP, inner_w, inner_h), lines,
                      Label(pad, foot, "start", f"layer {run.layers[0].layer}"), (w // 2, foot),
                      Label(w - pad, foot, "end", str(run.layers[-1].layer)), layer_note(run),
                      "0 to 1" if top == 1.0 else f"0 to {top:.0%}, scaled")


def variants(case: CaseResult) -> Variants | None:
    """--gotchas-variants: every run of the case, its own transcript's and its variants', with their verdicts."""
    if not any(run.variant for run in case.runs):
        return None
    rows = [VariantRow(variant_label(run), run.p_correct, run.p_wrong, run.verdict) for run in case.runs]
    return Variants(Verdict.SURFACE_DEP in case.qualifiers, rows)


def variant_label(run: Run) -> str:
    """A variant's label, or "the case" (with its primer) for the case's own transcript."""
    if run.variant is not None:
        return str(run.label)
    return "the case" + (f" [{run.primer}]" if run.primer else "")
