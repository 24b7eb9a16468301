"""The result of one case, as plain values: it travels from xdist workers to the controller inside the test
report, and it is what the JSON report, the terminal summary and the baseline all read."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SCORED, UNSCORED, CRASH, EXCLUDED, SKIPPED = "scored", "unscored", "crash", "excluded", "skipped"


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


@dataclass
class RunResult:
    primer: str | None
    prompt: str
    correct: str
    wrong: str
    p_correct: float
    p_wrong: float
    coverage: float
    margin: float
    verdict: str
    reading: str  # "plain" | "healed" | "chain": how the cut was tokenized
    correct_tokens: list[str]
    wrong_tokens: list[str]
    top: list[list[Any]]  # [[token text, probability], ...]
    plain_p_correct: float | None  # the naive reading at the full prompt, when the cut was not plain
    plain_p_wrong: float | None
    plain_verdict: str | None
    softmax_dtype: str
    batch_size: int
    forward_passes: int
    # The same logits through the other softmax dtype: shows which verdicts that choice decides.
    other_softmax_dtype: str | None = None
    other_p_correct: float | None = None
    other_p_wrong: float | None = None
    other_verdict: str | None = None


@dataclass
class CaseResult:
    id: str
    chapter: ChapterInfo
    status: str  # scored | unscored | crash | excluded | skipped
    verdict: str | None
    runs: list[RunResult] = field(default_factory=list)
    interpreter: str | None = None  # "3.11.7 /path/to/python3.11"
    outputs: list[list[str]] = field(default_factory=list)  # unscored: [[seed, text], ...]
    message: str | None = None  # why it was not scored
    note: str | None = None
    model: dict[str, Any] | None = None
    other_verdict: str | None = None  # the case verdict under the other softmax dtype

    @property
    def key(self) -> str:
        return f"{self.chapter.name}/{self.id}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CaseResult":
        data = dict(data)
        data["chapter"] = ChapterInfo(**data["chapter"])
        data["runs"] = [RunResult(**r) for r in data.get("runs", [])]
        return cls(**data)
