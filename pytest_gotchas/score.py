"""The forward passes at the cut, and the readings taken from them.

One pass per context a cut plan needs (cut.py): the context itself, one per extra chain step, and the full prompt for
the plain reading when it differs. Only the last position's logits are computed (``logits_to_keep=1``: bit-identical
and about 25% faster on CPU). Each context's logits go through the softmax in the model's dtype (the write-up's
probabilities are bfloat16 values) and in float32, so that every run also says what the other softmax would give.
torch is imported inside the functions that need it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .cut import CutPlan
from .results import OTHER_SOFTMAX, PLAIN, TOKEN, Reading
from .verdict import run_verdict

Context = tuple[int, ...]


@dataclass(frozen=True)
class Scored:
    """What the passes gave for one plan: its readings by name, and the top-k at the token reading's context."""

    readings: dict[str, Reading]
    top: list[list[Any]]  # [[decoded token, probability], ...]
    forward_passes: int


@dataclass(frozen=True)
class _Row:
    """One context's next-token probabilities: the wanted ids in both softmax dtypes, and the top-k."""

    probs: dict[int, float]
    other: dict[int, float] | None  # None for a float32 model: there is no other dtype
    top: tuple[tuple[int, float], ...]


def _needs_plain(plan: CutPlan) -> bool:
    naive = (plan.plain_correct_id, plan.plain_wrong_id)
    return plan.kind != "plain" or naive != (plan.correct_ids[0], plan.wrong_ids[0])


def _reads(plan: CutPlan) -> dict[Context, set[int]]:
    """Every context this plan needs a pass for, and the ids read there."""
    reads: dict[Context, set[int]] = {plan.context_ids: {plan.correct_ids[0], plan.wrong_ids[0]}}
    for chain in (plan.correct_ids, plan.wrong_ids):
        for i in range(1, len(chain)):
            reads.setdefault(plan.context_ids + chain[:i], set()).add(chain[i])
    if _needs_plain(plan):
        reads.setdefault(plan.prompt_ids, set()).update({plan.plain_correct_id, plan.plain_wrong_id})
    return reads


def forward_contexts(plans: list[CutPlan]) -> dict[Context, set[int]]:
    """Every context the plans need a forward pass for (each once), and the ids read there."""
    wanted: dict[Context, set[int]] = {}
    for plan in plans:
        for context, ids in _reads(plan).items():
            wanted.setdefault(context, set()).update(ids)
    return wanted


def forward_groups(contexts: list[Context], batch_size: int) -> list[list[Context]]:
    """Batches of equal-length contexts, so that no padding is ever needed (padding changes bfloat16 logits)."""
    by_length: dict[int, list[Context]] = {}
    for context in contexts:
        by_length.setdefault(len(context), []).append(context)
    groups = []
    for same in by_length.values():
        groups.extend(same[i : i + batch_size] for i in range(0, len(same), batch_size))
    return groups


def model_dtype(model: Any) -> str:
    return str(model.dtype).removeprefix("torch.")


def resolve_softmax_dtype(model: Any, softmax_dtype: str | None) -> str:
    dtype = model_dtype(model)
    if softmax_dtype is None or softmax_dtype == dtype:
        return dtype
    if softmax_dtype == "float32":
        return "float32"
    raise ValueError(f"softmax_dtype must be None (the model's {dtype}) or 'float32', not {softmax_dtype!r}")


def _read_group(model: Any, group: list[Context], wanted: dict[Context, set[int]], softmax_dtype: str,
                top_k: int) -> dict[Context, _Row]:
    import torch

    input_ids = torch.tensor(group, dtype=torch.long, device=model.device)
    with torch.inference_mode():
        logits = model(input_ids=input_ids, logits_to_keep=1, use_cache=False).logits[:, -1, :]
        in_model_dtype = torch.softmax(logits, dim=-1)
        in_float32 = torch.softmax(logits.float(), dim=-1) if logits.dtype != torch.float32 else None
        probs, other = in_model_dtype, in_float32
        if softmax_dtype == "float32" and in_float32 is not None:
            probs, other = in_float32, in_model_dtype
        top_p, top_i = torch.topk(probs, k=min(top_k, probs.shape[-1]), dim=-1)
    rows = {}
    for n, context in enumerate(group):
        ids = sorted(wanted[context])
        others = dict(zip(ids, other[n, ids].tolist())) if other is not None else None
        # Ties in the list are ordered by token id, never by whatever topk returned.
        top = sorted(zip(top_i[n].tolist(), top_p[n].tolist()), key=lambda item: (-item[1], item[0]))
        rows[context] = _Row(dict(zip(ids, probs[n, ids].tolist())), others, tuple(top))
    return rows


def _chain(plan: CutPlan, chain: tuple[int, ...], rows: dict[Context, _Row], other: bool) -> float:
    # Python floats: a product of a few bfloat16 values is exact in float64.
    p = 1.0
    for i, token in enumerate(chain):
        row = rows[plan.context_ids + chain[:i]]
        p *= (row.other if other else row.probs)[token]  # type: ignore[index]
    return p


def _token_reading(plan: CutPlan, rows: dict[Context, _Row], dtype: str, other: bool = False) -> Reading:
    pc, pw = _chain(plan, plan.correct_ids, rows, other), _chain(plan, plan.wrong_ids, rows, other)
    return Reading(pc, pw, run_verdict(pc, pw), plan.kind, dtype, list(plan.correct_tokens), list(plan.wrong_tokens))


def _plain_reading(plan: CutPlan, rows: dict[Context, _Row], dtype: str, decode: Callable[[int], str]) -> Reading:
    row = rows[plan.prompt_ids]
    pc, pw = row.probs[plan.plain_correct_id], row.probs[plan.plain_wrong_id]
    return Reading(pc, pw, run_verdict(pc, pw), "plain", dtype, [decode(plan.plain_correct_id)],
                   [decode(plan.plain_wrong_id)])


def score_batch(loaded: Any, plans: list[CutPlan], softmax_dtype: str | None = None, top_k: int = 5,
                batch_size: int = 1, decoded: dict[int, str] | None = None) -> list[Scored]:
    """Score several plans; each context is run once even if several plans need it.

    With ``batch_size`` > 1 only contexts of identical length share a pass. Batched results were bit-identical to
    ``batch_size=1`` on CPU (tests/test_score.py checks it on the tiny model; it held on gemma-3-270m too). GPU
    kernels may pick a different reduction order for a different batch shape, which is why the default stays 1.

    ``decoded`` (token id -> text) is read before the tokenizer is asked, and extended with what it answers.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    dtype = resolve_softmax_dtype(loaded.model, softmax_dtype)
    other_dtype = None if model_dtype(loaded.model) == "float32" else (
        model_dtype(loaded.model) if dtype == "float32" else "float32")
    wanted = forward_contexts(plans)
    rows: dict[Context, _Row] = {}
    for group in forward_groups(list(wanted), batch_size):
        rows.update(_read_group(loaded.model, group, wanted, dtype, top_k))
    known = {} if decoded is None else decoded

    def decode(token: int) -> str:
        if token not in known:  # the tokenizer is touched only for a text not known yet (see cutcache.py)
            known[token] = loaded.tokenizer.decode([token])
        return known[token]

    scored = []
    for plan in plans:
        readings = {TOKEN: _token_reading(plan, rows, dtype)}
        if _needs_plain(plan):
            readings[PLAIN] = _plain_reading(plan, rows, dtype, decode)
        if other_dtype is not None:
            readings[OTHER_SOFTMAX] = _token_reading(plan, rows, other_dtype, other=True)
        top = [[decode(i), p] for i, p in rows[plan.context_ids].top]
        scored.append(Scored(readings, top, len(_reads(plan))))
    return scored


def score(loaded: Any, plan: CutPlan, softmax_dtype: str | None = None, top_k: int = 5) -> Scored:
    """The readings and the top-k at one cut, in the model's dtype by default."""
    return score_batch(loaded, [plan], softmax_dtype=softmax_dtype, top_k=top_k)[0]
