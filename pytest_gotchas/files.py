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


# What a path is when it is not a regular file, as messages name it (stat's file types).
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class NotARegularFile(OSError):
    """A path to read that is a folder, a FIFO, a device or a socket: reading one blocks for ever (a FIFO with no
    writer), never ends (/dev/zero) or is no file's content. `strerror` says which kind."""


class TooLarge(OSError):
    """A file to read that holds more than its reader's bound: `size` bytes (as far as known) against `most`."""

    def __init__(self, path: str, size: int, most: int) -> None:
        super().__init__(errno.EFBIG, f"{size} bytes is more than {most}", path)
        self.size, self.most = size, most


def _kind(mode: int) -> str:
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def open_regular(path: Path | str) -> int:
    """A read-only descriptor of the regular file at `path` (links followed), or NotARegularFile: opened without
    blocking, so that a FIFO with no writer is refused instead of waited on."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotARegularFile(errno.EINVAL, f"it is {_kind(mode)}, not a regular file", str(path))
    return fd


def read_regular(path: Path | str, most: int | None = None) -> bytes:
    """The content of the regular file at `path` (links followed), or NotARegularFile, or TooLarge past `most`
    bytes. Opened without blocking, so that a FIFO is refused instead of waited on; a file larger than `most` is
    refused by its size before any read, and one whose size is not known (/proc) after `most` + 1 bytes, never
    read whole."""
    fd = open_regular(path)
    try:
        status = os.fstat(fd)
        if most is not None and status.st_size > most:
            raise TooLarge(str(path), status.st_size, most)
        chunks: list[bytes] = []
        left = -1 if most is None else most + 1
        while left:
            chunk = os.read(fd, 1 << 20 if left < 0 else min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left = left - len(chunk) if left > 0 else left
        data = b"".join(chunks)
        if most is not None and len(data) > most:
            raise TooLarge(str(path), len(data), most)
        return data
    finally:
        os.close(fd)


SEAL_KEY_BYTES = 32


def user_home() -> str:
    """The home folder of the user: HOME, unless it is empty or relative (then `~` would be `/`, or the working
    directory), else the password database's. OSError when neither names one."""
    home = os.environ.get("HOME", "")
    if os.path.isabs(home):
        return home
    try:
        import pwd  # not on Windows; a user without an entry (a container's arbitrary uid) raises KeyError

        found = pwd.getpwuid(os.geteuid()).pw_dir
    except (ImportError, KeyError):
        found = ""
    if not os.path.isabs(found):
        raise OSError(errno.ENOENT, f"HOME is {'empty' if not home else f'relative ({home!r})'} and user id "
                                    f"{os.geteuid()} has no home folder in the password database: set HOME, or "
                                    "XDG_CACHE_HOME, to a folder this user can write")
    return found


def user_cache_home() -> Path:
    """The user's cache folder: $XDG_CACHE_HOME, else ~/.cache. An empty or relative XDG_CACHE_HOME is ignored, as
    the XDG base directory specification says."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    return Path(base) if os.path.isabs(base) else Path(user_home(), ".cache")


def seal_key_path() -> Path:
    """The per-user secret that seals cache entries: in the user's cache folder (user_cache_home), outside every
    project, and hidden from snippets under strong isolation, wherever it is (docs/isolation.md). OSError when the
    user has no cache folder to put it in."""
    return user_cache_home() / "pytest-gotchas" / "seal.key"


def seal_key() -> bytes:
    """The user's seal key, made on first use; OSError (its words say which file, why and what to do) when it
    cannot be had."""
    try:
        path = seal_key_path()
    except OSError as error:
        raise OSError(error.errno, f"the cache's seal key has no folder to be in: {error.strerror}") from None
    return _seal_key_at(str(path))


@functools.lru_cache(maxsize=4)
def _seal_key_at(path: str) -> bytes:
    """The key at `path`, made on first use (mode 0600, linked into place whole: two processes that make it at once
    agree on one). Raises OSError, saying which file, why and what to do, when it cannot be made or read (a
    dangling link, a folder, a FIFO, a read-only home), or when it is not this user's alone: a key that another
    user can read or write seals nothing."""
    folder = os.path.dirname(path)
    if not os.path.lexists(path):
        try:
            _make_key(path, folder)
        except OSError as error:
            raise OSError(errno.EACCES, f"the cache's seal key {path} cannot be made ({error.strerror or error}: "
                                        f"{error.filename or folder}): make {folder} writable for this user, or set "
                                        "XDG_CACHE_HOME to a folder it can write") from None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as error:
        if isinstance(error, FileNotFoundError) and os.path.islink(path):
            raise OSError(errno.ENOENT, f"the cache's seal key {path} is a link to {os.readlink(path)}, which does "
                                        "not exist: delete the link, and a new key is made") from None
        raise OSError(error.errno, f"the cache's seal key {path} cannot be read ({error.strerror or error}): delete "
                                   "it, and a new one is made") from None
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):  # a FIFO opened without blocking; reading it would wait for ever
            raise OSError(errno.EINVAL, f"the cache's seal key {path} is {_kind(status.st_mode)}, not a regular "
                                        "file: delete it, and a new one is made")
        data = os.read(fd, SEAL_KEY_BYTES + 1)
    finally:
        os.close(fd)
    if status.st_uid != os.geteuid() or status.st_mode & 0o077 or len(data) != SEAL_KEY_BYTES:
        raise PermissionError(errno.EPERM, f"the cache's seal key {path} is not this user's alone (mode "
                                           f"{stat.S_IMODE(status.st_mode):04o}, {len(data)} bytes; expected 0600 "
                                           f"and {SEAL_KEY_BYTES}): delete it, and a new one is made")
    return data


def _make_key(path: str, folder: str) -> None:
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
            pass  # another process made it first (or left a link): its key is the key, read and checked next
    finally:
        os.unlink(tmp)


def _seal(key: str, payload: Any) -> str:
    secret = seal_key()
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
    try:  # a FIFO put in the cache folder is refused, not waited on
        data = json.loads(read_regular(path).decode("utf-8"))
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
