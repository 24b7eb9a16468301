"""The steps, built from the settings in one place: for the plugin and for the command-line tools alike."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Protocol

from ..backends.protocol import Asked, Backend, EngineOptions, Feature, LoadRequest, ModelLoadError, ModelSpec
from ..model.ref import TRANSFORMERS, ModelRef
from ..results.effects import Floor
from ..results.hardware import PLAIN_KERNELS
from ..results.vocabulary import EdgeCorruption, PatchMetric, PatchMode, ReadingName
from ..scoring.pairedges import EdgeConfig
from ..scoring.scorer import SHARED_CASES, Scorer, ScoringConfig
from ..scoring.slot import Clock, ModelSlot
from ..truth.collect import Collector, Planned
from ..truth.execute import Cache, Limits
from ..truth.interpreters import Finder
from ..truth.sandbox import Isolation
from .options import Settings


class Progress(Protocol):
    """What loading a model needs of the terminal's progress line (plugin/progress.py's Progress): the wiring sits
    below the plugin, so it names the shape, not the class."""

    @property
    def active(self) -> bool: ...

    def show(self, what: str, done: int = 0, total: int = 0) -> None: ...

    def around(self) -> AbstractContextManager[None]: ...


def patch_mode(settings: Settings) -> PatchMode | None:
    """The patching flags as one mode: the component grid (with the screen beside it) wins over the screen alone,
    and either, like the edges, implies the residual grid; None: no patching."""
    if settings.patch_components:
        return PatchMode.COMPONENTS
    if settings.patch_screen:
        return PatchMode.SCREEN
    return PatchMode.RESIDUAL if settings.patch or settings.patch_edges else None


def scoring_config(settings: Settings, pytest_cache: Path | None) -> ScoringConfig:
    return ScoringConfig(softmax_dtype=settings.softmax_dtype, top_k=settings.top_k, batch_size=settings.batch_size,
                         reading=settings.reading, bos=settings.bos, precision_check=settings.precision_check,
                         layers=settings.layers, one_pass_check=settings.one_pass_check,
                         patch=patch_mode(settings), patch_metric=PatchMetric(settings.patch_metric),
                         patch_screen_k=settings.patch_screen_k,
                         patch_edges=EdgeConfig(settings.patch_edges_steps, settings.patch_edges_k,
                                                EdgeCorruption(settings.patch_edges_corrupt))
                         if settings.patch_edges else None,
                         patch_floor=Floor(settings.patch_floor_steps, settings.patch_floor_logits),
                         pytest_cache=pytest_cache)


def collector(settings: Settings, transcripts: Path | None, isolation: Isolation, interpreters: Path | None = None
              ) -> Collector:
    """Interpreters (those earlier runs verified kept in `interpreters`), the transcript cache (None: nothing kept),
    the run's isolation and the limits of every snippet run."""
    return Collector(Finder(overrides=settings.python, known=interpreters), Cache(transcripts, isolation),
                     Limits(timeout=settings.timeout), settings.runs, settings.variants, settings.instances, settings.jobs)


def scorer(settings: Settings, model_id: str, ref: ModelRef, clock: Clock, pytest_cache: Path | None, *,
           worker_id: str | None = None, workers: int = 0, log: Callable[[str], None] | None = None,
           flag: str = "--gotchas-", planned: Callable[[], list[Planned]] | None = None,
           progress: Progress | None = None) -> Scorer:
    """The scorer of one model of a run; its model loads on first use, through the backend its name chooses
    (backends/: transformers, or `vllm:NAME` through vLLM). `flag` spells the options that load errors name (the
    tools drop "gotchas-"); `planned` gives every case the run scores with this model (a vLLM engine reads them all
    at once); `progress` shows a GGUF conversion's steps (model/convert.py's STEPS) and is erased when the load
    ends."""

    def load(quiet: bool = False) -> Backend:
        from ..backends import module, run_refusals
        from ..model.convert import STEPS

        auto = settings.device == "auto"  # device_map="auto": one model over every GPU
        spec = ModelSpec(name=ref.name, id=model_id, dtype=settings.dtype, kernels=settings.kernels,
                         device_map_auto=auto, device=None if auto else settings.device, worker_id=worker_id,
                         workers=workers, flag=flag, allow_unfaithful_tokenizer=settings.allow_unfaithful_tokenizer)
        problems = run_refusals([ref], asked(settings, flag, workers), flag)
        if problems:
            raise ModelLoadError(problems[0])
        request = LoadRequest(spec=spec, model_cache=settings.model_cache, log=log,
                              lazy_tokenizer=pytest_cache is not None, prefetch=first_run(settings, pytest_cache),
                              engine=engine_options(settings))
        shown = None if quiet else progress  # a load ahead says nothing (scoring/ahead.py)
        token = STEPS.set(shown.show if shown is not None and shown.active else None)
        try:
            with shown.around() if shown is not None else nullcontext():
                loaded: Backend = module(ref.backend).load(request)
                return loaded
        finally:
            STEPS.reset(token)

    # Only a model this process runs is loaded ahead: an engine (vLLM) starts processes and signal handlers of its own.
    ahead = (lambda: load(quiet=True)) if ref.backend == TRANSFORMERS else None
    # An xdist worker is sent its cases a few at a time: the next cases of the run may be another worker's.
    return Scorer(model_id=model_id, slot=ModelSlot(load, clock, ahead), config=scoring_config(settings, pytest_cache),
                  planned=planned, shared_cases=0 if worker_id is not None else SHARED_CASES)


def first_run(settings: Settings, pytest_cache: Path | None) -> Callable[[str], bool] | None:
    """Whether a run will need the tokenizer, from its key, before the model loads: the text reading's table of it
    is not in the cache folder (a first run), so it loads beside the weights instead of after them. None: the
    tokenizer loads on first use, if ever (a warm run never needs it)."""
    if pytest_cache is None or settings.reading != ReadingName.TEXT:
        return None
    from ..scoring.vocab import VocabCache

    return lambda key: not VocabCache(pytest_cache / "vocab", key).stored()


def engine_options(settings: Settings) -> EngineOptions:
    return EngineOptions(tensor_parallel=settings.vllm_tensor_parallel,
                         pipeline_parallel=settings.vllm_pipeline_parallel, executor=settings.vllm_executor,
                         memory=settings.vllm_memory, batch_invariant=settings.vllm_batch_invariant)


def asked(settings: Settings, flag: str = "--gotchas-", workers: int = 0) -> list[Asked]:
    """What the run asks of a backend beyond reading (backends/protocol.Feature), spelled as the user gave it, in
    the order refusals are said."""
    switches = ((Feature.LAYERS, settings.layers), (Feature.PRECISION_CHECK, settings.precision_check),
                (Feature.PATCH, settings.patch), (Feature.PATCH_COMPONENTS, settings.patch_components),
                (Feature.PATCH_SCREEN, settings.patch_screen), (Feature.PATCH_EDGES, settings.patch_edges),
                (Feature.ONE_PASS_CHECK, settings.one_pass_check))
    out = [Asked(feature, f"{flag}{feature.value}") for feature, on in switches if on]
    if settings.kernels != PLAIN_KERNELS:
        out.append(Asked(Feature.KERNELS, f"{flag}kernels {settings.kernels}"))
    if settings.device is not None:
        out.append(Asked(Feature.DEVICE, f"{flag}device {settings.device}", settings.device))
    if workers:
        out.append(Asked(Feature.WORKERS, f"-n {workers}"))
    return out
