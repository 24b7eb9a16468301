"""A model as a run names it, parsed once where the name comes in (`--gotchas-model`, the tools' `--model`) and
carried through as a `ModelRef`: which backend reads it, the model's own name, and the short id that items, reports
and baseline files use. Pure: it looks at the name, loads nothing."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

DEFAULT = "gemma-3-270m"  # the embedded model a run without a model name reads
DEFAULT_WORD = "default"  # a name that asks for the embedded default model, where a name must be given
TRANSFORMERS = "transformers"  # the backend of a model name without a prefix
PREFIX = re.compile(r"([a-z][a-z0-9_]+):(.*)", re.DOTALL)  # two letters at least: "C:" begins a Windows path


@dataclass(frozen=True)
class ModelRef:
    """``vllm:gemma-3-270m`` -> backend "vllm", name "gemma-3-270m"; ``vllm:`` alone is the embedded default model
    read through vLLM; a name without a prefix is read through transformers. Which prefixes name a backend is
    backends/__init__.py's to say."""

    backend: str = TRANSFORMERS
    name: str | None = None  # an embedded model, a folder, a .gguf file or a hub id; None: the embedded default

    @classmethod
    def parse(cls, written: str | None) -> ModelRef:
        found = PREFIX.fullmatch(written) if written is not None else None
        backend, name = (TRANSFORMERS, written) if found is None else (found[1], found[2].strip() or None)
        return cls(backend, None if name == DEFAULT_WORD else name)

    @property
    def written(self) -> str:
        """The name as a message shows it, its backend's prefix included."""
        name = self.name if self.name is not None else DEFAULT
        return name if self.backend == TRANSFORMERS else f"{self.backend}:{self.name or ''}"

    @property
    def short(self) -> str:
        """An embedded model's own name, else the last part of a hub id or path, without .gguf, made
        file-name-safe; a model read through another backend than transformers is named after it too
        (vllm:gemma-3-270m -> vllm-gemma-3-270m)."""
        if self.backend != TRANSFORMERS:
            return f"{self.backend}-{ModelRef(TRANSFORMERS, self.name).short}"
        if self.name is None:
            return DEFAULT
        base = re.split(r"[/\\]+", self.name.strip().rstrip("/\\"))[-1]
        base = base[: -len(".gguf")] if base.lower().endswith(".gguf") else base
        return re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-.") or "model"


def model_refs(written: Iterable[str | None]) -> list[ModelRef]:
    """The run's models as given, in order; none given: the embedded default."""
    return [ModelRef.parse(name) for name in written] or [ModelRef()]


def short_ids(refs: Iterable[ModelRef]) -> list[str]:
    """One short id per model of a run, made unique by a number where two would be alike."""
    ids: list[str] = []
    for ref in refs:
        name, n = ref.short, 2
        while name in ids:
            name, n = f"{ref.short}-{n}", n + 1
        ids.append(name)
    return ids
