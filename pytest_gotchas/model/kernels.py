"""Kernel paths: which kernels compute a bfloat16 model's matmuls on the CPU (--gotchas-kernels).

- ``plain``: transformers' own bfloat16 modules, whatever this CPU's bfloat16 kernels are. The default.
- ``float32-matmul``: every linear layer but the output embeddings multiplies its bfloat16 input, read as float32,
  by its weights held in float32 (the same values: bfloat16 widens to float32 exactly), accumulates in float32 and
  rounds once to bfloat16. That is what a bfloat16 kernel computes too, but its sums run in another order, so the
  last bit of some outputs differs, and through 18 layers of bfloat16 the probabilities move like those of another
  CPU's kernels (bench/RESULTS.md, "First runs and bfloat16"). On a CPU without native bfloat16 matmul it costs what
  float32 costs, not several times more. The output embeddings stay plain: one row a pass, memory-bound, where
  bfloat16 reads half the bytes.

Which path ran is part of the run's numerics fingerprint (numerics.named), so a baseline recorded with the other path
is compared as other kernels; nothing chooses a path but the option. Pure: the names and what each refuses; the
layers are float32_matmul.py's.
"""

from __future__ import annotations

from ..results.hardware import PLAIN_KERNELS

FLOAT32_MATMUL = "float32-matmul"
KERNELS = (PLAIN_KERNELS, FLOAT32_MATMUL)


def refusal(kernels: str, dtype: str, flag: str = "--gotchas-") -> str | None:
    """Why the run cannot take `kernels`, before anything loads; None when it can. Pure."""
    if kernels != PLAIN_KERNELS and dtype != "bfloat16":
        return (f"{flag}kernels {kernels} computes bfloat16 models' matmuls in float32, and {flag}dtype {dtype} "
                f"has no bfloat16 matmul to replace: leave {flag}kernels out, or run bfloat16")
    return None


def device_refusal(kernels: str, device: str, shown: str, flag: str = "--gotchas-") -> str | None:
    """Why `kernels` cannot run model `shown` on `device` (known once the device is resolved); None when it can."""
    if kernels != PLAIN_KERNELS and not device.startswith("cpu"):
        return (f"cannot load model {shown!r} with {flag}kernels {kernels} on {device!r}: the path is for CPUs "
                f"without native bfloat16 kernels, and a GPU computes bfloat16 natively; leave {flag}kernels out, "
                f"or use {flag}device cpu")
    return None
