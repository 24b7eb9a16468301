"""The model names a run refuses before it collects anything: a short name that can only be a typo, and a hub id
that the hub cannot be asked for.

Both used to reach transformers: `--gotchas-model gemma-3-27m` spent a minute in the hub client's retries, ended
"Check that it is a causal language model that transformers can load" and failed the first case. A name is looked
at, not loaded: no torch, and the hub client only where HF_HUB_OFFLINE is set.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from .embedded import MODELS
from .ref import ModelRef

# The values huggingface_hub reads as true (its utils._is_true); transformers' older switch means the same.
OFFLINE = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
TRUE = {"1", "ON", "YES", "TRUE"}
EXAMPLE_HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"


def refusal(ref: ModelRef, flag: str = "--gotchas-", hub_cache: Path | None = None) -> str | None:
    """Why the model `ref` cannot be loaded, said before anything runs; None
    where it may load. A name without `/` is an embedded model, a folder or a file here; anything else would be
    sent to the hub as a name of no owner. Offline, a hub id must be in the hub cache (`hub_cache`: None, the hub
    client's own folder)."""
    model, name = ref.name, ref.written
    if model is None or model in MODELS or Path(model).expanduser().exists():
        return None
    if "/" not in model and "\\" not in model:
        return _unknown(name, model, flag)
    if offline() and _hub_id(model):
        return _not_cached(name, model, flag, hub_cache)
    return None


def offline() -> bool:
    return any(os.environ.get(variable, "").upper() in TRUE for variable in OFFLINE)


def _unknown(name: str, model: str, flag: str) -> str:
    close = difflib.get_close_matches(model, list(MODELS), n=1, cutoff=0.6)
    guess = f"; did you mean {close[0]}?" if close else "."
    return (f"{flag}model {name}: no embedded model, folder or file is named {model!r}{guess} The embedded models "
            f"are {', '.join(MODELS)}. A model on the Hugging Face hub is named by its owner too (owner/name, e.g. "
            f"{EXAMPLE_HUB_ID}) and is downloaded once, which needs the network; a folder or a .gguf file must exist")


def _hub_id(model: str) -> bool:
    """owner/name, as the hub spells ids; a path (./x, /x, a/b/c, ~/x) is the loader's to refuse."""
    owner, _, repo = model.partition("/")
    return bool(owner) and bool(repo) and "/" not in repo and not owner.startswith((".", "~"))


def _not_cached(name: str, model: str, flag: str, hub_cache: Path | None) -> str | None:
    try:
        from huggingface_hub import constants, try_to_load_from_cache
    except ImportError:  # no hub client: the loader says what to install
        return None
    folder = hub_cache or Path(constants.HF_HUB_CACHE)
    if isinstance(try_to_load_from_cache(model, "config.json", cache_dir=folder), str):
        return None
    variables = " / ".join(v for v in OFFLINE if os.environ.get(v, "").upper() in TRUE)
    return (f"{flag}model {name}: {variables} is set, so the hub is not asked, and its cache ({folder}) holds no "
            f"copy of {model}. Run once without {variables} to download it, or name an embedded model "
            f"({', '.join(MODELS)}), a local folder or a .gguf file")
