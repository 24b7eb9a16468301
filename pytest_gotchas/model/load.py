"""Load the model and its tokenizer: the only module that knows transformers' loading of weights.

The plugin imports this module on every run, so torch and transformers are imported inside the functions that need
them, never at the top. Where the model is read from is source.py's (GGUF files are converted first, convert.py;
embedded models are found by short name, embedded.py), the device and threads device.py's, the tokenizer
tokenizer.py's; what a load is asked for, and its error, spec.py's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..heap import frozen
from ..results.schema import ModelInfo
from ..results.vocabulary import TextPath
from . import DTYPES, companions, facts, float32_matmul, invariance, numerics, paths
from .convert import Log, no_progress_bars, one_line
from .device import check_device, placed, resolve_device, share_cpu_threads
from .hashes import hub_snapshot, tokenizer_fingerprint, weight_files, weights_sha256
from .invariance import INVARIANT, Invariance
from .ref import ModelRef
from .source import resolve_source, shown_name
from .spec import ModelLoadError, ModelSpec
from .tokenizer import check_tokenizer, tokenizer_loader


class LoadedModel:
    """The model, its tokenizer and what was loaded.

    The tokenizer may be loaded lazily (``load_model(..., lazy_tokenizer=True)``): gemma's 262k-entry tokenizer
    costs 1-3 s and about 400 MB, and a warm run that finds every cut in the cache (cutcache.py) never needs it.
    ``tokenizer_key`` fingerprints its files and library versions; ``tokenizer_seconds`` is what loading it took.
    """

    def __init__(self, model: Any, tokenizer: Any = None, info: ModelInfo | None = None, *,
                 load_tokenizer: Callable[[], Any] | None = None, tokenizer_key: str | None = None) -> None:
        self.model = model  # transformers PreTrainedModel, eval mode
        self._tokenizer = tokenizer  # a fast tokenizer: offsets are needed at the cut
        self._load_tokenizer = load_tokenizer
        self.info = info
        self.tokenizer_key = tokenizer_key
        self.tokenizer_seconds = 0.0
        self.notes: list[str] = []  # said once per run: how the load went against the defaults
        self._float32: Any = None
        self.invariance = INVARIANT  # load_model measures it (invariance.py)
        self.shared_head = False  # trees can share a head product (paths.apart): load_model measures it

    @property
    def tokenizer(self) -> Any:
        """Loaded (and checked) on first use; raises ModelLoadError."""
        if self._tokenizer is None and self._load_tokenizer is not None:
            started = time.perf_counter()
            self._tokenizer = self._load_tokenizer()
            self._load_tokenizer = None
            self.tokenizer_seconds += time.perf_counter() - started
        return self._tokenizer

    @property
    def tokenizer_loaded(self) -> bool:
        return self._tokenizer is not None

    def float32(self) -> Any:
        """The model with its weights upcast to float32 (for --gotchas-precision-check), made on first use; the
        model itself when it already runs in float32."""
        import copy

        import torch

        if self.model.dtype == torch.float32:
            return self.model
        if self._float32 is None:
            upcast = copy.deepcopy(self.model).to(torch.float32).eval()
            invariance.settle(upcast)  # float32 kernels choose by shape too: its rows must be its reference's bits
            self._float32 = upcast
        return self._float32


def _import_libraries(shown: str) -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as error:
        raise ModelLoadError(
            f"cannot load model {shown!r}: scoring needs torch and transformers ({one_line(error)}). Install them "
            "with pip install \"pytest-gotchas[model]\" (the embedded model: \"pytest-gotchas[default-model]\"; "
            "install the torch build you want first)") from None
    return torch, transformers


def load_model(spec: ModelSpec, cache_dir: Path, log: Log | None = None, lazy_tokenizer: bool = False,
               prefetch: Callable[[str], bool] | None = None) -> LoadedModel:
    """Load the model ``spec`` names; .gguf files (and embedded models) are converted once into ``cache_dir``.

    ``log`` receives a line before slow one-time work (the conversion takes about a minute). With
    ``lazy_tokenizer`` the tokenizer is loaded and checked on first use, and ``tokenizer_key`` is set; where
    ``prefetch(tokenizer_key)`` says the run will need it (a first run: nothing cached for it), a thread starts
    loading it while the weights load, and first use waits for that thread.
    """
    shown = shown_name(spec.name)
    with frozen():  # see heap.py: the libraries, then the model, live as long as the run
        torch, transformers = _import_libraries(shown)
    if spec.dtype not in DTYPES:
        raise ModelLoadError(f"cannot load model {shown!r}: dtype {spec.dtype!r} is not one of {', '.join(DTYPES)}")
    device = "auto" if spec.device_map_auto else resolve_device(spec.device, spec.worker_id)
    check_device(device, shown, spec)
    full_threads = torch.get_num_threads()
    shared = share_cpu_threads(device, spec.workers)
    cache = Path(cache_dir)
    source = resolve_source(spec.name, cache, log or _quiet, spec.flag)
    notes: list[str] = []  # the load's, and the tokenizer's when it loads (lazily: on first use)
    load_tokenizer = tokenizer_loader(shown, source, cache, prefetch if lazy_tokenizer else None,
                                      lambda tokenizer: notes.extend(check_tokenizer(tokenizer, shown, spec)))
    with frozen():
        model = _load_weights(shown, source, getattr(torch, spec.dtype), device)
    float32_matmul.apply(model, spec.kernels)
    folder = source if isinstance(source, Path) else hub_snapshot(source)
    weights, tokenizer_key, parts = _identity(spec, device, folder, cache, shared, full_threads)
    known, found, found_notes = _measured(model, cache, parts, shown, spec.dtype, shared or full_threads, full_threads)
    loaded = _with_tokenizer(model, load_tokenizer, tokenizer_key, lazy_tokenizer)
    device = placed(model) if spec.device_map_auto else device
    loaded.info = ModelInfo(id=spec.id or ModelRef(name=spec.name).short, name=shown, source=str(folder),
                            weights_sha256=weights, dtype=spec.dtype, device=device,
                            torch_version=str(torch.__version__), transformers_version=str(transformers.__version__),
                            hardware=numerics.hardware(device), threads=known.threads,
                            numerics=numerics.named(known.fingerprint, spec.kernels),
                            allow_unfaithful_tokenizer=spec.allow_unfaithful_tokenizer,
                            text_path=TextPath.TREE if paths.takes_tree(model) else TextPath.STEPS,
                            attention=paths.attention(model))
    loaded.invariance = found
    loaded.shared_head = known.shared_head
    loaded.notes = notes
    notes.extend(found_notes)
    if known.kept:
        loaded.notes.append(f"on this CPU the number of threads changes {spec.dtype} logits ({shared} threads and "
                            f"{full_threads} give other bits): each xdist worker keeps {full_threads} threads, as a "
                            "serial run does, so that -n gives the same numbers (set OMP_NUM_THREADS to choose)")
    return loaded


def _with_tokenizer(model: Any, load_tokenizer: Callable[[], Any], tokenizer_key: str, lazy: bool) -> LoadedModel:
    """The model with its tokenizer: loaded now (a bad tokenizer is a load error now), or on first use."""
    if lazy:
        return LoadedModel(model, load_tokenizer=load_tokenizer, tokenizer_key=tokenizer_key)
    started = time.perf_counter()
    loaded = LoadedModel(model, load_tokenizer())
    loaded.tokenizer_seconds = time.perf_counter() - started
    return loaded


def _measured(model: Any, cache_dir: Path, parts: dict[str, str] | None, shown: str, dtype: str, shared: int,
              full: int) -> tuple[facts.Facts, Invariance, list[str]]:
    """The load's facts (kept, or measured on the model's first forward pass and kept now), the invariance they
    hold and the run's notes of it."""
    try:
        known, probe = _facts(model, cache_dir, parts, shared, full)
    except Exception as error:  # the first forward pass: a model that loads but cannot run fails here, once
        raise ModelLoadError(f"cannot load model {shown!r}: it loaded but a forward pass on probe token ids failed "
                             f"({one_line(error)})") from None
    found, found_notes = _shape_invariance(known, probe, shown, dtype)
    _keep_facts(cache_dir, parts, known, probe)
    return known, found, found_notes


def _identity(spec: ModelSpec, device: str, folder: Path, cache_dir: Path, shared: int | None, full: int
              ) -> tuple[str, str, dict[str, str] | None]:
    """The weights' sha256, the tokenizer's key (hashes.py) and what the load's facts are kept under (facts.py);
    None for a model spread over devices, measured every time. With allow_unfaithful_tokenizer the tokenizer's key
    differs: cut plans cached under it stand for no round trip, and are kept apart from a checked tokenizer's."""
    weights, tokenizer_key = weights_sha256(weight_files(folder), cache_dir), tokenizer_fingerprint(folder, cache_dir)
    key = tokenizer_key + ("+unfaithful-allowed" if spec.allow_unfaithful_tokenizer else "")
    if spec.device_map_auto:
        return weights, key, None
    parts = facts.environment(model_files=f"{weights} {tokenizer_key}", dtype=spec.dtype, device=device,
                              kernels=spec.kernels, shared=shared or full, full=full)
    return weights, key, parts


def _keep_facts(cache_dir: Path, parts: dict[str, str] | None, known: facts.Facts, probe: numerics.Probe | None
                ) -> None:
    """Keep facts just measured, once the load holds (nothing to keep where they were read, or are not kept)."""
    if parts is not None and probe is not None:
        facts.write(cache_dir, parts, known)


def _facts(model: Any, cache_dir: Path, parts: dict[str, str] | None, shared: int, full: int
           ) -> tuple[facts.Facts, numerics.Probe | None]:
    """The load's facts (facts.py): kept ones under `parts` put back on the model, or measured (with their probe)."""
    known = facts.read(cache_dir, parts) if parts is not None else None
    if known is not None:
        facts.apply(model, known)
        return known, None
    return facts.measure(model, shared, full)


def _shape_invariance(known: facts.Facts, probe: numerics.Probe | None, shown: str, dtype: str
                      ) -> tuple[Invariance, list[str]]:
    """The invariance the facts hold (a load error where the head's rows still differ, computed a row at a time),
    and the run's notes."""
    if probe is not None and not probe.rows:
        raise ModelLoadError(f"cannot load model {shown!r}: its head rounds a row otherwise among several rows "
                             "than alone, even computed one row at a time; please report this CPU and model")
    return Invariance(rows=True, batch=known.batch), invariance.notes(Invariance(rows=known.rows_first,
                                                                                 batch=known.batch), dtype)


def _quiet(_: str) -> None:
    pass


def _load_weights(shown: str, source: Path | str, dtype: Any, device: str) -> Any:
    from transformers import AutoModelForCausalLM

    # Straight onto the accelerator, without a copy in host memory first; the CPU needs no map.
    device_map = "auto" if device == "auto" else None if device == "cpu" else {"": device}
    try:
        with no_progress_bars():
            model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, device_map=device_map)
    except Exception as error:  # any failure inside transformers is a load failure for the user
        where = source if isinstance(source, Path) else "the Hugging Face hub (or its local cache)"
        cause = (companions.hint(companions.broken())  # a broken torchvision fails every model class alike
                 or (companions.HUB_KERNEL_HINT if companions.from_hub_kernels(error) else ""))
        raise ModelLoadError(
            f"cannot load model {shown!r} from {where}: {one_line(error).rstrip('.')}."
            + (cause or " Check that it is a causal language model that transformers can load.")
        ) from error
    return model.eval()


