"""The facts of a run against its baselines, typed: who recorded a baseline (Header), what it holds per case
(Entry), what changed (Comparison), whether the kernels are the baseline's (Numerics), and what one model's use of
its baseline came to (BaselineOutcome). baseline/ computes them and knows no words; report/ words them."""

from __future__ import annotations

from dataclasses import field

from .schema import CaseResult
from .typed import dataclass
from .verdict import Verdict
from .vocabulary import PairVerdict

Probability = float | dict[str, float]  # one run, or {run label: probability}
UPDATE_FLAG = "--gotchas-update-baseline"
ANY_MODEL_FLAG = "--gotchas-baseline-any-model"
# How a baseline's numbers were read, where it records it (Header.reading, Header.bos): another reading or another BOS
# gives other numbers from other prompts or candidates, so verdicts read otherwise are not comparable.
READ_FIELDS = ("reading", "bos")


@dataclass(frozen=True)
class Header:
    """Who produced the verdicts. `device` is the kind only (cpu, cuda, mps ...): xdist workers spread over GPUs.
    `hardware` is what decides how the kernels round: "cpu AVX512", "cpu AVX2", "NVIDIA H200 (sm_90)"."""

    name: str
    weights_sha256: str
    dtype: str
    softmax_dtype: str
    device: str
    hardware: str
    numerics: str  # model/numerics.fingerprint: the kernels' bits on fixed probes
    torch: str
    transformers: str
    checks: str = ""  # baseline/store.checks_of(): the opt-in checks that can change a verdict, "" for none
    backend: str = ""  # the backend that read the model: "" for transformers, "vllm"
    engine: str = ""  # that backend's version, layout and kernels' mode (baseline/compare.engine_fact)
    # How the numbers were read ("": not recorded, a baseline written before these were): the reading the verdicts
    # come from (text | token), the BOS policy and what it gave ("auto: <bos>", ModelInfo.bos), the kernel path.
    reading: str = ""
    bos: str = ""
    kernels: str = ""
    # How the text reading's chains past a prompt were computed (vocabulary.TextPath: tree, steps, contexts), where
    # the verdicts come from the text reading; "" for the token reading (the path decides none of its numbers) and in
    # a file written before it was recorded (baseline/store.py reads a format-4 file's as what wrote it computed).
    text_path: str = ""


@dataclass(frozen=True)
class Entry:
    """One case's recorded verdict and probabilities."""

    verdict: Verdict
    p_correct: Probability
    p_wrong: Probability


def entry_of(result: CaseResult) -> Entry:
    """A scored case's entry: only a scored case has a verdict to record."""
    verdict = result.verdict
    if verdict is None:
        raise ValueError(f"{result.chapter}/{result.id} was not scored: it has no baseline entry")
    if len(result.runs) == 1:
        return Entry(verdict, result.runs[0].p_correct, result.runs[0].p_wrong)
    names = [r.label or f"run{n}" for n, r in enumerate(result.runs, start=1)]
    return Entry(verdict, {n: r.p_correct for n, r in zip(names, result.runs)},
                 {n: r.p_wrong for n, r in zip(names, result.runs)})


@dataclass(frozen=True)
class MemberChange:
    case: str
    old: Verdict | None  # its verdict in the baseline; None: not recorded
    new: Verdict | None  # its verdict now; None: not scored in this run


@dataclass(frozen=True)
class PairChange:
    key: str
    old: PairVerdict | None  # None: not in the baseline
    new: PairVerdict | None  # None: not scored in this run
    members: list[MemberChange]


@dataclass(frozen=True)
class CaseChange:
    key: str
    old: Entry
    new: Entry


@dataclass
class Comparison:
    regressions: list[PairChange] = field(default_factory=list)  # pass -> fail: their members failed
    improvements: list[PairChange] = field(default_factory=list)  # fail -> pass
    unchecked: list[PairChange] = field(default_factory=list)  # passed in the baseline; a member not scored now
    unchanged: int = 0
    new_pairs: list[PairChange] = field(default_factory=list)
    gone_pairs: dict[str, PairVerdict] = field(default_factory=dict)  # key -> its state in the baseline; gone from its chapter
    changed_cases: list[CaseChange] = field(default_factory=list)
    new_cases: list[str] = field(default_factory=list)
    gone_cases: list[str] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)  # chapters in the baseline that did not run


@dataclass(frozen=True)
class FactChange:
    """A fact of how numbers were computed that differs between a baseline (or a chapter kept in it) and this run."""

    field: str  # a Header field: "transformers", "hardware", "numerics" ...
    recorded: str
    now: str


@dataclass
class PrimersChange:
    """A chapter whose primers (truth/collect.primers_fact) differ from those its baseline entries were read with:
    its prompts are other texts, so its numbers are not the baseline's numbers of the same prompts."""

    chapter: str
    recorded: str
    now: str
    differing: list[str] = field(default_factory=list)  # its cases whose probabilities differ from the baseline's
    changed: list[str] = field(default_factory=list)  # of those, the ones whose verdict changed


@dataclass
class Numerics:
    """A run against its baseline when the model, dtypes and reading are the same: do the kernels give the same bits?
    With every recorded fact the same, every probability must be equal (a difference is a bug); with another
    fingerprint, library version or hardware, differences are theirs; with a fact not recorded, it cannot tell."""

    same_kernels: bool
    differing: list[str] = field(default_factory=list)  # cases whose probabilities differ from the baseline's
    changed: list[str] = field(default_factory=list)  # of those, the ones whose verdict changed
    within_rounding: list[str] = field(default_factory=list)  # changed, and the margin is one the dtype can't resolve
    facts: list[FactChange] = field(default_factory=list)  # what the compared entries were recorded with otherwise
    unrecorded: list[str] = field(default_factory=list)  # settings the baseline does not record (an older file)
    # Chapters read with other primers than the baseline's: their differences are listed there, not in `differing`.
    primers: list[PrimersChange] = field(default_factory=list)


@dataclass
class UpdateStats:
    pairs: int = 0  # written from this run
    verdicts: int = 0
    changed: int = 0  # pair states and case verdicts that differ from the file's
    removed: int = 0  # entries of pairs and cases their chapter no longer has
    kept: int = 0  # entries of pairs and cases that did not run
    fresh: bool = False  # the file was started afresh (it held another model's verdicts)
    dropped: list[str] = field(default_factory=list)  # entries of the file that could not be read, each with why
    mixed: dict[str, dict[str, str]] = field(default_factory=dict)  # kept chapters recorded otherwise than the header


@dataclass(frozen=True)
class Refusal:
    """A baseline that cannot be compared with this run: what it was recorded with, what this run uses."""

    path: str
    recorded: Header
    fields: list[str]
    now: Header | None = None  # this run's; None when refused before the model loaded, from the settings alone
    dtype: str = ""  # the settings this run asks for, when `now` is None
    softmax_dtype: str = ""
    checks: str = ""
    reading: str = ""


@dataclass(frozen=True)
class BrokenPair:
    pair: str  # "<chapter>/<pair id>"
    others: dict[str, str]  # the other members, with their verdicts in the baseline


@dataclass(frozen=True)
class Regression:
    """A member that broke pairs which passed in the baseline: its item fails with these facts."""

    path: str
    case: str
    broken: list[BrokenPair]
    old: Entry | None  # what the baseline recorded of the member (None: nothing, it was ok)
    new: Entry
    recorded_hardware: str | None  # set when the baseline was recorded on other hardware
    hardware: str
    command: str  # the command that records the change


@dataclass
class BaselineOutcome:
    """One model's use of its baseline at the end of a run."""

    model: str
    path: str | None = None  # as reports name it; None when nothing was scored
    update: bool = False
    command: str = ""  # the command that records this run
    nothing_scored: bool = False
    missing: bool = False  # no baseline at `path`
    recorded: Header | None = None  # the baseline's header
    now: Header | None = None  # this run's
    refusal: Refusal | None = None  # not comparable: not used
    across: list[str] = field(default_factory=list)  # identity fields that differ, compared anyway (--any-model)
    comparison: Comparison | None = None
    numerics: Numerics | None = None
    written: UpdateStats | None = None  # update mode: what was recorded
    write_error: str | None = None  # update mode: why the file could not be written
    report: str | None = None  # `gotchas merge`: the input report this outcome comes from
