"""hashes.py: a file's sha256 is cached by path, size and mtime; sharded weights hash their digests in name order."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from pytest_gotchas.model import hashes as hashes_module
from pytest_gotchas.model.hashes import file_sha256, weights_sha256


def test_sha256_is_cached_by_path_size_and_mtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hashed: list[Path] = []
    real_hash = hashes_module._hash_file
    monkeypatch.setattr(hashes_module, "_hash_file", lambda path: hashed.append(path) or real_hash(path))
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"weights")
    cache = tmp_path / "cache"
    expected = hashlib.sha256(b"weights").hexdigest()

    assert file_sha256(weights, cache) == expected
    assert file_sha256(weights, cache) == expected
    assert hashed == [weights]
    stat = weights.stat()
    assert json.loads((cache / "sha256.json").read_text()) == {
        str(weights): {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": expected}
    }

    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    assert file_sha256(weights, cache) == expected
    assert len(hashed) == 2


def test_sharded_weights_hash_their_digests_in_name_order(tmp_path: Path) -> None:
    a, b = tmp_path / "model-00001-of-00002.safetensors", tmp_path / "model-00002-of-00002.safetensors"
    a.write_bytes(b"first")
    b.write_bytes(b"second")
    digests = hashlib.sha256(b"first").hexdigest() + hashlib.sha256(b"second").hexdigest()
    assert weights_sha256([b, a], tmp_path / "cache") == hashlib.sha256(digests.encode()).hexdigest()
