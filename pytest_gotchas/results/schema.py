"""The result model: what one case gave, as plain values.

It travels from xdist workers to the controller inside the test report (as ``to_dict()``), and every view (terminal,
JSON, HTML, junit, baseline) reads it. A run holds its readings by name, so a new way of reading the cut is new data
under a new name, not new fields here:

- ``text``: the probability that the output, as text, continues with each candidate (readings.py);
- ``token``: the write-up's reading at the cut (plain, healed or a multi-token chain; see cut.py);
- ``plain``: the naive single-token reading at the full prompt, when the token reading is not plain;
- ``other-softmax``: the same logits through the other softmax dtype;
- ``precision``: the verdict's reading computed in float32 (weights upcast, float32 softmax), with
  --gotchas-precision-check.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from .verdict import Judged, Status

TEXT, TOKEN, PLAIN, OTHER_SOFTMAX, PRECISION = "text", "token", "plain", "other-softmax", "precision"
DERIVED = ("verdict", "p_correct", "p_wrong", "coverage", "margin")  # a run's, from its main reading


@dataclass
class ChapterInfo:
    name: str
    label: str  # "ch.2 sets: the order you see is the hash table"
    title: str
    path: str
    implementation_defined: bool
    case_ids: list[str]
    pairs: dict[str, list[str]]
    twins: dict[str, list[str]]
    # sha256 of the chapter file's bytes when it was collected: `gotchas merge` refuses to combine results of two
    # versions of one chapter. None in reports written before it was recorded.
    sha256: str | None = None

    @property
    def order(self) -> tuple[Any, ...]:
        """Where the chapter comes in reports: by path, numbers by value, so that cases/2-sets.yaml comes before
        cases/10-rounding.yaml."""
        return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", self.path))


@dataclass
class Reading:
    """P(correct) and P(wrong) read one way, and the verdict they give."""

    p_correct: float
    p_wrong: float
    verdict: str
    kind: str  # how the candidates were read: "text", or the token reading's "plain" | "healed" | "chain"
    softmax_dtype: str
    # The tokens read: the chain of each candidate; for the text reading its largest contributions, with their share.
    correct_tokens: list[str] = field(default_factory=list)
    wrong_tokens: list[str] = field(default_factory=list)
    neglected: float = 0.0  # the text reading: at most this much probability lies in chains it did not follow

    def __post_init__(self) -> None:
        self.verdict = str(self.verdict)  # a plain str: execnet cannot serialize str subclasses such as Verdict

    @property
    def coverage(self) -> float:
        return self.p_correct + self.p_wrong

    @property
    def margin(self) -> float:
        return abs(self.p_correct - self.p_wrong)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "coverage": self.coverage, "margin": self.margin}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Reading":
        return cls(**{k: v for k, v in data.items() if k not in ("coverage", "margin")})


@dataclass
class Run:
    """One prompt put to the model: the case under one primer (or none)."""

    primer: str | None
    prompt: str
    correct: str
    wrong: str
    readings: dict[str, Reading]
    main: str  # the name of the reading the verdict comes from
    top: list[list[Any]]  # [[token text, probability], ...] at the main reading's context
    batch_size: int
    forward_passes: int  # full forward passes this run added (one per prompt; more where a context could not be
    # read from the prompt's own pass)
    incremental_steps: int = 0  # contexts computed as incremental steps on that pass's KV cache (0 in older reports)
    variant: str | None = None  # the case's variant this run read; None for its own transcript
    # --gotchas-layers: the main reading after each layer, [{"layer": k, "p_correct": ..., "p_wrong": ...}, ...]
    layers: list[dict[str, float]] = field(default_factory=list)

    @property
    def label(self) -> str | None:
        """The run's name among its case's runs: its primer, after its variant's id for a variant's."""
        if self.variant is None:
            return self.primer
        return f"{self.variant}[{self.primer}]" if self.primer else self.variant

    @property
    def reading(self) -> Reading:
        return self.readings[self.main]

    @property
    def verdict(self) -> str:
        return self.reading.verdict

    @property
    def p_correct(self) -> float:
        return self.reading.p_correct

    @property
    def p_wrong(self) -> float:
        return self.reading.p_wrong

    @property
    def coverage(self) -> float:
        return self.reading.coverage

    @property
    def margin(self) -> float:
        return self.reading.margin

    def judged(self, reading: str | None = None) -> Judged:
        """The run as a case verdict sees it; read another way (`reading`), without the precision check."""
        if reading is not None:
            return Judged(self.primer, self.readings[reading].verdict, variant=self.variant)
        precision = self.readings.get(PRECISION)
        return Judged(self.primer, self.verdict, precision.verdict if precision else None, self.variant)

    def to_dict(self) -> dict[str, Any]:
        """The main reading's numbers also at the top, for readers of the JSON; from_dict ignores them."""
        data = {k: v for k, v in asdict(self).items() if k != "readings"}
        data.update({name: getattr(self, name) for name in DERIVED})
        data["readings"] = {name: r.to_dict() for name, r in self.readings.items()}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Run":
        readings = {name: Reading.from_dict(r) for name, r in data["readings"].items()}
        return cls(**{**{k: v for k, v in data.items() if k not in DERIVED}, "readings": readings})


@dataclass
class CaseResult:
    id: str
    chapter: ChapterInfo
    status: str  # a verdict.Status
    verdict: str | None  # a verdict.Verdict when scored
    runs: list[Run] = field(default_factory=list)
    interpreter: str | None = None  # "3.11.7 /path/to/python3.11"
    outputs: list[list[str]] = field(default_factory=list)  # unscored: [[seed, text], ...]
    message: str | None = None  # why it was not scored
    note: str | None = None
    model: dict[str, Any] | None = None  # model.ModelInfo as plain values, plus "hardware", "bos"
    model_id: str | None = None  # the model this item ran for (its parameter: gemma-3-270m, smollm2-135m ...)
    qualifiers: list[str] = field(default_factory=list)  # every qualifier that applies (prime-dep ...)
    # The case verdict by each reading every run has (the main one included), without the precision check: which
    # verdicts the way of reading decides.
    reading_verdicts: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.status = str(self.status)
        self.verdict = None if self.verdict is None else str(self.verdict)

    @property
    def key(self) -> str:
        return f"{self.chapter.name}/{self.id}"

    @property
    def scored(self) -> bool:
        return self.status == Status.SCORED

    @property
    def outcome(self) -> str:
        """What the test reports: the verdict of a scored case, else its status."""
        return str(self.verdict) if self.scored else self.status

    def to_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in asdict(self).items() if k != "runs"}
        data["runs"] = [run.to_dict() for run in self.runs]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CaseResult":
        chapter = data["chapter"]
        return cls(**{**data, "chapter": chapter if isinstance(chapter, ChapterInfo) else ChapterInfo(**chapter),
                      "runs": [Run.from_dict(r) for r in data.get("runs", [])]})
