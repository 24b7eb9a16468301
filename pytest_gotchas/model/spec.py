"""What a load is asked for (`ModelSpec`) and the one error every backend's load raises (`ModelLoadError`). Pure: no
torch. backends/protocol.py publishes both, so that the floors above a backend name them without reaching into
model/load.py, the transformers backend's loading."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelSpec:
    name: str | None  # an embedded model's short name, a hub id, a local folder or a .gguf file; None = the default
    id: str = ""  # the short name the run knows it by (ModelInfo.id); "": ModelRef(name=name).short
    dtype: str = "bfloat16"  # "bfloat16" | "float16" | "float32"
    device: str | None = None  # None = "cuda" if available else "cpu"; or "cpu", "cuda", "cuda:1"
    device_map_auto: bool = False  # device_map="auto", for models too large for one GPU
    worker_id: str | None = None  # the pytest-xdist worker ("gw1") loading it: a plain "cuda" becomes its own GPU
    workers: int = 0  # how many xdist workers share this machine's cores
    flag: str = "--gotchas-"  # how the options that messages name are spelled (`gotchas new` drops "gotchas-")
    kernels: str = "plain"  # the kernel path of a bfloat16 model's matmuls (kernels.py)
    allow_unfaithful_tokenizer: bool = False  # score a tokenizer that fails the converter's round trip, with a note


class ModelLoadError(Exception):
    """One user-facing message: what was asked, where it looked, what failed, what to do."""
