"""The figures a bench run produces, typed and pure (no process, no report): what measure.py computes from the runs
and render.py writes. Medians and ratios live here, so that they are tested without running anything."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

# The targets (render.targets says whether each is met): the spec's, with issue #26's warm / naive at most 1.0
# (one forward pass per prompt, as the naive script) and at most 1.05 full forward passes per run on average.
TARGET_RATIO, TARGET_MEMORY, TARGET_COLLECTION, TARGET_PASSES = 1.0, 1.3, 1.0, 1.05
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
    passes: int = 0  # full forward passes (Timings.forward_passes: the naive script's, one per prompt)
    calls: int = 0  # model calls (fewer when batched)
    tokens: int = 0  # tokens of the full passes
    steps: int = 0  # incremental steps on a full pass's KV cache (Timings.incremental_steps)
    step_tokens: int = 0  # tokens the steps fed (Timings.incremental_tokens)
    check_passes: int = 0  # --gotchas-one-pass-check's separate full passes (Timings.check_passes)
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
class PerRun:
    """What one run (one prompt put to the model) costs, the plugin's against the naive script's: counts from the
    first run of each, seconds from the medians."""

    runs: int  # prompts: the naive script's, which are every run of the plugin's report
    passes: float  # the plugin's full forward passes per run
    steps: float  # the plugin's incremental steps per run
    naive_passes: float
    forward: float  # the plugin's forward phase, seconds per run
    naive_forward: float
    wall: float  # the whole process, seconds per run
    naive_wall: float

    @staticmethod
    def of(plugin: RunFigures, naive: RunFigures) -> PerRun:
        n = naive.prompts

        def each(value: float) -> float:
            return ratio(value, n)

        return PerRun(n, each(plugin.passes), each(plugin.steps), each(naive.passes), each(plugin.phase("forward")),
                      each(naive.phase("forward")), each(plugin.wall.median), each(naive.wall.median))

    @property
    def forward_ratio(self) -> float:
        """The plugin's forward phase over the naive script's: the ratio of the medians."""
        return ratio(self.forward, self.naive_forward)


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
    collect_only: RunFigures | None  # None: not run (--cost-only)
    batches: tuple[Batch, ...]
    xdist_shared: RunFigures | None  # None: not run (--no-xdist, --cost-only)
    xdist_all: RunFigures | None
    xdist_same: tuple[bool, ...]
    growth: tuple[Growth, ...]
    extra: Comparison | None  # scenarios.EXTRA against the naive script
    executions: ExecCheck | None

    @property
    def per_run(self) -> PerRun:
        return PerRun.of(self.warm, self.naive)


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
