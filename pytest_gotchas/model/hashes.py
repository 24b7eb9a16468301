"""Fingerprints of what a model run depends on: its weight files, and its tokenizer's files and library versions.

sha256 of large files is remembered in the cache folder by (absolute path, size, mtime_ns), so that a warm run does
not hash half a gigabyte again.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ..files import write_atomic

SHA256_CACHE = "sha256.json"


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


def hub_snapshot(hub_id: str) -> Path:
    """The local folder transformers downloaded a hub model into."""
    from transformers.utils import cached_file

    found = cached_file(hub_id, "config.json")
    if found is None:
        raise FileNotFoundError(f"{hub_id}: no config.json in the local hub cache")
    return Path(found).parent


def weights_sha256(files: list[Path], cache_dir: Path) -> str:
    digests = [file_sha256(path, cache_dir) for path in sorted(files, key=lambda p: p.name)]
    if len(digests) == 1:
        return digests[0]
    return hashlib.sha256("".join(digests).encode()).hexdigest()


def file_sha256(path: Path, cache_dir: Path) -> str:
    """sha256 of a file, remembered in cache_dir/sha256.json by (absolute path, size, mtime_ns). A remembered one is
    read without the lock; a cache that cannot be written (read-only) only costs hashing the file again next time."""
    from filelock import FileLock

    key = str(Path(path).absolute())
    stat = os.stat(key)
    cache_file = Path(cache_dir) / SHA256_CACHE
    entry = _read_json(cache_file).get(key)
    if isinstance(entry, dict) and entry.get("size") == stat.st_size and entry.get("mtime_ns") == stat.st_mtime_ns \
            and isinstance(entry.get("sha256"), str):
        return entry["sha256"]
    digest = _hash_file(Path(key))
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(cache_file) + ".lock"):
            cache = _read_json(cache_file)
            cache[key] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest}
            _write_json_atomic(cache_file, cache)
    except OSError:
        pass  # remembered next time the cache can be written
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
