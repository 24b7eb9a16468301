"""What the hardware a model ran on means for its cost, pure: a CPU without native bfloat16 kernels computes the
default dtype slower than float32 (measured on an AVX2-only AMD EPYC: 7.4 against 27.5 GFLOP/s for a 100 x 640 x
2048 matmul, gemma-3-270m's shape), and the summary says so first, with the kernel path the run took."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # settings/options.py imports this module on every pytest run: pydantic only where a run scores
    from .schema import ModelInfo

PLAIN_KERNELS = "plain"  # the kernel path of a model's own modules (model/kernels.py names the others)

# The CPU flags of model/numerics.FLAGS with native bfloat16 matmul kernels.
NATIVE_BFLOAT16 = ("avx512_bf16", "amx_bf16")


def lacks_native_bfloat16(model: ModelInfo) -> bool:
    """A bfloat16 model on a CPU whose instruction sets, as model/numerics.hardware lists them ("cpu NAME (avx2
    avx512f; torch AVX512)"), have no bfloat16 matmul. A description without that list claims nothing."""
    listed = re.fullmatch(r"cpu .*\((?P<flags>[^;()]*); torch \w+\)", model.hardware)
    if model.dtype != "bfloat16" or "cpu" not in model.device.split(":") or listed is None:
        return False
    flags = set() if listed["flags"].startswith("none of ") else set(listed["flags"].split())
    return not flags & set(NATIVE_BFLOAT16)


def kernel_path(model: ModelInfo) -> str:
    """The kernel path model/numerics.named put in the fingerprint ("float32-matmul:1a2b..."), else plain."""
    named = re.fullmatch(r"(?P<path>[a-z0-9-]+):[0-9a-f]+", model.numerics)
    return named["path"] if named else PLAIN_KERNELS


@dataclass(frozen=True)
class SlowBfloat16:
    models: list[str]  # the ids of the run's models it concerns
    hardware: str
    kernels: str = PLAIN_KERNELS  # the first such model's kernel path (model/kernels.py)


def slow_bfloat16(models: list[ModelInfo]) -> SlowBfloat16 | None:
    """The run's bfloat16 models on a CPU without native bfloat16. No seconds of this run: the summary stays the same
    bits run after run (serial and -n 2 are compared line by line)."""
    slow = [m for m in models if lacks_native_bfloat16(m)]
    return SlowBfloat16([m.id for m in slow], slow[0].hardware, kernel_path(slow[0])) if slow else None
