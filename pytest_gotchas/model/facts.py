"""What a load measures beyond reading the weights, computed once and kept in the cache folder: the numerics probe's
fingerprint, the shape invariance (invariance.py) and whether an xdist worker keeps every thread (numerics.py).

They depend on the model (its weights, config and tokenizer files), this machine (CPU model, every CPU flag, torch's
capability, the environment variables that steer its kernels; the GPU and its CUDA), the kernel path, dtype, device,
the thread counts, the library versions (torch, transformers, tokenizers) and the probe's own code: the key hashes
all of them, so that a change in any is measured again. A warm load then runs no probe pass (about 3 s of a warm
run's load on an AMD EPYC with AVX-512 BF16 at 2 threads: bench/RESULTS.md). A cache that cannot be read or written
costs only the measure.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from ..files import write_atomic

FOLDER = "load-facts"
# Steer which kernels torch, oneDNN and MKL pick (or how they accumulate): a change must measure again.
KERNEL_VARIABLES = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "ONEDNN_DEFAULT_FPMATH_MODE",
                    "DNNL_DEFAULT_FPMATH_MODE", "MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR", "MKL_DEBUG_CPU_TYPE",
                    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "NVIDIA_TF32_OVERRIDE", "CUBLAS_WORKSPACE_CONFIG")
# The modules whose code computes the facts: an edit to any measures again.
PROBE_MODULES = ("numerics.py", "paths.py", "invariance.py", "row_readout.py", "float32_matmul.py", "facts.py")


@dataclass(frozen=True)
class Facts:
    fingerprint: str  # numerics.Probe.fingerprint at `threads`
    threads: int  # the threads the run computes with
    kept: bool  # an xdist worker kept every thread: its share gives other bits
    rows_first: bool  # the head's rows as first measured (False: row_readout applies)
    batch: bool  # a batch computes a prompt's bits
    shared_head: bool  # a tree's head can be one product with other trees' (paths.apart)


def key(parts: dict[str, str]) -> str:
    """The cache key of `parts` (environment()'s), order-free."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def environment(*, model_files: str, dtype: str, device: str, kernels: str, shared: int, full: int) -> dict[str, str]:
    """Everything the facts depend on, each named; `model_files` fingerprints the weights and every other file of the
    model folder (hashes.py)."""
    import torch
    import transformers

    from . import numerics

    name, flags = numerics._cpuinfo()
    parts = {
        "model": model_files, "dtype": dtype, "device": device, "kernels": kernels,
        "threads": f"{shared} of {full}",
        "hardware": numerics.hardware(device), "cpu": name, "flags": " ".join(sorted(flags)),
        "torch": str(torch.__version__), "transformers": str(transformers.__version__),
        "cuda": f"{torch.version.cuda} {torch.backends.cudnn.version() if torch.cuda.is_available() else None}",
        "python": sys.version.split()[0],
        "code": _code_digest(),
    }
    parts.update({f"env {name}": os.environ.get(name, "") for name in KERNEL_VARIABLES})
    return parts


def _code_digest() -> str:
    here = Path(__file__).parent
    digest = hashlib.sha256()
    for name in PROBE_MODULES:
        digest.update(name.encode() + b"\0" + (here / name).read_bytes())
    return digest.hexdigest()


def read(cache_dir: Path, parts: dict[str, str]) -> Facts | None:
    """The facts kept under `parts`' key; None when none are, or they cannot be read back whole."""
    try:
        data = json.loads((Path(cache_dir) / FOLDER / f"{key(parts)}.json").read_text())
        if data.get("environment") != parts:
            return None
        facts = data["facts"]
        return Facts(**{f.name: facts[f.name] for f in fields(Facts)})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def write(cache_dir: Path, parts: dict[str, str], facts: Facts) -> None:
    """Keep `facts` under `parts`' key, with the environment written out (to read what a key stood for)."""
    try:
        write_atomic(Path(cache_dir) / FOLDER / f"{key(parts)}.json",
                     json.dumps({"environment": parts, "facts": asdict(facts)}, indent=1, sort_keys=True))
    except OSError:
        pass  # a read-only cache: measured again next time


def measure(model: Any, shared: int, full: int) -> tuple[Facts, Any]:
    """The facts of `model` at `shared` of `full` threads (one probe, two where the share may change the bits, three
    where the head's rows differ), and the last probe (numerics.Probe). Applies row_readout where the rows differ
    and leaves torch at the facts' thread count."""
    import torch

    from . import numerics, row_readout

    torch.set_num_threads(min(shared, full))
    probe = numerics.probe(model)
    rows_first = probe.rows
    if not rows_first:
        row_readout.apply(model)
        probe = numerics.probe(model)
    threads, kept = torch.get_num_threads(), False
    if shared < full:
        torch.set_num_threads(full)
        with_all = numerics.probe(model)
        if with_all.fingerprint == probe.fingerprint:
            torch.set_num_threads(shared)
        else:
            probe, threads, kept = with_all, full, True
    return Facts(probe.fingerprint, threads, kept, rows_first, probe.batch, probe.shared_head), probe


def apply(model: Any, facts: Facts) -> None:
    """What measure() did to `model` and torch, from kept facts."""
    import torch

    from . import row_readout

    if not facts.rows_first:
        row_readout.apply(model)
    torch.set_num_threads(facts.threads)
