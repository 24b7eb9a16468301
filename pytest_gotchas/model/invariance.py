"""Whether this machine's kernels compute a row with the same bits whatever the shape of the product around it.

The plugin's reference for a prompt is one pass over it alone that keeps the last position's logits
(``logits_to_keep=1``, no cache: Rows, the fingerprint, the patching's ``full``). Two of its speed-ups compute that
row inside a larger product: the head over several kept positions (the text reading, the lens's layers) and a batch
of prompts (``--gotchas-batch-size``, the batched patching methods). On most CPUs measured the bits were the same;
on an Intel AVX-512 Xeon without BF16 (oneDNN emulating bfloat16) neither held: a head product of one row rounded
otherwise than one of several, and a batch of rows otherwise than one row (gemma-3-270m, 1-2 ulps of a logit).

So every load measures both on the numerics probe (a few short passes) and, where one fails:
- rows: the head computes each row as a product of its own (row_readout.py), the reference's shape, so that every
  row it reports is the reference's bits; the measure is then repeated, and must hold;
- batch: each prompt runs alone (batch size 1) and patching uses ``full``, one pass per cell.
The rows are said in the run's notes, the batch only where the run asked for a batch or for patching (the scorer
says it); the numbers stay those of the reference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .paths import same_bits


@dataclass(frozen=True)
class Invariance:
    rows: bool  # the last row of the head's product over every position equals the head over that row alone
    batch: bool  # a prompt's last row in a batch of two equals its row alone


INVARIANT = Invariance(rows=True, batch=True)


def settle(model: Any) -> tuple[Invariance, Invariance]:
    """(as measured, as it stands after): where the head's rows differ it is computed a row at a time
    (row_readout.py) and measured again, since a batch's difference may have been the head's alone."""
    from . import row_readout

    first = measure(model)
    if first.rows:
        return first, first
    row_readout.apply(model)
    return first, measure(model)


def measure(model: Any) -> Invariance:
    """Both properties on the numerics' short probe (and its ids reversed, as the batch's other row)."""
    import torch

    from .numerics import probe_args, probes

    ids = probes(*probe_args(model))[0]
    device = model.device
    one = torch.tensor([ids], device=device)
    with torch.inference_mode():
        alone = model(input_ids=one, logits_to_keep=1, use_cache=False).logits[0, -1]
        every = model(input_ids=one, use_cache=False).logits[0, -1]
        two = model(input_ids=torch.tensor([ids, ids[::-1]], device=device), logits_to_keep=1,
                    use_cache=False).logits[0, -1]
    return Invariance(rows=same_bits(alone, every), batch=same_bits(alone, two))


def notes(found: Invariance, dtype: str) -> list[str]:
    """What a run says about a measure that failed, and what it did instead."""
    out = []
    if not found.rows:
        out.append(f"on this CPU the head's {dtype} product rounds a row otherwise among several rows than alone "
                   "(measured at load): each row of the head was computed alone, as the reference pass computes it")
    return out


def batch_note(dtype: str, batched: bool, patched: bool) -> str | None:
    """What a run says where a batch computes other bits than a prompt alone: only what that changed of what it
    asked for (a batch size above 1, patching), none for a run that asked for neither (it ran as it would have)."""
    changed = (["every prompt ran alone (batch size 1)"] if batched else []) + (
        ["patching used one pass per cell (method full)"] if patched else [])
    if not changed:
        return None
    return (f"on this CPU a batch of prompts computes other {dtype} bits than a prompt alone (measured at load): "
            + ", and ".join(changed))
