"""Writing files that other processes read (xdist workers, concurrent runs, a reviewer's editor), and cache entries
that are checked when read back."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_atomic(path: Path | str, text: str, mode: int = 0o644, durable: bool = False) -> None:
    """Replace `path` with `text` in one step: a reader sees the old file or the new one, never half of either.
    `durable` also flushes it to disk first (for files a person keeps, such as baselines)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=_TMP)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            stream.write(text)
            if durable:
                stream.flush()
                os.fsync(stream.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_TMP = ".tmp"
_RANDOM = 8  # the characters tempfile.mkstemp puts between prefix and suffix


def remove_stale_temporaries(path: Path | str) -> list[Path]:
    """Remove the temporary files write_atomic left beside `path` when its process was killed mid-write (a SIGKILL
    runs no cleanup). Only safe where every writer of `path` holds one lock, held now by the caller: then no other
    process is writing one of them. Returns what was removed."""
    path = Path(path)
    prefix = f".{path.name}."
    removed: list[Path] = []
    try:
        siblings = list(path.parent.iterdir())
    except OSError:
        return removed
    for other in siblings:
        name = other.name
        if name.startswith(prefix) and name.endswith(_TMP) and len(name) == len(prefix) + _RANDOM + len(_TMP):
            try:
                other.unlink()
                removed.append(other)
            except OSError:
                pass
    return removed


def _seal(key: str, payload: Any) -> str:
    return hashlib.sha256(json.dumps([key, payload], sort_keys=True).encode()).hexdigest()


def write_sealed(path: Path | str, key: str, payload: Any) -> None:
    """A cache entry that carries a checksum over its key and its content (see read_sealed)."""
    write_atomic(path, json.dumps({"key": key, "sha256": _seal(key, payload), "payload": payload}))


def read_sealed(path: Path | str, key: str) -> Any:
    """The payload written under `key`, or None when the file is missing, damaged, of another shape, stored under
    another key, or edited since: a cache is only trusted when it can show that it is what was written."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or set(data) != {"key", "sha256", "payload"} or data["key"] != key:
        return None
    return data["payload"] if data["sha256"] == _seal(key, data["payload"]) else None
