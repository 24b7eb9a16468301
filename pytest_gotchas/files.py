"""Writing files that other processes read: xdist workers, concurrent runs, a reviewer's editor."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path | str, text: str, mode: int = 0o644, durable: bool = False) -> None:
    """Replace `path` with `text` in one step: a reader sees the old file or the new one, never half of either.
    `durable` also flushes it to disk first (for files a person keeps, such as baselines)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
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
