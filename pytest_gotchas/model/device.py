"""The device a model loads on and the CPU threads it computes with: a plain "cuda" spread over the GPUs by xdist
worker, each CPU worker its share of the cores, a device and kernel path checked before anything loads, and where
`--gotchas-device auto` put a model."""

from __future__ import annotations

import os
import re
from typing import Any

from . import kernels
from .spec import ModelLoadError, ModelSpec


def resolve_device(requested: str | None, worker_id: str | None) -> str:
    """The device to load on; pytest-xdist workers spread a plain "cuda" over the GPUs.

    Never raises: load_model says what is wrong with a device that cannot be used.
    """
    import torch

    device = requested or ("cuda" if torch.cuda.is_available() else "cpu")
    match = re.fullmatch(r"gw(\d+)", worker_id or "")
    if device == "cuda" and match and torch.cuda.is_available():
        count = torch.cuda.device_count()
        if count > 1:
            return f"cuda:{int(match[1]) % count}"
    return device


def share_cpu_threads(device: str, workers: int) -> int | None:
    """Under pytest-xdist on the CPU, give each worker its share of the cores, not all of them: N workers with all
    cores each made `-n 2` on 2 cores 1.6x slower than a serial run (OpenMP threads competing), and on that machine
    the probabilities were the same bits with 1 thread as with 2 (python -m bench.run compares -n 2 with serial every run).
    OMP_NUM_THREADS, when set, is left to decide. Returns the threads set, or None when nothing was changed."""
    import torch

    if device != "cpu" or workers < 2 or os.environ.get("OMP_NUM_THREADS"):
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads = max(1, cores // workers)
    if threads >= torch.get_num_threads():
        return None
    torch.set_num_threads(threads)
    return threads


def check_device(device: str, shown: str, spec: ModelSpec) -> None:
    """The device exists, and the kernel path the spec asks for can run there."""
    import torch

    flag = spec.flag
    refused = kernels.refusal(spec.kernels, spec.dtype, flag) or kernels.device_refusal(spec.kernels, device, shown,
                                                                                        flag)
    if refused:
        raise ModelLoadError(refused)

    if not device.startswith("cuda"):
        return
    if not torch.cuda.is_available():
        raise ModelLoadError(
            f"cannot load model {shown!r} on {device!r}: torch {torch.__version__} sees no CUDA device. "
            f"Use {flag}device cpu, or install a CUDA build of torch."
        )
    index = re.fullmatch(r"cuda:(\d+)", device)
    count = torch.cuda.device_count()
    if index and int(index[1]) >= count:
        raise ModelLoadError(f"cannot load model {shown!r} on {device!r}: torch sees {count} CUDA device(s)")


def placed(model: Any) -> str:
    """Where `--gotchas-device auto` put the model: "auto:" and its devices. With one device (or none but the CPU)
    transformers sets no hf_device_map: the model's device is the map."""
    mapped = (getattr(model, "hf_device_map", None) or {}).values()  # accelerate names a GPU by its index
    placed = {f"cuda:{d}" if isinstance(d, int) else str(d) for d in mapped} or {str(model.device)}
    return "auto:" + ",".join(sorted(placed))
