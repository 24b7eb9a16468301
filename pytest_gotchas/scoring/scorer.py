"""Scoring one planned case: cut plans (from the cache or the tokenizer), the forward passes, the case verdict.

The model comes from a ModelSlot (loaded on first use, a failure remembered so that it is reported once). Timings
and counters of this process are kept in one Timings object, for the JSON report's run section.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..truth.collect import Planned
from ..results.onepass import judged_alone, separate
from ..results.schema import CaseResult, Run
from ..results.verdict import case_verdict

PHASES = ("collection", "model_load", "tokenizer_load", "cuts", "forward", "layers", "report")


class GotchasError(Exception):
    """A user-facing error: shown as its message alone, never as a traceback."""


class ModelUnavailable(GotchasError):
    """The model could not be loaded: the run stops after the first case that needed it."""


@dataclass
class Timings:
    """Wall seconds of this process per phase, and what the forward passes cost."""

    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))
    tokenizer_loaded: bool = False  # by a model already released
    forward_passes: int = 0  # full forward passes (one per prompt, and any a context could not be stepped to)
    forward_calls: int = 0  # model calls for them: fewer when --gotchas-batch-size grouped some
    prompt_tokens: int = 0  # tokens of the full passes
    incremental_steps: int = 0  # contexts computed as steps on a full pass's KV cache
    incremental_tokens: int = 0  # tokens the steps fed
    check_passes: int = 0  # --gotchas-one-pass-check: its separate full passes

    @contextmanager
    def phase(self, name: str, exclude: Callable[[], float] = lambda: 0.0) -> Iterator[None]:
        """Add the time spent inside to ``name``, less what ``exclude`` grew by meanwhile (a lazy tokenizer load
        inside a forward phase is its own phase)."""
        started, excluded = time.perf_counter(), exclude()
        try:
            yield
        finally:
            self.seconds[name] += (time.perf_counter() - started) - (exclude() - excluded)


class ModelSlot:
    """One model, loaded on first use and released on request."""

    def __init__(self, load: Callable[[], Any], timings: Timings) -> None:
        self._load = load
        self._loaded: Any = None
        self._error: str | None = None
        self.timings = timings

    def get(self) -> Any:
        from ..model.load import ModelLoadError

        if self._loaded is None and self._error is None:
            with self.timings.phase("model_load", exclude=self.tokenizer_seconds):
                try:
                    self._loaded = self._load()
                except ModelLoadError as error:
                    self._error = str(error)
        if self._error is not None:
            raise ModelUnavailable(self._error)
        return self._loaded

    def fail(self, message: str) -> ModelUnavailable:
        """A load failure found later (a lazy tokenizer that would not load): remembered like the first."""
        self._error = message
        return ModelUnavailable(message)

    def tokenizer_seconds(self) -> float:
        return self._loaded.tokenizer_seconds if self._loaded is not None else 0.0

    @property
    def loaded(self) -> Any:
        return self._loaded

    def release(self) -> None:
        """Let the model go, so that the next one loads into the memory it held."""
        import gc

        loaded, self._loaded = self._loaded, None
        if loaded is not None:  # its tokenizer's cost stays counted
            self.timings.seconds["tokenizer_load"] += loaded.tokenizer_seconds
            self.timings.tokenizer_loaded |= loaded.tokenizer_loaded
        del loaded
        gc.collect()
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available():
            torch.cuda.empty_cache()


class Scorer:
    def __init__(self, slot: ModelSlot, cache_dir: Path | None, softmax_dtype: str | None, top_k: int,
                 batch_size: int, reading: str = "text", bos: str = "auto", model_id: str | None = None,
                 precision_check: bool = False, layers: bool = False, one_pass_check: bool = False) -> None:
        self.slot = slot
        self.timings = slot.timings
        # None: no cache of cut plans and token texts, and the tokenizer is loaded with the model
        self.cache_dir = cache_dir
        self.softmax_dtype, self.top_k, self.batch_size, self.reading = softmax_dtype, top_k, batch_size, reading
        self.bos, self.model_id, self.precision_check, self.layers = bos, model_id, precision_check, layers
        self.one_pass_check = one_pass_check
        self.notes: list[str] = []  # said once per run: a convention of the model that looks wrong
        self._cut_cache: Any = None
        self._vocab: Any = None
        self._model_info: dict[str, Any] | None = None

    def score(self, plan: Planned) -> CaseResult:
        from .cut import CutError
        from .cutcache import CutCache
        from ..model.load import ModelLoadError, describe
        from .readings import Cut, score_batch
        from .vocab import VocabCache, VocabError

        loaded = self.slot.get()
        if self._cut_cache is None:
            self._cut_cache = CutCache(self.cache_dir and self.cache_dir / "cuts", loaded.tokenizer_key, self.bos)
            self._vocab = VocabCache(self.cache_dir and self.cache_dir / "vocab", loaded.tokenizer_key)
        texts = [(p.transcript.prompt, str(p.correct), str(p.wrong)) for p in plan.prompts]
        cached = [self._cut_cache.get(*t) for t in texts]
        decoded: dict[int, str] = {}  # token id -> text, for the top-k
        for hit in cached:
            decoded.update(hit[1] if hit else {})
        known = len(decoded)
        try:  # the tokenizer (lazy) is loaded here only if a cut or a top-k token is not in the cache
            with self.timings.phase("cuts", exclude=self.slot.tokenizer_seconds):
                cuts = [hit[0] if hit else self._plan(loaded, *t) for hit, t in zip(cached, texts)]
            with self.timings.phase("forward", exclude=self.slot.tokenizer_seconds):
                scores = score_batch(loaded, [Cut(c, *t) for c, t in zip(cuts, texts)],
                                     softmax_dtype=self.softmax_dtype, top_k=self.top_k, batch_size=self.batch_size,
                                     decoded=decoded, vocab=lambda: self._vocab.get(lambda: loaded.tokenizer),
                                     main=self.reading, precision=loaded.float32() if self.precision_check else None,
                                     check=self.one_pass_check)
        except CutError as error:
            raise GotchasError(f"{plan.where}: {error}") from None
        except VocabError as error:
            raise GotchasError(f"{plan.where}: the text reading {error}; read the cut token by token with "
                               "--gotchas-reading token") from None
        except ModelLoadError as error:
            raise self.slot.fail(str(error)) from None
        per_layer = self._layers(loaded, cuts, texts) if self.layers else [[] for _ in cuts]
        if None in cached or len(decoded) > known:
            for t, cut in zip(texts, cuts):
                self._cut_cache.put(*t, cut, decoded)
        if self._model_info is None:
            self._model_info = {**describe(loaded), "bos": f"{self.bos}: {cuts[0].bos or 'none'}"}
            self.notes.extend(loaded.notes + _conventions(loaded, cuts[0].bos, self.bos))
        self.timings.forward_passes += scores.passes
        self.timings.forward_calls += scores.calls
        self.timings.prompt_tokens += scores.tokens
        self.timings.incremental_steps += scores.steps
        self.timings.incremental_tokens += scores.step_tokens
        self.timings.check_passes += scores.check_passes
        runs = [Run(primer=prompt.primer, prompt=prompt.transcript.prompt, correct=str(prompt.correct),
                    wrong=str(prompt.wrong),
                    readings={**s.readings, **{separate(name): r for name, r in s.checked.items()}},
                    main=self.reading, top=s.top, batch_size=self.batch_size, forward_passes=s.forward_passes,
                    incremental_steps=s.incremental_steps, variant=prompt.variant, layers=layers)
                for prompt, s, layers in zip(plan.prompts, scores, per_layer)]
        judgement = case_verdict([r.judged() for r in runs])
        # The case verdict by each reading every run has, its own included, none of them checked for precision:
        # which verdicts the way of reading decides (and, with the one-pass check, the way of computing it).
        alternatives = {name: case_verdict([r.judged(name) for r in runs]).verdict
                        for name in runs[0].readings if judged_alone(name) and all(name in r.readings for r in runs)}
        return plan.result(verdict=judgement.verdict, qualifiers=list(judgement.qualifiers), runs=runs,
                           model=self._model_info, reading_verdicts=alternatives, model_id=self.model_id)

    def _layers(self, loaded: Any, cuts: list[Any], texts: list[tuple[str, str, str]]) -> list[list[dict[str, float]]]:
        """Each run's main reading after every layer (layers.py); a model whose layers cannot be read stops the
        session with one message that names its class."""
        from .layers import layer_readings
        from .lens import LensError
        from .readings import resolve_softmax_dtype

        vocab = self._vocab.get(lambda: loaded.tokenizer) if self.reading == "text" else None
        dtype = resolve_softmax_dtype(loaded.model, self.softmax_dtype)
        try:
            with self.timings.phase("layers"):
                return [layer_readings(loaded.model, cut, t, self.reading, vocab, dtype, self.batch_size,
                                       lambda token: "") for cut, t in zip(cuts, texts)]
        except LensError as error:
            raise self.slot.fail(f"{error}; run without --gotchas-layers") from None

    def _plan(self, loaded: Any, prompt: str, correct: str, wrong: str) -> Any:
        from .cut import plan_cut

        return plan_cut(loaded.tokenizer, prompt, correct, wrong, bos=self.bos)

    @property
    def cut_cache(self) -> Any:
        return self._cut_cache


def process_report(timings: Timings, scorers: list[Scorer], transcripts: Any) -> dict[str, Any]:
    """What this process spent, as plain values for the JSON report's run section: cheap counters only."""
    seconds = dict(timings.seconds)
    live = [s.slot.loaded for s in scorers if s.slot.loaded is not None]
    seconds["tokenizer_load"] += sum(loaded.tokenizer_seconds for loaded in live)
    caches = [s.cut_cache for s in scorers if s.cut_cache is not None]
    return {
        "seconds": {k: round(v, 4) for k, v in seconds.items()},
        "forward_passes": timings.forward_passes,
        "forward_calls": timings.forward_calls,
        "prompt_tokens": timings.prompt_tokens,
        "incremental_steps": timings.incremental_steps,
        "incremental_tokens": timings.incremental_tokens,
        "check_passes": timings.check_passes,
        "tokenizer_loaded": timings.tokenizer_loaded or any(loaded.tokenizer_loaded for loaded in live),
        "torch_threads": sys.modules["torch"].get_num_threads() if "torch" in sys.modules else None,
        "transcript_cache": {"hits": transcripts.hits, "misses": transcripts.misses},
        "cut_cache": {"hits": sum(c.hits for c in caches), "misses": sum(c.misses for c in caches)},
    }


def _conventions(loaded: Any, bos: str | None, mode: str) -> list[str]:
    """Gemma collapses without <bos>: a Gemma-family model whose tokenizer does not add it is said, with the flag
    that overrides a wrong tokenizer file."""
    model_type = str(getattr(getattr(loaded.model, "config", None), "model_type", ""))
    if mode == "auto" and bos is None and model_type.startswith("gemma"):
        name = loaded.info.name if loaded.info else model_type
        return [f"model {name!r} is a Gemma model ({model_type}), which is trained with <bos> first, but its "
                "tokenizer adds no BOS token; if its tokenizer files are wrong, run with --gotchas-bos always"]
    return []
