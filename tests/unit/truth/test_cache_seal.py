"""The transcript cache is a speed-up, never an authority: each entry is sealed with an HMAC whose secret is the
user's (a key file of mode 0600 in the user's cache folder, outside the project), so that whoever can write the cache
folder cannot make a false transcript collect. A forged entry, sealed the old way (a plain hash) or with another
key, is executed again; a key that others could read seals nothing and the cache is given up, saying why."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
from pathlib import Path

import pytest
from helpers.execution import repl, strong

from pytest_gotchas import files
from pytest_gotchas.truth import execute as execute_mod, sandbox
from pytest_gotchas.truth.execute import Cache, CacheLost, Limits, Request, Execution
from pytest_gotchas.truth.interpreters import Interpreter

FAKE = Interpreter(version="3.12.1", path="/opt/python3.12", implementation="CPython")
REQUEST = repl(FAKE, "1 + 1")
TRUE = (Execution(">>> 1 + 1\n2\n", "0", 0, False),)
FORGED = [{"text": ">>> 1 + 1\nX\n", "seed": "0", "returncode": 0, "timed_out": False, "error": None}]


@pytest.fixture
def user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's cache folder, where the seal key lives: apart from the transcript cache (tmp_path / "cache")."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    return tmp_path / "user-cache"


@pytest.fixture
def executed(monkeypatch: pytest.MonkeyPatch) -> list[Request]:
    asked: list[Request] = []

    def fake(request: Request, runs: int, limits: Limits, isolation: sandbox.Isolation) -> tuple[Execution, ...]:
        asked.append(request)
        return TRUE

    monkeypatch.setattr(execute_mod, "execute", fake)
    return asked


def entry(tmp_path: Path) -> Path:
    return tmp_path / "cache" / f"{REQUEST.key(1, Limits(), strong())}.json"


def plain_seal(key: str, payload: object) -> str:
    return hashlib.sha256(json.dumps([key, payload], sort_keys=True).encode()).hexdigest()


def other_key_seal(key: str, payload: object) -> str:
    return hmac.new(b"k" * 32, json.dumps([key, payload], sort_keys=True).encode(), hashlib.sha256).hexdigest()


@pytest.mark.parametrize("field, seal", [("sha256", plain_seal), ("hmac-sha256", plain_seal),
                                         ("hmac-sha256", other_key_seal)])
def test_a_forged_entry_is_executed_again_not_believed(tmp_path, user_cache, executed, field, seal) -> None:
    key = REQUEST.key(1, Limits(), strong())
    entry(tmp_path).parent.mkdir(parents=True)
    entry(tmp_path).write_text(json.dumps({"key": key, field: seal(key, FORGED), "payload": FORGED}))
    cache = Cache(tmp_path / "cache", strong())
    assert cache.get_or_execute(REQUEST, 1, Limits()) == TRUE
    assert (cache.hits, cache.misses, len(executed)) == (0, 1, 1)
    again = Cache(tmp_path / "cache", strong())  # the entry was rewritten, sealed by this user: believed now
    assert again.get_or_execute(REQUEST, 1, Limits()) == TRUE and (again.hits, len(executed)) == (1, 1)


def test_the_key_is_the_users_alone_and_outside_the_cache(tmp_path, user_cache, executed) -> None:
    Cache(tmp_path / "cache", strong()).get_or_execute(REQUEST, 1, Limits())
    key = user_cache / "pytest-gotchas" / "seal.key"
    assert files.seal_key_path() == key
    assert (stat.S_IMODE(key.stat().st_mode), key.stat().st_uid, key.stat().st_size) == (0o600, os.geteuid(), 32)
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [entry(tmp_path).name, entry(tmp_path).name +
                                                                      ".lock"]
    data = json.loads(entry(tmp_path).read_text())
    assert data["hmac-sha256"] == hmac.new(key.read_bytes(), json.dumps([data["key"], data["payload"]],
                                                                        sort_keys=True).encode(),
                                           hashlib.sha256).hexdigest()


def test_a_key_others_can_read_seals_nothing_and_the_cache_is_given_up(tmp_path, user_cache, executed) -> None:
    key = user_cache / "pytest-gotchas" / "seal.key"
    key.parent.mkdir(parents=True)
    key.write_bytes(b"s" * 32)
    key.chmod(0o644)
    cache = Cache(tmp_path / "cache", strong())
    assert cache.get_or_execute(REQUEST, 1, Limits()) == TRUE
    assert cache.take_lost() == CacheLost(str(tmp_path / "cache"), (
        f"the cache's seal key {key} is not this user's alone (mode 0644, 32 bytes; expected 0600 and 32): delete "
        "it, and a new one is made"))
