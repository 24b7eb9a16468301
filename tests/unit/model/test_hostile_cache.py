"""A model cache that cannot be written (read-only, shared, on a full disk): a model it already holds converted loads
with no lock taken and nothing written; what would need a write (remembering a file's sha256) is skipped; a
conversion it would need is one error naming the folder. The read-only case runs for real under bubblewrap, whose
read-only bind refuses writes even to root."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import filelock
import pytest
from tinymodel import build_tiny_model

from pytest_gotchas.model import convert, hashes
from pytest_gotchas.model.convert import ConversionError, convert_gguf

BWRAP = shutil.which("bwrap")


@pytest.fixture
def no_locks(monkeypatch) -> None:
    """Any lock taken fails the test."""

    class Refused:
        def __init__(self, path: str, *args: object, **kwargs: object) -> None:
            raise AssertionError(f"a lock was taken: {path}")

    monkeypatch.setattr(filelock, "FileLock", Refused)


def test_a_converted_model_is_used_without_the_lock(tmp_path, no_locks) -> None:
    out = tmp_path / "models" / "m-0123456789ab"
    out.mkdir(parents=True)

    def never(scratch: Path) -> Path:
        raise AssertionError("converted again")

    assert convert_gguf(never, out, "m", print) == out


def test_a_conversion_into_a_cache_that_cannot_be_written_is_one_error(tmp_path) -> None:
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "models" / "m-0123456789ab"
    with pytest.raises(ConversionError) as error:
        convert_gguf(lambda scratch: scratch / "m.gguf", out, "m", print)
    assert str(error.value) == (f"cannot convert model 'm': the model cache {out.parent} cannot be written (Not a "
                                "directory); point --gotchas-cache-dir at a folder that can be")


def test_a_remembered_sha256_is_read_without_the_lock(tmp_path, no_locks) -> None:
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"weights")
    stat = weights.stat()
    (tmp_path / hashes.SHA256_CACHE).write_text(json.dumps({str(weights): {
        "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": "remembered"}}))
    assert hashes.file_sha256(weights, tmp_path) == "remembered"


def test_a_sha256_that_cannot_be_remembered_is_still_computed(tmp_path) -> None:
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"weights")
    (tmp_path / "file").write_text("")
    assert hashes.file_sha256(weights, tmp_path / "file" / "cache") == hashlib.sha256(b"weights").hexdigest()


LOAD = """
import json, sys
from pathlib import Path
from pytest_gotchas.model.load import ModelSpec, load_model
for cache in sys.argv[2:]:
    loaded = load_model(ModelSpec(name=sys.argv[1], device="cpu"), Path(cache), lazy_tokenizer=True)
    print(json.dumps([cache, loaded.info.weights_sha256, loaded.tokenizer_key[:12]]))
"""


def listing(folder: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(folder)), p.stat().st_mtime_ns) for p in folder.rglob("*"))


@pytest.mark.skipif(BWRAP is None, reason="bubblewrap is needed to make a folder read-only for root")
def test_a_read_only_cache_with_the_model_converted_loads_it(tmp_path) -> None:
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"a GGUF file, converted before")
    full, bare = tmp_path / "full", tmp_path / "bare"
    for cache in (full, bare):
        build_tiny_model(cache / "models" / f"tiny-{hashlib.sha256(gguf.read_bytes()).hexdigest()[:12]}",
                         {"[": {"1": 2.0}})
    env = {"PYTHONPATH": str(Path(convert.__file__).parents[2]), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    warm = subprocess.run([sys.executable, "-c", LOAD, str(gguf), str(full)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert warm.returncode == 0, warm.stderr
    assert (full / hashes.SHA256_CACHE).is_file() and not (bare / hashes.SHA256_CACHE).exists()
    before = {cache: listing(cache) for cache in (full, bare)}
    read_only = [BWRAP, "--dev-bind", "/", "/", "--ro-bind", str(full), str(full), "--ro-bind", str(bare), str(bare)]
    cold = subprocess.run([*read_only, sys.executable, "-c", LOAD, str(gguf), str(full), str(bare)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert cold.returncode == 0, cold.stderr
    answers = [json.loads(line) for line in cold.stdout.splitlines()]
    assert [a[1:] for a in answers] == [json.loads(warm.stdout)[1:]] * 2  # the same fingerprints from both caches
    assert {cache: listing(cache) for cache in (full, bare)} == before  # no lock file, no sha256.json written
