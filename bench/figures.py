"""The figures a bench run produces, typed and pure (no process, no report): what measure.py computes from the runs
and render.py writes. Medians and ratios live here, so that they are tested without running anything."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

# The spec's targets (render.targets says whether each is met).
TARGET_RATIO, TARGET_MEMORY, TARGET_COLLECTION = 1.15, 1.3, 1.0
# The plugin's phases every run has (scoring/scorer.py PHASES but "layers"): a comparison row names any other.
COMMON_PHASES = ("collection", "model_load", "tokenizer_load", "cuts", "forward", "report")


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def ratio(a: float, b: float) -> float:
    return a / b if b else math.nan


@dataclass(frozen=True)
class Machine:
    date: str
    nproc: int
    memory: str
    cpu: str
    python: str
    torch: str
    transformers: str
    pytest: str
    torch_threads: str
    cuda: str
    load: str  # load average at the start


@dataclass(frozen=True)
class Stat:
    """One quantity over the runs of a scenario."""

    values: tuple[float, ...]

    @staticmethod
    def of(values: Sequence[float]) -> Stat:
        return Stat(tuple(float(v) for v in values))

    @property
    def median(self) -> float:
        return median(self.values)

    @property
    def low(self) -> float:
        return min(self.values, default=math.nan)

    @property
    def high(self) -> float:
        return max(self.values, default=math.nan)


@dataclass(frozen=True)
class Ratio:
    """a / b for runs measured side by side: per repetition (paired by index) and as the ratio of the medians."""

    each: tuple[float, ...]
    of_medians: float

    @staticmethod
    def of(a: Sequence[float], b: Sequence[float]) -> Ratio:
        return Ratio(tuple(ratio(x, y) for x, y in zip(a, b)), ratio(median(a), median(b)))

    @property
    def median(self) -> float:
        return median(self.each)


@dataclass(frozen=True)
class RunFigures:
    """One scenario's runs. Counts are those of its first run (every run of a scenario runs the same cases)."""

    name: str
    wall: Stat
    rss: Stat  # peak resident memory, MB
    phases: dict[str, Stat] = field(default_factory=dict)  # seconds: the plugin's timings, or the naive script's
    cases: int = 0
    scored: int = 0
    prompts: int = 0  # runs in the report (the naive script: its prompts)
    passes: int = 0  # forward passes
    calls: int = 0  # model calls (fewer when batched)
    tokens: int = 0
    tokenizer_loaded: int = 0  # how many of the runs loaded the tokenizer
    cut_cache_hits: int = 0
    transcript_cache_hits: int = 0
    misses: int = 0  # transcripts executed (transcript cache misses)
    torch_threads: tuple[int, ...] = ()  # each worker's under xdist, else the process's

    def phase(self, name: str) -> float:
        return self.phases[name].median if name in self.phases else math.nan

    @property
    def rest(self) -> Stat:
        """Wall time outside every phase: interpreter and pytest start-up, summary, exit."""
        return Stat(tuple(w - sum(p.values[i] for p in self.phases.values()) for i, w in enumerate(self.wall.values)))

    @property
    def per_pass(self) -> float:
        return ratio(self.phase("forward"), self.passes)


@dataclass(frozen=True)
class Row:
    """A scenario against the reference of its comparison, run in the same repetitions."""

    run: RunFigures
    wall: float  # x reference, ratio of the medians
    rss: float
    per_pass: float  # forward seconds per pass, x reference


@dataclass(frozen=True)
class Comparison:
    reference: RunFigures
    rows: tuple[Row, ...]  # the reference's own row first

    @staticmethod
    def of(reference: RunFigures, others: Sequence[RunFigures]) -> Comparison:
        rows = [Row(run, ratio(run.wall.median, reference.wall.median), ratio(run.rss.median, reference.rss.median),
                    ratio(run.per_pass, reference.per_pass)) for run in (reference, *others)]
        return Comparison(reference, tuple(rows))


@dataclass(frozen=True)
class Same:
    """Two reports' probabilities and top-k entries, compared."""

    identical: bool
    values: int  # probabilities compared: P(correct) and P(wrong) of every reading of every run
    differ: tuple[str, ...]  # the cases that differ


@dataclass(frozen=True)
class Memory:
    weights_mb: float  # the weights' files, in their dtype
    bare: Stat  # `python -c pass`
    imports: Stat  # after importing what any scoring run must: pytest, torch, transformers

    @property
    def budget_mb(self) -> float:
        return self.weights_mb + self.imports.median


@dataclass(frozen=True)
class Batch:
    size: int
    run: RunFigures
    same: tuple[Same, ...]  # each run against the last warm run at batch size 1


@dataclass(frozen=True)
class Growth:
    scale: int
    cold: RunFigures
    warm: RunFigures


@dataclass(frozen=True)
class Executions:
    """The snippet executions of one logged cold run."""

    label: str
    executions: int
    distinct: int  # (snippet, seed, env) keys
    max_per_key: int
    max_parallel: int
    busy_seconds: float
    collection: float  # the collection phase (the longest worker's under xdist)
    wall: float


@dataclass(frozen=True)
class ExecCheck:
    serial: Executions
    parallel: Executions
    same_executions: bool  # -n 2 executed exactly what the serial run did
    runs_per_snippet: int  # --gotchas-runs: a pinned PYTHONHASHSEED is run this many times by design


@dataclass(frozen=True)
class BenchFigures:
    machine: Machine
    load_end: str
    model: str
    chapters: tuple[str, ...]
    reps: int
    naive: RunFigures
    cold: RunFigures
    warm: RunFigures
    warm_vs_naive: Ratio
    cold_vs_naive: Ratio
    cold_vs_warm: tuple[Same, ...]
    plain_same: int  # prompts read plainly where the naive script's P(correct), P(wrong) are the plugin's
    plain: int
    memory: Memory
    collect_only: RunFigures
    batches: tuple[Batch, ...]
    xdist_shared: RunFigures
    xdist_all: RunFigures
    xdist_same: tuple[bool, ...]
    growth: tuple[Growth, ...]
    extra: Comparison | None  # scenarios.EXTRA against the naive script
    executions: ExecCheck | None


@dataclass(frozen=True)
class TwoModels:
    both: RunFigures
    alone: RunFigures  # smollm2-135m alone (gemma-3-270m alone is the plain run)
    misses_one: int  # transcripts a cold one-model run executed
    misses_two: int


@dataclass(frozen=True)
class FeatureFigures:
    machine: Machine
    chapters: tuple[str, ...]
    reps: int
    comparison: Comparison  # against the plain warm run
    two_models: TwoModels | None
