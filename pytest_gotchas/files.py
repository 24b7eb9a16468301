"""Writing files that other processes read (xdist workers, concurrent runs, a reviewer's editor), and cache entries
that are checked when read back: sealed with an HMAC whose secret is the user's, kept outside the project."""

from __future__ import annotations

import errno
import functools
import hashlib
import hmac
import json
import os
import secrets
import stat
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


SEAL_KEY_BYTES = 32


def seal_key_path() -> Path:
    """The per-user secret that seals cache entries: in the user's cache folder ($XDG_CACHE_HOME, else ~/.cache),
    outside every project, and hidden from snippets under strong isolation (docs/isolation.md)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "pytest-gotchas", "seal.key")


@functools.lru_cache(maxsize=4)
def _seal_key_at(path: str) -> bytes:
    """The key at `path`, made on first use (mode 0600, linked into place whole: two processes that make it at once
    agree on one). Raises OSError when it cannot be made, or when it is not this user's alone: a key that another
    user can read or write seals nothing."""
    if not os.path.exists(path):
        folder = os.path.dirname(path)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".seal.key.")  # mkstemp makes it 0600
        try:
            with os.fdopen(fd, "wb") as stream:
                stream.write(secrets.token_bytes(SEAL_KEY_BYTES))
                stream.flush()
                os.fsync(stream.fileno())
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass  # another process made it first: its key is the key
        finally:
            os.unlink(tmp)
    with open(path, "rb") as stream:
        status = os.fstat(stream.fileno())
        data = stream.read(SEAL_KEY_BYTES + 1)
    if status.st_uid != os.geteuid() or status.st_mode & 0o077 or len(data) != SEAL_KEY_BYTES:
        raise PermissionError(errno.EPERM, f"the cache's seal key {path} is not this user's alone (mode "
                                           f"{stat.S_IMODE(status.st_mode):04o}, {len(data)} bytes; expected 0600 "
                                           f"and {SEAL_KEY_BYTES}): delete it, and a new one is made")
    return data


def _seal(key: str, payload: Any) -> str:
    secret = _seal_key_at(str(seal_key_path()))
    return hmac.new(secret, json.dumps([key, payload], sort_keys=True).encode(), hashlib.sha256).hexdigest()


def write_sealed(path: Path | str, key: str, payload: Any) -> None:
    """A cache entry that carries an HMAC over its key and its content, with the per-user secret (see read_sealed);
    OSError when the secret cannot be had."""
    write_atomic(path, json.dumps({"key": key, "hmac-sha256": _seal(key, payload), "payload": payload}))


def read_sealed(path: Path | str, key: str) -> Any:
    """The payload written under `key`, or None when the file is missing, damaged, of another shape, stored under
    another key, edited since, or sealed by anyone without this user's secret (a forged entry, whoever could write
    the cache folder): a cache is a speed-up, never an authority, and is only trusted when it can show that this
    user wrote it."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or set(data) != {"key", "hmac-sha256", "payload"} or data["key"] != key:
        return None
    try:
        expected = _seal(key, data["payload"])
    except OSError:
        return None
    return data["payload"] if isinstance(data["hmac-sha256"], str) and hmac.compare_digest(
        data["hmac-sha256"], expected) else None
