"""The transcript cache is a speed-up, never an authority: each entry is sealed with an HMAC whose secret is the
user's (a key file of mode 0600 in the user's cache folder, outside the project), so that whoever can write the cache
folder cannot make a false transcript collect. A forged entry, sealed the old way (a plain hash) or with another
key, is executed again; a key that others could read seals nothing and the cache is given up, saying why."""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
import pwd
import stat
from pathlib import Path

import pytest
from helpers.execution import repl, strong
from helpers.fifo import fifo, within

from pytest_gotchas import files
from pytest_gotchas.settings.options import Settings
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


# -- every key that cannot be had: which file, why, what to do; the cache given up, never a hang ----------------------


def lost_with(tmp_path: Path, key: Path) -> str:
    """The reason the cache was given up for, when the key at `key` is what the test made of it: the snippet still
    runs, under a deadline (a key that is a FIFO blocked collection for ever)."""
    cache = within(lambda: Cache(tmp_path / "cache", strong()), key)
    assert within(lambda: cache.get_or_execute(REQUEST, 1, Limits()), key) == TRUE
    lost = cache.take_lost()
    assert lost is not None and lost.directory == str(tmp_path / "cache")
    return lost.reason


def test_a_key_that_is_a_fifo_is_refused_without_blocking(tmp_path, user_cache, executed) -> None:
    key = fifo(user_cache / "pytest-gotchas" / "seal.key")
    assert lost_with(tmp_path, key) == (f"the cache's seal key {key} is a named pipe (FIFO), not a regular file: "
                                        "delete it, and a new one is made")


def test_a_key_that_is_a_dangling_link_names_the_link_and_where_it_leads(tmp_path, user_cache, executed) -> None:
    key = user_cache / "pytest-gotchas" / "seal.key"
    key.parent.mkdir(parents=True)
    key.symlink_to(tmp_path / "gone" / "seal.key")
    assert lost_with(tmp_path, key) == (f"the cache's seal key {key} is a link to {tmp_path / 'gone' / 'seal.key'}, "
                                        "which does not exist: delete the link, and a new key is made")


def test_a_key_that_is_a_folder_says_so(tmp_path, user_cache, executed) -> None:
    key = user_cache / "pytest-gotchas" / "seal.key"
    key.mkdir(parents=True)
    assert lost_with(tmp_path, key) == (f"the cache's seal key {key} is a folder, not a regular file: delete it, "
                                        "and a new one is made")


def test_a_key_that_cannot_be_made_names_the_key_the_folder_and_what_to_do(tmp_path, user_cache, executed,
                                                                            monkeypatch) -> None:
    """A read-only home (as root no mode makes a folder read-only, so the file system's refusal is made here)."""
    folder = user_cache / "pytest-gotchas"

    def read_only(name: str, *args: object, **kwargs: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system", str(name))

    monkeypatch.setattr(files.os, "makedirs", read_only)
    assert lost_with(tmp_path, folder / "seal.key") == (
        f"the cache's seal key {folder / 'seal.key'} cannot be made (Read-only file system: {folder}): make {folder} "
        "writable for this user, or set XDG_CACHE_HOME to a folder it can write")


def test_the_key_is_made_before_any_snippet_runs(tmp_path, user_cache) -> None:
    """So that its folder exists when the first snippet's sandbox is planned, and is hidden from every snippet."""
    Cache(tmp_path / "cache", strong())
    assert (user_cache / "pytest-gotchas" / "seal.key").stat().st_size == files.SEAL_KEY_BYTES


@pytest.mark.parametrize("xdg", ["", "relative/cache"])
def test_an_empty_home_and_cache_variable_count_as_unset(monkeypatch, xdg: str) -> None:
    """HOME="" made `~` the root folder: the key was to be /.cache/pytest-gotchas/seal.key."""
    monkeypatch.setenv("HOME", "")
    monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    home = pwd.getpwuid(os.geteuid()).pw_dir
    assert files.seal_key_path() == Path(home, ".cache", "pytest-gotchas", "seal.key")
    assert Settings().model_cache == Path(home, ".cache", "pytest-gotchas")


def test_with_no_home_at_all_the_cache_is_given_up_saying_what_to_set(tmp_path, monkeypatch, executed) -> None:
    monkeypatch.setenv("HOME", "")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)

    def nobody(uid: int) -> None:
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.setattr(pwd, "getpwuid", nobody)
    cache = Cache(tmp_path / "cache", strong())
    assert cache.get_or_execute(REQUEST, 1, Limits()) == TRUE
    assert cache.take_lost() == CacheLost(str(tmp_path / "cache"), (
        f"the cache's seal key has no folder to be in: HOME is empty and user id {os.geteuid()} has no home folder "
        "in the password database: set HOME, or XDG_CACHE_HOME, to a folder this user can write"))


def test_a_cache_entry_that_is_a_fifo_is_executed_again_without_blocking(tmp_path, user_cache, executed) -> None:
    fifo(entry(tmp_path))
    cache = Cache(tmp_path / "cache", strong())
    assert within(lambda: cache.get_or_execute(REQUEST, 1, Limits()), entry(tmp_path)) == TRUE
    assert (cache.misses, len(executed)) == (1, 1)
