"""Load the model and its tokenizer: the only module that knows transformers' loading.

The plugin imports this module on every run, so torch and transformers are imported inside the functions that need
them, never at the top. GGUF files are converted first (convert.py); embedded models are found by short name
(embedded.py).
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..results.schema import ModelInfo
from ..results.vocabulary import TextPath
from . import DTYPES, companions, facts, float32_matmul, invariance, kernels, numerics, paths
from .convert import (ConversionError, Log, allowed_unfaithful, convert_gguf, converted_folder, no_progress_bars,
                      one_line, round_trip, unfaithful_folder)
from .embedded import MODELS, EmbeddedMissing
from .ref import DEFAULT, ModelRef
from .hashes import file_sha256, hub_snapshot, tokenizer_fingerprint, weight_files, weights_sha256
from .invariance import INVARIANT, Invariance


@dataclass(frozen=True)
class ModelSpec:
    name: str | None  # an embedded model's short name, a hub id, a local folder or a .gguf file; None = the default
    id: str = ""  # the short name the run knows it by (ModelInfo.id); "": ModelRef(name=name).short
    dtype: str = "bfloat16"  # "bfloat16" | "float16" | "float32"
    device: str | None = None  # None = "cuda" if available else "cpu"; or "cpu", "cuda", "cuda:1"
    device_map_auto: bool = False  # device_map="auto", for models too large for one GPU
    worker_id: str | None = None  # the pytest-xdist worker ("gw1") loading it: a plain "cuda" becomes its own GPU
    workers: int = 0  # how many xdist workers share this machine's cores
    flag: str = "--gotchas-"  # how the options that messages name are spelled (`gotchas new` drops "gotchas-")
    kernels: str = "plain"  # the kernel path of a bfloat16 model's matmuls (kernels.py)
    allow_unfaithful_tokenizer: bool = False  # score a tokenizer that fails the converter's round trip, with a note


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


class Prefetched:
    """A load running in a thread of its own; `result` waits for it and returns its value or raises its error.
    A thread suffices: gemma's tokenizer parses in C and Rust for much of its 3-4 s, and the weights' load and
    probes mostly run in torch, which releases the GIL."""

    def __init__(self, load: Callable[[], Any]) -> None:
        self._value: Any = None
        self._error: BaseException | None = None

        def run() -> None:
            try:
                self._value = load()
            except BaseException as error:  # re-raised where the value is asked for, as a lazy load would raise it
                self._error = error

        self._thread = threading.Thread(target=run, name="gotchas-tokenizer", daemon=True)
        self._thread.start()

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


class ModelLoadError(Exception):
    """One user-facing message: what was asked, where it looked, what failed, what to do."""


def shown_name(name: str | None) -> str:
    """How reports name a model: what the user named, or an embedded model's label."""
    embedded = MODELS.get(name or DEFAULT)
    return embedded.label if embedded is not None and (name is None or not _looks_like_path(name)) else str(name)


def _placed(model: Any) -> str:
    """Where `--gotchas-device auto` put the model: "auto:" and its devices. With one device (or none but the CPU)
    transformers sets no hf_device_map: the model's device is the map."""
    mapped = (getattr(model, "hf_device_map", None) or {}).values()  # accelerate names a GPU by its index
    placed = {f"cuda:{d}" if isinstance(d, int) else str(d) for d in mapped} or {str(model.device)}
    return "auto:" + ",".join(sorted(placed))


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
    torch, transformers = _import_libraries(shown)
    if spec.dtype not in DTYPES:
        raise ModelLoadError(f"cannot load model {shown!r}: dtype {spec.dtype!r} is not one of {', '.join(DTYPES)}")
    device = "auto" if spec.device_map_auto else resolve_device(spec.device, spec.worker_id)
    _check_device(device, shown, spec)
    full_threads = torch.get_num_threads()
    shared = share_cpu_threads(device, spec.workers)
    source = resolve_source(spec.name, Path(cache_dir), log or _quiet, spec.flag)
    notes: list[str] = []  # the load's, and the tokenizer's when it loads (lazily: on first use)
    tokenizer_loader = _tokenizer_loader(shown, source, Path(cache_dir), prefetch if lazy_tokenizer else None,
                                         lambda tokenizer: notes.extend(check_tokenizer(tokenizer, shown, spec)))
    model = _load_weights(shown, source, getattr(torch, spec.dtype), device)
    float32_matmul.apply(model, spec.kernels)
    folder = source if isinstance(source, Path) else hub_snapshot(source)
    weights, tokenizer_key, parts = _identity(spec, device, folder, Path(cache_dir), shared, full_threads)
    try:
        known, probe = _facts(model, Path(cache_dir), parts, shared or full_threads, full_threads)
    except Exception as error:  # the first forward pass: a model that loads but cannot run fails here, once
        raise ModelLoadError(f"cannot load model {shown!r}: it loaded but a forward pass on probe token ids failed "
                             f"({one_line(error)})") from None
    found, found_notes = _shape_invariance(known, probe, shown, spec.dtype)
    _keep_facts(Path(cache_dir), parts, known, probe)
    started = time.perf_counter()
    tokenizer = None if lazy_tokenizer else tokenizer_loader()  # eager: a bad tokenizer is a load error now
    tokenizer_seconds = time.perf_counter() - started
    if spec.device_map_auto:
        device = _placed(model)
    info = ModelInfo(id=spec.id or ModelRef(name=spec.name).short, name=shown, source=str(folder),
                     weights_sha256=weights, dtype=spec.dtype, device=device, torch_version=str(torch.__version__),
                     transformers_version=str(transformers.__version__), hardware=numerics.hardware(device),
                     numerics=numerics.named(known.fingerprint, spec.kernels), threads=known.threads,
                     allow_unfaithful_tokenizer=spec.allow_unfaithful_tokenizer,
                     text_path=TextPath.TREE if paths.takes_tree(model) else TextPath.STEPS,
                     attention=paths.attention(model))
    if lazy_tokenizer:
        loaded = LoadedModel(model, info=info, load_tokenizer=tokenizer_loader, tokenizer_key=tokenizer_key)
    else:
        loaded = LoadedModel(model, tokenizer, info)
        loaded.tokenizer_seconds = tokenizer_seconds
    loaded.invariance = found
    loaded.notes = notes
    notes.extend(found_notes)
    if known.kept:
        loaded.notes.append(f"on this CPU the number of threads changes {spec.dtype} logits ({shared} threads and "
                            f"{full_threads} give other bits): each xdist worker keeps {full_threads} threads, as a "
                            "serial run does, so that -n gives the same numbers (set OMP_NUM_THREADS to choose)")
    return loaded


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


def _tokenizer_loader(shown: str, source: Path | str, cache_dir: Path, prefetch: Callable[[str], bool] | None,
                      check: Callable[[Any], None]) -> Callable[[], Any]:
    """What loads and checks the tokenizer: already running in a thread when `prefetch` says the run will need it.
    A hub id's folder is known only once its weights are downloaded, so its tokenizer is never prefetched."""
    def load() -> Any:
        tokenizer = load_tokenizer(shown, source)
        check(tokenizer)
        return tokenizer

    if prefetch is not None and isinstance(source, Path) and prefetch(tokenizer_fingerprint(source, cache_dir)):
        return Prefetched(load).result
    return load


def resolve_device(requested: str | None, worker_id: str | None) -> str:
    """The device to load on; pytest-xdist workers spread a plain "cuda" over the GPUs.

    Never raises: load_model says what is wrong with a device that cannot be used.
    """
    import torch

    device = requested or ("cuda" if torch.cuda.is_available() else "cpu")
    match = re.fullmatch(r"gw(\d+)", worker_id or "")
    if device == "cuda" and match and torch.cuda.is_available():
        count = torch.cuda.device_count()
        if count > 1:
            return f"cuda:{int(match[1]) % count}"
    return device


def share_cpu_threads(device: str, workers: int) -> int | None:
    """Under pytest-xdist on the CPU, give each worker its share of the cores, not all of them: N workers with all
    cores each made `-n 2` on 2 cores 1.6x slower than a serial run (OpenMP threads competing), and on that machine
    the probabilities were the same bits with 1 thread as with 2 (python -m bench.run compares -n 2 with serial every run).
    OMP_NUM_THREADS, when set, is left to decide. Returns the threads set, or None when nothing was changed."""
    import torch

    if device != "cpu" or workers < 2 or os.environ.get("OMP_NUM_THREADS"):
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads = max(1, cores // workers)
    if threads >= torch.get_num_threads():
        return None
    torch.set_num_threads(threads)
    return threads


def _check_device(device: str, shown: str, spec: ModelSpec) -> None:
    """The device exists, and the kernel path the spec asks for can run there."""
    import torch

    flag = spec.flag
    refused = kernels.refusal(spec.kernels, spec.dtype, flag) or kernels.device_refusal(spec.kernels, device, shown,
                                                                                        flag)
    if refused:
        raise ModelLoadError(refused)

    if not device.startswith("cuda"):
        return
    if not torch.cuda.is_available():
        raise ModelLoadError(
            f"cannot load model {shown!r} on {device!r}: torch {torch.__version__} sees no CUDA device. "
            f"Use {flag}device cpu, or install a CUDA build of torch."
        )
    index = re.fullmatch(r"cuda:(\d+)", device)
    count = torch.cuda.device_count()
    if index and int(index[1]) >= count:
        raise ModelLoadError(f"cannot load model {shown!r} on {device!r}: torch sees {count} CUDA device(s)")


def _quiet(_: str) -> None:
    pass


def _looks_like_path(name: str) -> bool:
    # A hub id is "org/model" or "model"; anything else with separators is a path.
    return (
        name.startswith((".", "~", os.sep))
        or os.path.isabs(name)
        or name.count("/") > 1
        or (os.altsep is not None and os.altsep in name)
        or "\\" in name
    )


# The files a transformers tokenizer loads from (any one is enough): without one, AutoTokenizer may still build
# one from config.json whose vocabulary has none of the model's tokens, and every cut reads as unrepresentable.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "vocab.txt", "spiece.model",
                   "sentencepiece.bpe.model")


def resolve_source(name: str | None, cache_dir: Path, log: Log, flag: str) -> Path | str:
    """A local folder to load from, or a hub id (which transformers resolves)."""
    embedded = MODELS.get(name or DEFAULT)
    if embedded is not None and (name is None or not _looks_like_path(name)):
        try:
            return embedded.folder(cache_dir, log)
        except EmbeddedMissing as error:
            raise ModelLoadError(f"{error}, or name another model with {flag}model.") from error
        except ConversionError as error:
            raise ModelLoadError(str(error)) from error
    assert name is not None
    path = Path(name).expanduser()
    if name.endswith(".gguf"):
        if not path.is_file():
            raise ModelLoadError(_missing(name, path, flag))
        digest = file_sha256(path, cache_dir)
        out = converted_folder(cache_dir, path.stem, digest)
        try:
            return convert_gguf(lambda folder: path.absolute(), out, name, log)
        except ConversionError as error:
            raise ModelLoadError(str(error)) from error
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelLoadError(
                f"cannot load model {name!r}: {path.absolute()} has no config.json, so it is not a transformers "
                f"model folder. Point {flag}model at a folder written by save_pretrained, a .gguf file or a hub id."
            )
        if not any((path / file).is_file() for file in TOKENIZER_FILES):
            raise ModelLoadError(
                f"cannot load model {name!r}: {path.absolute()} has no tokenizer (none of "
                f"{', '.join(TOKENIZER_FILES)}); model.save_pretrained() writes only the weights and config. Save the "
                "tokenizer into the same folder too (tokenizer.save_pretrained(folder)): see docs/models.md."
            )
        return path.absolute()
    if path.exists():
        raise ModelLoadError(
            f"cannot load model {name!r}: {path.absolute()} is a file, not a model folder. "
            f"Point {flag}model at a folder written by save_pretrained, a .gguf file or a hub id."
        )
    if _looks_like_path(name):
        raise ModelLoadError(_missing(name, path, flag))
    return name


def _missing(name: str, path: Path, flag: str) -> str:
    return (
        f"cannot load model {name!r}: {path.absolute()} does not exist. "
        f"Point {flag}model at a model folder, a .gguf file or a hub id (hub ids need network access)."
    )


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


def load_tokenizer(shown: str, source: Path | str) -> Any:
    """The transformers tokenizer of a model folder or hub id, whichever backend reads the model; raises
    ModelLoadError."""
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(source)
    except Exception as error:
        raise ModelLoadError(
            f"cannot load the tokenizer of model {shown!r} from {source}: {one_line(error)}"
        ) from error


def check_tokenizer(tokenizer: Any, shown: str, spec: ModelSpec) -> list[str]:
    """Offsets need a fast tokenizer. Special tokens (BOS) follow the tokenizer's own convention, see cut.py. Any
    folder's tokenizer takes the round trip a converted model's must pass (convert.py): a tokenizer that misreads
    the vocabulary would cut every prompt into other tokens than the model's own, and its cases would be scored
    all the same. Refused, or, as the spec allows, a note to say once."""
    if not getattr(tokenizer, "is_fast", False):
        raise ModelLoadError(
            f"cannot use model {shown!r}: its tokenizer ({type(tokenizer).__name__}) is not a fast tokenizer, "
            "and character offsets are needed to check the cut. Save the model with a tokenizer.json."
        )
    checked = round_trip(tokenizer)
    if checked.faithful:
        return []
    if not spec.allow_unfaithful_tokenizer:
        raise ModelLoadError(unfaithful_folder(shown, checked, spec.flag))
    return [allowed_unfaithful(shown, checked, spec.flag)]
