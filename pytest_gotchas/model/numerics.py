"""What decides the bits of a run besides the model: the kernels of this machine, named and fingerprinted.

bfloat16 results depend on the CPU's kernels (AMD AVX-512-BF16 and Intel AMX both call themselves "AVX512" to torch,
yet give other probabilities) and, on some CPUs, on the number of threads. So every run records:

- ``hardware``: the CPU model with the instruction sets that matter (avx2, avx512f, avx512_bf16, amx_bf16) and torch's
  capability, or the GPU with its compute capability;
- ``numerics``: a hash of the exact logits, in the model's dtype, of fixed probe inputs (token ids, so no tokenizer is
  needed) at this process's thread count, after the kernel path's name when it is not plain (``named``:
  "float32-matmul:1a2b..."; kernels.py). Equal fingerprints mean the same kernels gave the same bits; a baseline
  recorded under another fingerprint is compared as such.

Under pytest-xdist each worker gets a share of the cores; `keep_threads_if_they_matter` checks on the probes that the
share gives the bits the full thread count gives, and keeps the full count where it does not.
"""

from __future__ import annotations

import hashlib
import platform
import re
from pathlib import Path
from typing import Any

FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16")
PROBE_LENGTHS = (16, 320)  # a short prompt, and one longer than the longest spec prompt (about 180 tokens)


def probes(vocab_size: int, first: int | None, positions: int | None = None) -> list[list[int]]:
    """Fixed pseudo-random token ids (a multiplicative walk), after the model's BOS token when it has one, each at
    most `positions` long (a model with learned positions has no embedding past its last one)."""
    out = []
    for length in PROBE_LENGTHS:
        ids = [(17 + 7919 * n) % vocab_size for n in range(length)]
        out.append((([first] if first is not None else []) + ids)[:positions])
    return out


def max_positions(config: Any) -> int | None:
    """The longest input the model's position embeddings cover, where its config says (GPT-2 calls it n_positions)."""
    for name in ("max_position_embeddings", "n_positions"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def probe_args(model: Any) -> tuple[int, int | None, int | None]:
    """probes()'s arguments for `model`: its vocabulary size, BOS token and longest input."""
    config = model.config
    vocab = int(getattr(config, "vocab_size", 0) or model.get_output_embeddings().weight.shape[0])
    return vocab, getattr(config, "bos_token_id", None), max_positions(config)


def fingerprint(model: Any) -> str:
    """sha256 (first 16 hex digits) of the last position's logits of every probe, in the model's own dtype."""
    import torch

    digest = hashlib.sha256()
    with torch.inference_mode():
        for ids in probes(*probe_args(model)):
            logits = model(input_ids=torch.tensor([ids], device=model.device), logits_to_keep=1,
                           use_cache=False).logits[0, -1]
            digest.update(logits.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:16]


def named(fingerprint: str, kernels: str) -> str:
    """The fingerprint as ModelInfo.numerics records it: a kernel path other than plain is named in it, so that every
    view that shows the numerics (baseline headers, the report's facts, `gotchas merge`'s refusals) shows the path."""
    from .kernels import PLAIN

    return fingerprint if kernels == PLAIN else f"{kernels}:{fingerprint}"


def keep_threads_if_they_matter(model: Any, shared: int, full: int) -> tuple[str, int, bool]:
    """(fingerprint, threads used, whether the share was given up). With `shared` < `full` threads the probes are
    computed both ways; if the bits differ, the full count is kept, so that an xdist worker computes what a serial
    run computes (measured on an Intel AMX CPU: 1 and 2 threads differ on prompts of about 180 tokens)."""
    import torch

    if shared >= full:
        return fingerprint(model), torch.get_num_threads(), False
    torch.set_num_threads(shared)
    with_share = fingerprint(model)
    torch.set_num_threads(full)
    with_all = fingerprint(model)
    if with_share == with_all:
        torch.set_num_threads(shared)
        return with_share, shared, False
    return with_all, full, True


def hardware(device: str) -> str:
    """The GPU with its compute capability, or the CPU model with the instruction sets that decide its kernels."""
    import torch

    if "cuda" in device and torch.cuda.is_available():
        match = re.search(r"cuda:(\d+)", device)
        index = int(match[1]) if match else torch.cuda.current_device()
        major, minor = torch.cuda.get_device_capability(index)
        return f"{torch.cuda.get_device_name(index)} (sm_{major}{minor})"
    if not device.startswith("cpu"):
        return device
    name, flags = _cpuinfo()
    present = " ".join(flag for flag in FLAGS if flag in flags) or "none of " + " ".join(FLAGS)
    return f"cpu {name} ({present}; torch {torch.backends.cpu.get_cpu_capability()})"


def _cpuinfo() -> tuple[str, set[str]]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or platform.machine(), set()
    name = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")),
                platform.machine())
    flags = next((set(line.split(":", 1)[1].split()) for line in text.splitlines() if line.startswith("flags")), set())
    return name, flags
