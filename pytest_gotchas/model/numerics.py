"""What decides the bits of a run besides the model: the kernels of this machine, named and fingerprinted.

bfloat16 results depend on the CPU's kernels (AMD AVX-512-BF16 and Intel AMX both call themselves "AVX512" to torch,
yet give other probabilities) and, on some CPUs, on the number of threads. So every run records:

- ``hardware``: the CPU model with the instruction sets that matter (avx2, avx512f, avx512_bf16, amx_bf16) and torch's
  capability, or the GPU with its compute capability;
- ``numerics``: a hash of the exact bits that every numeric path a reading can take gives on fixed probe inputs
  (token ids, so no tokenizer is needed) at this process's thread count (`probe`, PATHS: the full pass, the head
  over several positions, the KV-cache steps or tree of the text reading, the softmax in float32 and the model's dtype, the
  float32-matmul product, a batch of two), after the kernel path's name when it is not plain (``named``:
  "float32-matmul:1a2b..."; kernels.py). Equal fingerprints mean the same kernels and libraries gave the same bits
  on every path; a baseline recorded under another fingerprint is compared as such.

The probe runs once per model, machine, kernels, threads and library versions (facts.py keeps its result); under
pytest-xdist facts.measure checks on it that a worker's share of the cores gives the bits the full thread count
gives, and keeps the full count where it does not.
"""

from __future__ import annotations

import hashlib
import platform
import re
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Probe:
    """What the probe computed: the sha256 of each path's bits, and the shape invariance (invariance.py) read from
    the same passes."""

    parts: tuple[tuple[str, str], ...]  # (path, sha256 of its bits), in PATHS' order
    rows: bool  # the last row of the head over every position equals the full pass's
    batch: bool  # a prompt's row in a batch of two equals its row alone
    shared_head: bool = False  # the tree's head apart, among other rows, gives its bits (paths.apart)

    @property
    def fingerprint(self) -> str:
        """sha256 (first 16 hex digits) over every path's digest."""
        return hashlib.sha256("".join(f"{path} {digest}\n" for path, digest in self.parts).encode()).hexdigest()[:16]


# Every path a reading can take, each hashed on its own: the full pass (logits_to_keep=1, no cache: the token reading,
# Rows, patching's full), the head over several kept positions with a cache (the text reading's main pass; a row at a
# time where row_readout applies), incremental steps on that cache (the text reading's chains where the model takes no
# tree: one re-fed token, one new), the softmax in float32 and in the model's dtype, the float32-matmul product
# (kernels.py's path, and the precision check's float32 arithmetic), a batch of two prompts (--gotchas-batch-size,
# the batched patching) and, for a model that takes one (paths.takes_tree), a tree of three contexts in one call on
# that cache (the text reading's chains: two siblings and a child of the first). A model that takes no tree has no
# such part, so that its fingerprint is what it was before the tree was a path.
PATHS = ("full", "head-rows", "steps", "softmax", "float32-matmul", "batch", "tree")


def probe(model: Any) -> Probe:
    """Every path of PATHS on the fixed probes: seven passes of at most PROBE_LENGTHS' tokens, two of one token, and
    one of three tree nodes where the model takes a tree."""
    import torch

    from . import float32_matmul, paths

    short, long = probes(*probe_args(model))
    device = model.device
    with torch.inference_mode():
        full = [model(input_ids=torch.tensor([ids], device=device), logits_to_keep=1, use_cache=False).logits[0, -1]
                for ids in (short, long)]
        kept = torch.arange(len(short), device=device)
        main = model(input_ids=torch.tensor([short], device=device), logits_to_keep=kept, use_cache=True)
        rows = main.logits[0]
        cache, arg = paths.cache_of(main), paths.cache_arg(model)
        steps = []
        if cache is not None and paths.extendable(cache, len(short) + 1):
            steps = [paths.step(model, cache, len(short), len(short) - 1, short[-1:], arg),
                     paths.step(model, cache, len(short), len(short), [short[1]], arg)]
        tree = _tree(model, cache, short, arg)
        shared_head = tree is not None and _apart(model, cache, short, arg, tree)
        two = model(input_ids=torch.tensor([short, short[::-1]], device=device), logits_to_keep=1,
                    use_cache=False).logits[:, -1]
        softmax = [paths.softmax32(full[0]), torch.softmax(full[0], dim=-1)]
        product = [float32_matmul.linear32(model.get_input_embeddings()(torch.tensor([short], device=device)),
                                           _first_linear(model).weight)]
    parts = (("full", _digest(full)), ("head-rows", _digest([rows])), ("steps", _digest(steps)),
             ("softmax", _digest(softmax)), ("float32-matmul", _digest(product)), ("batch", _digest([two])),
             *([("tree", _digest([tree]))] if tree is not None else []))
    return Probe(parts=parts, rows=paths.same_bits(rows[-1], full[0]),
                 batch=paths.same_bits(two[0], full[0]), shared_head=shared_head)


def _tree_args(short: list[int]) -> tuple[int, list[int], list[int], list[list[bool]]]:
    """The probe's tree: the cache cropped by one token, then that token and another as siblings, and a child of the
    first (start, tokens, positions, mask)."""
    start = len(short) - 1
    seen = ((0,), (1,), (0, 2))  # each node's ancestors and itself
    mask = [[True] * start + [n in nodes for n in range(3)] for nodes in seen]
    return start, [short[-1], short[1], short[2]], [start, start, start + 1], mask


def _tree(model: Any, cache: Any, short: list[int], arg: str) -> Any:
    """The tree path's logits on the short probe (None where the model takes no tree)."""
    from . import paths

    start, tokens, positions, mask = _tree_args(short)
    if cache is None or not paths.takes_tree(model) or not paths.extendable(cache, start + 3):
        return None
    return paths.tree_step(model, cache, len(short), start, tokens, positions, mask, arg)


def _apart(model: Any, cache: Any, short: list[int], arg: str, tree: Any) -> bool:
    """Whether the probe's tree through the decoder alone and its head apart gives `tree` (paths.apart); False for a
    model whose decoder cannot be reached that way."""
    from . import paths

    start, tokens, positions, mask = _tree_args(short)
    try:
        hidden = paths.tree_hidden(model, cache, len(short), start, tokens, positions, mask, arg)
    except (AttributeError, NotImplementedError, TypeError):
        return False
    return paths.apart(model, tree, hidden)


def _first_linear(model: Any) -> Any:
    """The first linear layer of the model's decoder (the float32-matmul probe's weights); the head where none."""
    import torch

    head = model.get_output_embeddings()
    return next((m for m in model.modules() if isinstance(m, torch.nn.Linear) and m is not head), head)


def _digest(tensors: list[Any]) -> str:
    import torch

    digest = hashlib.sha256()
    for tensor in tensors:
        digest.update(str(tuple(tensor.shape)).encode())
        digest.update(tensor.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def fingerprint(model: Any) -> str:
    """The probe's fingerprint: every path's bits, in the model's own dtype (and float32 where the path is)."""
    return probe(model).fingerprint


def named(fingerprint: str, kernels: str) -> str:
    """The fingerprint as ModelInfo.numerics records it: a kernel path other than plain is named in it, so that every
    view that shows the numerics (baseline headers, the report's facts, `gotchas merge`'s refusals) shows the path."""
    from .kernels import PLAIN_KERNELS

    return fingerprint if kernels == PLAIN_KERNELS else f"{kernels}:{fingerprint}"


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
