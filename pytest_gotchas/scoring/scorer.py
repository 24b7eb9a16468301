"""Scoring one planned case: cut plans (from the cache or the tokenizer), the forward passes, the case verdict.

A Scorer is built from one ScoringConfig (settings/wiring.py makes both, for the plugin and the command-line tools
alike) and a ModelSlot (slot.py), which loads its model on first use and remembers a failure so that it is reported
once; the wall time of every phase and what the passes cost are kept in the slot's Clock, one per process, for the
JSON report's run section.

A case whose prompt needs more tokens than the model has positions, or at whose cut the model gives a non-finite
logit or probability, is an error for that case naming the model and the case (guard.py): never a verdict, so
nothing of it reaches a report or a baseline.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from ..backends.protocol import Backend, ModelLoadError, ModuleBackend, Role
from ..errors import GotchasError, ModelUnavailable
from ..results.effects import Floor
from ..results.onepass import judged_alone, separate
from ..results.schema import CacheUse, CaseResult, Cost, LayerReading, ModelInfo, Run, Timings
from ..results.verdict import NonFiniteProbability, case_verdict
from ..results.vocabulary import PatchMethod, PatchMetric, PatchMode, ReadingName, TextPath
from ..truth.collect import Planned, Scoring
from .engine_rows import Fetcher
from .pairedges import EdgeConfig
from .shared import SharedReads
from .slot import Clock, ModelSlot


SHARED_CASES = 32  # cases whose trees share head products (their rows' probabilities wait: ~1.5 MB a context)


@dataclass(frozen=True, kw_only=True)
class ScoringConfig:
    """How every case of a run is read (the options of settings/options.py that scoring needs)."""

    softmax_dtype: str | None = None  # None: the model's dtype
    top_k: int = 5
    batch_size: int = 1
    reading: str = "text"  # the reading verdicts come from: text | token
    bos: str = "auto"
    precision_check: bool = False
    layers: bool = False
    one_pass_check: bool = False  # also every reading with separate full passes, kept as "<name>/separate"
    # activation patching of the pairs (and twins) a case is the last member of (pairpatch.py), and how far down:
    # the residual grid, with the component grid and the screen, or with the screen alone; None: no patching
    patch: PatchMode | None = None
    patch_metric: PatchMetric = PatchMetric.MODEL  # the dtype of patching's two logits: the model's or float32 (head.py)
    patch_screen_k: int = 20  # the screen's top-k verified exactly (screen.py), with the component grid or alone
    patch_edges: EdgeConfig | None = None  # --gotchas-patch-edges (pairedges.py); None: no edges
    patch_floor: Floor = Floor()  # the floor under patching's fractions and the layers' leads (results/effects.py)
    # this plugin's folder in pytest's cache, for cut plans and token texts (not the model cache); None: none kept,
    # and the tokenizer loads eagerly
    pytest_cache: Path | None = None


def effective_batch_size(backend: Backend, config: ScoringConfig) -> int:
    """The batch size asked for, or 1 where a batch computes other bits than a prompt alone (model/invariance.py)."""
    return config.batch_size if backend.batch_invariant else 1


def patch_method(backend: Backend) -> PatchMethod:
    from .patching import DEFAULT

    return DEFAULT if backend.batch_invariant else PatchMethod.FULL


class Scorer:
    """One model of the run: scores planned cases, and describes the model once it has scored one.

    `planned` gives every case the run will score with this model (the session's collected items); a backend that
    gives logits rows by context (backends/protocol.ContextLogits: vLLM) reads all of their contexts at the first
    score, in as few calls as the readings allow (scoring/engine_rows.prefetch), and each case is then scored from
    what it read.
    """

    def __init__(self, *, model_id: str, slot: ModelSlot, config: ScoringConfig,
                 planned: Callable[[], list[Planned]] | None = None, shared_cases: int = SHARED_CASES) -> None:
        """`shared_cases`: how many cases of the run's order share a round of tree heads (heads.py; 0: none, as in
        an xdist worker, whose share of the run is not known ahead)."""
        self.model_id, self.slot, self.config = model_id, slot, config
        self._planned = planned
        self.shared = SharedReads(shared_cases, _texts)
        self.clock = slot.clock
        self.notes: list[str] = []  # said once per run: a convention of the model that looks wrong
        self.model_info: ModelInfo | None = None
        self._cut_cache: Any = None
        self._vocab: Any = None
        self._guard: Any = None
        self._fetcher: Fetcher | None = None  # the backend's rows by context, where it gives them
        self._means: dict[Any, Any] = {}  # the chapters' mean writes for the edges (chaptermean.py), per process

    def load_ahead(self, cases: Sequence[Planned] = ()) -> bool:
        """Start loading this model while collection goes on (ahead.py), with the vocabulary table its first passes
        build, then the readings of `cases` (those whose prompts are known before their snippets run) until
        `stop_ahead`; False where the slot does not (scorer.ModelSlot.load_ahead)."""
        self.shared.ahead = list(cases)
        return self.slot.load_ahead(self._ready, self._read_ahead)

    def stop_ahead(self) -> None:
        """Collection is over: the readings ahead stop after their round (the test loop reads the rest)."""
        self.shared.stop.set()

    def _ready(self, loaded: Backend) -> None:
        """What the first case's passes need before they start: the vocabulary table (read from the cache folder, or
        built from the tokenizer on a first run), which every reading's passes ask for (_read), with the text
        reading's lookups; it lives as long as the run (heap.py)."""
        from ..heap import frozen

        with frozen():
            table = self._caches(loaded)[1].get(lambda: loaded.tokenizer)
            if self.config.reading == ReadingName.TEXT:
                table.prepare()

    def _read_ahead(self, loaded: Backend) -> None:
        """Where trees share heads, the readings of the cases given to load_ahead, the next `shared_cases` at a time,
        beside collection (#52: a first run costs about the larger of the two), until `stop_ahead`: a case is scored
        from them only if its texts are still those read."""
        if loaded.role is Role.MODULE and self._shares_heads(loaded):
            self.shared.read_ahead(loaded.model, lambda case: self._read(loaded, case, _texts(case)),
                                   self._guarded(loaded), self._forward_phase)

    def score(self, planned: Planned, partners: Sequence[Any] = (), chapter: Sequence[Planned] = ()) -> CaseResult:
        """The case's result; with --gotchas-patch also the patching of the pairs it is the last member of
        (``partners``: truth/partners.Partner; ``chapter``: every case of its chapter, for the edges' mean)."""
        from .guard import TooLong

        loaded = self.slot.get()
        if self._planned is not None:
            self._prefetch(loaded)
        guard = self._guarded(loaded)
        self._share_heads(loaded, planned, guard)
        texts = _texts(planned)
        shared = self.shared.take(planned)
        try:
            if shared is not None and shared.result is not None:
                cuts, scores = shared.result
            else:
                cuts, scores = self._read(loaded, planned, texts, shared)
            per_layer = self._layers(loaded, cuts, texts) if self.config.layers else [[] for _ in cuts]
        except NonFiniteProbability as error:
            raise GotchasError(_non_finite(planned, loaded, guard, str(error))) from None
        except TooLong as error:
            raise GotchasError(f"{planned.where}: a forward pass of {error.tokens} tokens would run past the "
                               f"{error.positions} positions of model {_name(loaded)!r} (max_position_embeddings in "
                               "its config), so the case has no verdict; shorten its transcript") from None
        found = _not_finite(scores, per_layer)
        if guard.non_finite or found or (shared is not None and shared.non_finite()):
            raise GotchasError(_non_finite(planned, loaded, guard, found))
        if self.model_info is None:
            assert loaded.info is not None
            self.model_info = replace(loaded.info, id=self.model_id, bos=f"{self.config.bos}: {cuts[0].bos or 'none'}")
            if loaded.role is Role.ENGINE:  # an engine: each context a prompt of its own, never a tree
                self.model_info = replace(self.model_info, text_path=TextPath.CONTEXTS, attention="")
            self.notes.extend(loaded.notes + _conventions(loaded, cuts[0].bos, self.config.bos)
                              + _batch_note(loaded, self.config))
        self.clock.forward_passes += scores.passes
        self.clock.forward_calls += scores.calls
        self.clock.prompt_tokens += scores.tokens
        self.clock.incremental_steps += scores.steps
        self.clock.incremental_tokens += scores.step_tokens
        self.clock.tree_calls += scores.tree_calls
        self.clock.tree_contexts += scores.tree_contexts
        self.clock.check_passes += scores.check_passes
        runs = [Run(primer=prompt.primer, prompt=prompt.transcript.prompt, correct=str(prompt.correct),
                    wrong=str(prompt.wrong),
                    readings={**s.readings, **{separate(name): r for name, r in s.checked.items()}},
                    main=self.config.reading, top=s.top, batch_size=effective_batch_size(loaded, self.config),
                    forward_passes=s.forward_passes, incremental_steps=s.incremental_steps, variant=prompt.variant,
                    layers=layers)
                for prompt, s, layers in zip(planned.prompts, scores, per_layer)]
        judgement = case_verdict([r.judged() for r in runs])
        # The case verdict by each reading every run has, its own included, none of them checked for precision:
        # which verdicts the way of reading decides (and, with the one-pass check, the way of computing it).
        alternatives = {name: case_verdict([r.judged(name) for r in runs]).verdict
                        for name in runs[0].readings if judged_alone(name) and all(name in r.readings for r in runs)}
        patching = (self._patch(loaded, planned, cuts, list(partners), chapter)
                    if self.config.patch is not None and partners else [])
        return planned.result(self.model_id, Scoring(judgement.verdict, runs, list(judgement.qualifiers), alternatives,
                                                     patching))

    def _patch(self, loaded: Backend, planned: Planned, cuts: list[Any], partners: list[Any],
               chapter: Sequence[Planned] = ()) -> list[Any]:
        """pairpatch.py on this model; a failed exactness check is an error naming the pair, a model whose decoder
        layers cannot be found stops the session with one message that names its class."""
        from .pairpatch import PatchRequest, patch_partners
        from .patching import CheckError, PatchingError

        def cuts_of(other: Planned) -> list[Any]:
            texts = [(p.transcript.prompt, str(p.correct), str(p.wrong)) for p in other.prompts]
            cut_cache = self._caches(loaded)[0]
            with self.clock.phase("cuts", exclude=self.slot.tokenizer_seconds):
                return [hit[0] if (hit := cut_cache.get(*t)) else self._plan(loaded, *t) for t in texts]

        def decode(token: int) -> str:
            return str(loaded.tokenizer.decode([token]))

        method, model = patch_method(loaded), self._module(loaded, "--gotchas-patch").model
        try:
            with self.clock.phase("patching", exclude=self.slot.tokenizer_seconds):
                entries = patch_partners(model, planned, cuts, partners, cuts_of, decode, PatchRequest(
                    method, self.config.patch_metric, self.config.patch or PatchMode.RESIDUAL,
                    self.config.patch_screen_k, self.config.patch_floor, self.config.patch_edges), chapter, self._means)
            fell_back = (f"patching: the {method} method's exactness checks failed on this machine's kernels for "
                         "some directions (a batch's rows rounded otherwise than a row alone), so those were computed "
                         "again with full, one pass per cell; the JSON names the method of each")
            if any(entry.method != method for entry in entries) and fell_back not in self.notes:
                self.notes.append(fell_back)
            return entries
        except CheckError as error:
            raise GotchasError(str(error)) from None
        except PatchingError as error:
            raise self.slot.fail(f"{error}; run without --gotchas-patch") from None

    def _guarded(self, loaded: Backend) -> Any:
        """The guard on this model (guard.py), installed once per model, reset for each case."""
        from .guard import NO_GUARD, Guard

        if loaded.role is not Role.MODULE:  # no torch module here to hook: the readings are checked (_not_finite)
            return NO_GUARD
        self._guard = Guard.of(loaded.model)
        self._guard.reset()
        return self._guard

    def _fits(self, loaded: Backend, planned: Planned, cuts: list[Any], texts: list[tuple[str, str, str]]) -> None:
        """Every context the case's readings can pass fits the model's positions, or the case is refused before any
        forward pass."""
        from .guard import longest_context

        positions = self._guard.positions if self._guard is not None else None
        if positions is None:
            return
        for prompt, cut, text in zip(planned.prompts, cuts, texts):
            need = longest_context(cut, *text)
            if need <= positions:
                continue
            tokens = len(cut.prompt_ids)
            which = "".join(f" {kind} {name!r}" for kind, name in (("of variant", prompt.variant),
                                                                    ("under primer", prompt.primer)) if name)
            needs = f" and reading it needs contexts of up to {need}" if need != tokens else ""
            raise GotchasError(
                f"{planned.where}: the prompt{which} is {tokens} tokens{needs}, more than the {positions} positions of "
                f"model {_name(loaded)!r} (max_position_embeddings in its config): no forward pass is run and the "
                "case has no verdict; shorten its transcript (the chapter's primer and prelude count too)")

    def _prefetch(self, loaded: Backend) -> None:
        """Once: every planned case's contexts through a backend that gives logits rows by context (nothing for a
        model scoring runs itself, which runs each case's contexts as it scores it). A case that cannot be read is
        left to say why when it is scored itself."""
        every_planned, self._planned = self._planned, None
        fetcher = self._fetcher_of(loaded)
        if fetcher is None and every_planned is not None and self._shares_heads(loaded):
            self.shared.know(every_planned())
        if fetcher is None or every_planned is None:
            return
        from .engine_rows import prefetch

        def job(planned: Planned) -> Callable[[], None]:
            def read() -> None:
                try:
                    self._read(loaded, planned, _texts(planned))
                except ModelUnavailable:
                    raise
                except GotchasError:
                    pass

            return read

        calls, _ = prefetch(fetcher, [job(planned) for planned in every_planned()], lambda: self.clock.phase("forward"))
        self.clock.forward_calls += calls

    def _shares_heads(self, loaded: Backend) -> bool:
        """Whether this run's trees can share head products (heads.py): a module whose load measured it, and no
        check that reads every case's passes again its own way."""
        from ..model import paths

        return (loaded.role is Role.MODULE and self.shared.size > 1 and loaded.shared_head
                and paths.takes_tree(loaded.model) and not self.config.precision_check
                and not self.config.one_pass_check)

    def _share_heads(self, loaded: Backend, planned: Planned, guard: Any) -> None:
        """Read `planned` and the next cases of the run (up to `shared_cases`, each once) in rounds whose trees share
        head products (shared.SharedReads, heads.read_in_rounds); what each read gave waits for its case to be
        scored. A case whose reading fails there fails, and says why, when it is scored itself."""
        if loaded.role is Role.MODULE:
            self.shared.read(loaded.model, self.shared.next_from(planned),
                             lambda case: self._read(loaded, case, _texts(case)), guard, self._forward_phase)

    def _forward_phase(self) -> AbstractContextManager[None]:
        return self.clock.phase("forward", exclude=self.slot.tokenizer_seconds)

    def _read(self, loaded: Backend, planned: Planned, texts: list[tuple[str, str, str]], shared: Any = None
              ) -> tuple[list[Any], Any]:
        """The cut plans (cached, or asked of the tokenizer) and the readings of every prompt of the case (from the
        rows it was read into with other cases', `shared`, where those stopped before its end)."""
        from .cut import CutError
        from .readings import Cut, score_batch
        from .vocab import VocabError

        cut_cache, vocab = self._caches(loaded)
        cached = [cut_cache.get(*t) for t in texts]
        decoded: dict[int, str] = {}  # token id -> text, for the top-k
        for hit in cached:
            decoded.update(hit[1] if hit else {})
        known = len(decoded)
        config = self.config
        try:  # the tokenizer (lazy) is loaded here only if a cut or a top-k token is not in the cache
            with self.clock.phase("cuts", exclude=self.slot.tokenizer_seconds):
                cuts = [hit[0] if hit else self._plan(loaded, *t) for hit, t in zip(cached, texts)]
            self._fits(loaded, planned, cuts, texts)
            with self.clock.phase("forward", exclude=self.slot.tokenizer_seconds):
                scores = score_batch(loaded, [Cut(c, *t) for c, t in zip(cuts, texts)],
                                     softmax_dtype=config.softmax_dtype, top_k=config.top_k,
                                     batch_size=effective_batch_size(loaded, config), decoded=decoded,
                                     vocab=lambda: vocab.get(lambda: loaded.tokenizer), main=config.reading,
                                     precision=(self._module(loaded, "--gotchas-precision-check").float32()
                                                if config.precision_check else None),
                                     check=config.one_pass_check, rows_of=self._rows_of(loaded, planned, shared))
        except CutError as error:
            raise GotchasError(f"{planned.where}: {error}") from None
        except VocabError as error:
            raise GotchasError(f"{planned.where}: the text reading {error}; read the cut token by token with "
                               "--gotchas-reading token") from None
        except ModelLoadError as error:
            raise self.slot.fail(str(error)) from None
        if None in cached or len(decoded) > known:
            for t, cut in zip(texts, cuts):
                cut_cache.put(*t, cut, decoded)
        return cuts, scores

    def _caches(self, loaded: Backend) -> tuple[Any, Any]:
        from .cutcache import CutCache
        from .vocab import VocabCache

        if self._cut_cache is None:
            where = self.config.pytest_cache
            self._cut_cache = CutCache(where and where / "cuts", loaded.tokenizer_key, self.config.bos)
            self._vocab = VocabCache(where and where / "vocab", loaded.tokenizer_key)
        return self._cut_cache, self._vocab

    def _layers(self, loaded: Backend, cuts: list[Any], texts: list[tuple[str, str, str]]) -> list[list[LayerReading]]:
        """Each run's main reading after every layer (layers.py); a model whose layers cannot be read stops the
        session with one message that names its class."""
        from .layers import layer_readings
        from .lens import LensError
        from .readings import resolve_softmax_dtype

        config = self.config
        vocab = self._vocab.get(lambda: loaded.tokenizer) if config.reading == ReadingName.TEXT else None
        dtype = resolve_softmax_dtype(loaded.dtype, config.softmax_dtype)
        batch = effective_batch_size(loaded, config)
        try:
            with self.clock.phase("layers"):
                model = self._module(loaded, "--gotchas-layers").model
                return [layer_readings(model, cut, t, config.reading, vocab, dtype, batch, lambda token: "",
                                       config.patch_floor) for cut, t in zip(cuts, texts)]
        except LensError as error:
            raise self.slot.fail(f"{error}; run without --gotchas-layers") from None

    def _module(self, loaded: Backend, asked: str) -> ModuleBackend:
        """The backend as the torch module that `asked` (an option) runs; an engine whose backend did not declare
        that it cannot (backends/protocol.Capabilities, refused before the load) stops the session here."""
        if loaded.role is Role.MODULE:
            return loaded
        raise self.slot.fail(f"{asked} needs a torch module to run, and model {_name(loaded)!r} is read through an "
                             "engine that gives logits rows by context; its backend should declare that it cannot "
                             "(backends/protocol.py's Capabilities), so that the run refuses it before the load")

    def _plan(self, loaded: Backend, prompt: str, correct: str, wrong: str) -> Any:
        from .cut import plan_cut

        return plan_cut(loaded.tokenizer, prompt, correct, wrong, bos=self.config.bos)

    def _fetcher_of(self, loaded: Backend) -> Fetcher | None:
        """The backend's rows by context (one Fetcher per loaded backend), or None where scoring runs its model."""
        if loaded.role is not Role.ENGINE:
            return None
        source = loaded.context_logits()
        if self._fetcher is None or self._fetcher.source is not source:
            self._fetcher = Fetcher(source, loaded.dtype)
        return self._fetcher

    def _rows_of(self, loaded: Backend, planned: Planned, shared: Any = None
                 ) -> Callable[[str, int, int, int], Any] | None:
        """Where the probabilities come from: the model's forward passes, run here (None: readings.OnePassRows, or
        the case's rows read with the next cases', `_share_heads`), or the backend's logits rows by context."""
        from .engine_rows import rows_of

        fetcher = self._fetcher_of(loaded)
        if fetcher is not None:
            return rows_of(fetcher)
        found = self.shared.entry(planned, shared)
        return None if found is None else found.rows_of

    @property
    def cut_cache(self) -> Any:
        return self._cut_cache


def process_timings(clock: Clock, scorers: list[Scorer], transcripts: Any) -> Timings:
    """What this process spent: cheap counters only."""
    seconds = dict(clock.seconds)
    live = [s.slot.loaded for s in scorers if s.slot.loaded is not None]
    seconds["tokenizer_load"] += sum(loaded.tokenizer_seconds for loaded in live)
    caches = [s.cut_cache for s in scorers if s.cut_cache is not None]
    timings = Timings(
        tokenizer_loaded=clock.tokenizer_loaded or any(loaded.tokenizer_loaded for loaded in live),
        # sys.modules["torch"] is None where an import of torch was blocked (a run without the model extras).
        torch_threads=torch.get_num_threads() if (torch := sys.modules.get("torch")) is not None else None,
        transcript_cache=CacheUse(transcripts.hits, transcripts.misses),
        cut_cache=CacheUse(sum(c.hits for c in caches), sum(c.misses for c in caches)),
    )
    for spec in fields(Cost):  # the clock's counters, whole: Clock and Timings are both a Cost
        setattr(timings, spec.name, getattr(clock, spec.name))
    timings.seconds = {k: round(v, 4) for k, v in seconds.items()}
    return timings


def _name(loaded: Backend) -> str:
    return loaded.info.name if loaded.info is not None else "the model"


def _not_finite(scores: list[Any], layers: list[list[LayerReading]]) -> str:
    """The first number of the readings, the top-k or the layers that is NaN or infinite, in words; "" if none."""
    for scored in scores:
        for name, reading in scored.readings.items():
            if not (math.isfinite(reading.p_correct) and math.isfinite(reading.p_wrong)):
                return f"{name} reading: P(correct) {reading.p_correct}, P(wrong) {reading.p_wrong}"
        for top in scored.top:
            if not math.isfinite(top.p):
                return f"top-k: P({top.token!r}) {top.p}"
    for run in layers:
        for layer in run:
            if not (math.isfinite(layer.p_correct) and math.isfinite(layer.p_wrong)):
                return f"layer {layer.layer}: P(correct) {layer.p_correct}, P(wrong) {layer.p_wrong}"
    return ""


def _non_finite(planned: Planned, loaded: Backend, guard: Any, found: str) -> str:
    what = "logits" if guard.non_finite else "probabilities"
    detail = f" ({found})" if found else " (NaN or infinity)"
    return (f"{planned.where}: model {_name(loaded)!r} gave non-finite {what} at the cut{detail}: no verdict can come "
            "from them, so the case has none and nothing of it is recorded. Check the model's weights, or its dtype "
            "(float16 overflows past 65504: try --gotchas-dtype bfloat16 or float32)")


def _texts(planned: Planned) -> list[tuple[str, str, str]]:
    return [(p.transcript.prompt, str(p.correct), str(p.wrong)) for p in planned.prompts]


def _conventions(loaded: Backend, bos: str | None, mode: str) -> list[str]:
    """Gemma collapses without <bos>: a Gemma-family model whose tokenizer does not add it is said, with the flag
    that overrides a wrong tokenizer file."""
    model_type = loaded.model_type
    if mode == "auto" and bos is None and model_type.startswith("gemma"):
        name = loaded.info.name if loaded.info else model_type
        return [f"model {name!r} is a Gemma model ({model_type}), which is trained with <bos> first, but its "
                "tokenizer adds no BOS token; if its tokenizer files are wrong, run with --gotchas-bos always"]
    return []


def _batch_note(loaded: Backend, config: ScoringConfig) -> list[str]:
    """Kernels that round a batch otherwise: said only where the run asked for what they change."""
    from ..model.invariance import batch_note

    note = (None if loaded.batch_invariant
            else batch_note(loaded.dtype, config.batch_size > 1, config.patch is not None))
    return [note] if note else []
