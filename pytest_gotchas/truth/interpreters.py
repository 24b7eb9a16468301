"""Find python3.X interpreters and verify each by running it.

`shutil.which` finds pyenv shims that exit 127 for versions the shim does not select, so nothing is trusted
until it has printed its own version: in this run, or in an earlier one whose answer is kept (in pytest's cache
folder) under the file's identity (its real path, device, inode, size and modification time), so that a warm run
starts no interpreter (three versions: about 0.25 s of every run). A shim's answer is never kept: what it runs
depends on the environment, not on its file.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..files import write_atomic

_PROBE = "import sys, platform; print('%d.%d.%d' % sys.version_info[:3], platform.python_implementation())"


@dataclass(frozen=True)
class Interpreter:
    version: str  # exact, e.g. "3.13.0"
    path: str  # absolute path that was verified
    implementation: str  # "CPython"

    @property
    def minor(self) -> str:
        return ".".join(self.version.split(".")[:2])


@dataclass(frozen=True)
class Missing:
    wanted: str
    looked: tuple[str, ...]  # every place tried, with why it was rejected

    def reason(self, flag: str = "--gotchas-python", ini: str | None = "gotchas_python") -> str:
        """`flag` and `ini`: how the caller names the option that points to an interpreter."""
        tried = "; ".join(self.looked) or "nowhere"
        return (
            f"no working python{self.wanted} found (tried: {tried}); "
            f"point to one with {flag} {self.wanted}=/path/to/python{self.wanted}"
            + (f" or the ini option {ini}" if ini else "")
        )


def candidates(version: str, path_env: str | None = None) -> list[str]:
    """Where python`version` may live, most specific first."""
    on_path = shutil.which(f"python{version}", path=path_env)
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    pyenv = sorted(glob.glob(os.path.join(pyenv_root, "versions", f"{version}.*", "bin", f"python{version}")), reverse=True)
    found = [on_path] if on_path and "/shims/" not in on_path else []
    found += pyenv + [f"/usr/local/bin/python{version}", f"/usr/bin/python{version}"]
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        found.append(sys.executable)
    # A pyenv shim answers only for the versions pyenv currently selects, and slowly: try it last.
    if on_path and "/shims/" in on_path:
        found.append(on_path)
    seen: list[str] = []
    for path in found:
        if path not in seen:
            seen.append(path)
    return seen


def probe(path: str, timeout: float = 10.0) -> Interpreter | str:
    """Run `path` and read its version; returns an Interpreter, or why it was rejected."""
    if not os.path.exists(path):
        return f"{path}: does not exist"
    try:
        done = subprocess.run(
            [path, "-s", "-c", _PROBE], capture_output=True, text=True, timeout=timeout,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/")},
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{path}: {error.__class__.__name__}"
    if done.returncode != 0:
        return f"{path}: exited {done.returncode}"
    version, _, implementation = done.stdout.strip().partition(" ")
    return Interpreter(version=version, path=str(Path(path).absolute()), implementation=implementation)


@dataclass
class Finder:
    """Resolves "3.12" to a verified interpreter, once per process."""

    overrides: dict[str, str] = field(default_factory=dict)
    known: Path | None = None  # the interpreters earlier runs verified (a JSON file); None: none kept
    _found: dict[str, Interpreter | Missing] = field(default_factory=dict)
    _verified: dict[str, dict[str, str]] | None = None

    def _probe(self, path: str) -> Interpreter | str:
        """probe(path), or what an earlier run's probe of the same file answered."""
        identity = _identity(path)
        verified = self._read()
        entry = verified.get(path)
        if identity is not None and entry is not None and entry.get("identity") == identity:
            return Interpreter(version=entry["version"], path=str(Path(path).absolute()),
                               implementation=entry["implementation"])
        result = probe(path)
        if isinstance(result, Interpreter) and identity is not None and "/shims/" not in path and self.known:
            verified[path] = {"identity": identity, "version": result.version, "implementation": result.implementation}
            try:
                write_atomic(self.known, json.dumps(verified, indent=1, sort_keys=True))
            except OSError:
                pass  # only costs probing again
        return result

    def _read(self) -> dict[str, dict[str, str]]:
        if self._verified is None:
            self._verified = {}
            try:
                data = json.loads(self.known.read_text()) if self.known is not None else {}
            except (OSError, ValueError):
                data = {}
            if isinstance(data, dict):
                self._verified = {path: entry for path, entry in data.items() if isinstance(entry, dict) and all(
                    isinstance(entry.get(key), str) for key in ("identity", "version", "implementation"))}
        return self._verified

    def find(self, version: str) -> Interpreter | Missing:
        if version not in self._found:
            self._found[version] = self._search(version)
        return self._found[version]

    def _search(self, version: str) -> Interpreter | Missing:
        paths = [self.overrides[version]] if version in self.overrides else candidates(version)
        looked = [] if version in self.overrides else _empty_searches(version)
        for path in paths:
            result = self._probe(path)
            if isinstance(result, Interpreter):
                if result.minor == version:
                    return result
                result = f"{path}: is Python {result.version}"
            looked.append(result)
        return Missing(wanted=version, looked=tuple(looked))


def _identity(path: str) -> str | None:
    """The file `path` runs, as a kept answer is keyed: None where it cannot be read (probe says why)."""
    try:
        real = os.path.realpath(path)
        stat = os.stat(real)
    except OSError:
        return None
    return f"{real} {stat.st_dev} {stat.st_ino} {stat.st_size} {stat.st_mtime_ns}"


def _empty_searches(version: str) -> list[str]:
    """The searches behind `candidates` that found nothing, so that a Missing says where it looked."""
    empty = []
    if not shutil.which(f"python{version}"):
        empty.append(f"PATH: no python{version}")
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    pattern = os.path.join(pyenv_root, "versions", f"{version}.*", "bin", f"python{version}")
    if not glob.glob(pattern):
        empty.append(f"{pattern}: none")
    return empty
