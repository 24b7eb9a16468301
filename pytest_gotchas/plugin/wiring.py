"""The steps, built from the settings in one place: for the plugin and for the command-line tools alike."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..scoring.scorer import Clock, ModelSlot, Scorer, ScoringConfig
from ..truth.collect import Collector
from ..truth.execute import Cache, Limits
from ..truth.interpreters import Finder
from .options import Settings


def scoring_config(settings: Settings, cache_dir: Path | None) -> ScoringConfig:
    return ScoringConfig(softmax_dtype=settings.softmax_dtype, top_k=settings.top_k, batch_size=settings.batch_size,
                         reading=settings.reading, bos=settings.bos, precision_check=settings.precision_check,
                         layers=settings.layers, one_pass_check=settings.one_pass_check, patch=settings.patch,
                         cache_dir=cache_dir)


def collector(settings: Settings, transcripts: Path | None) -> Collector:
    """Interpreters, the transcript cache (None: nothing kept) and the limits of every snippet run."""
    return Collector(Finder(overrides=settings.python), Cache(transcripts), Limits(timeout=settings.timeout),
                     settings.runs, settings.variants)


def scorer(settings: Settings, model_id: str, name: str | None, clock: Clock, cache_dir: Path | None, *,
           worker_id: str | None = None, workers: int = 0, log: Callable[[str], None] | None = None,
           flag: str = "--gotchas-") -> Scorer:
    """The scorer of one model of a run; its model loads on first use. `flag` spells the options that load errors
    name (the tools drop "gotchas-")."""

    def load() -> Any:
        from ..model.load import ModelSpec, load_model

        auto = settings.device == "auto"  # device_map="auto": one model over every GPU
        spec = ModelSpec(name=name, id=model_id, dtype=settings.dtype, device_map_auto=auto,
                         device=None if auto else settings.device, worker_id=worker_id, workers=workers, flag=flag)
        return load_model(spec, settings.model_cache, log=log, lazy_tokenizer=cache_dir is not None)

    return Scorer(model_id=model_id, slot=ModelSlot(load, clock), config=scoring_config(settings, cache_dir))
