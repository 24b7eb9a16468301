"""Tokenization at the cut, the forward pass, and P(correct) / P(wrong) / top-k.

``plan_cut`` is pure (tokenizer only): it finds which token ids the model must be asked
about, because tokenize(prompt + candidate) is often not tokenize(prompt) + [token]
(Gemma merges "),", ")]" and "'." into single tokens). ``score`` runs the passes.
torch is imported inside the functions that need it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from collections.abc import Iterable
from typing import Any

MAX_CHAIN = 8  # tokens per side; longer chains mean the cut is nowhere near a token boundary
TAIL_TOKENS = 4  # prompt tokens shown in a CutError
REGION_TOKENS = 12  # candidate-side tokens shown in a CutError


@dataclass(frozen=True)
class CutPlan:
    """Which ids to read where. Pure data, computed from the tokenizer only."""

    kind: str  # "plain" | "healed" | "chain"
    context_ids: tuple[int, ...]  # fed to the model (with BOS); ends at a clean token boundary
    correct_ids: tuple[int, ...]  # 1 token for plain/healed; the chain for "chain"
    wrong_ids: tuple[int, ...]
    correct_tokens: tuple[str, ...]
    wrong_tokens: tuple[str, ...]
    backed_off_chars: int  # prompt characters the context stops short of the cut
    plain_correct_id: int  # naive reading: first token of tokenizer(candidate) at the full prompt
    plain_wrong_id: int
    prompt_ids: tuple[int, ...]  # tokenizer(prompt), where the naive reading is taken


class CutError(Exception):
    """The cut cannot be represented by this tokenizer (or the candidates are unusable)."""


@dataclass(frozen=True)
class _Encoding:
    ids: tuple[int, ...]
    offsets: tuple[tuple[int, int], ...]
    special: tuple[bool, ...]  # added by the tokenizer (BOS ...), not text


def _encode(tokenizer: Any, text: str) -> _Encoding:
    enc = tokenizer(text, return_offsets_mapping=True, return_special_tokens_mask=True)
    ids = tuple(enc["input_ids"])
    offsets = tuple(tuple(o) for o in enc["offset_mapping"])
    special = tuple(bool(s) for s in enc["special_tokens_mask"])
    # Trailing added tokens (an EOS some tokenizers append) are not part of a prompt.
    end = len(ids)
    while end and special[end - 1]:
        end -= 1
    return _Encoding(ids[:end], offsets[:end], special[:end])


def _common_prefix(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _context_end(enc: _Encoding, length: int) -> int:
    """Character offset where the first ``length`` tokens stop."""
    ends = [enc.offsets[i][1] for i in range(length) if not enc.special[i]]
    return max(ends, default=0)


def _chain_end(enc: _Encoding, start: int, cut: int) -> int | None:
    """Index of the first token from ``start`` whose text reaches past the cut."""
    for i in range(start, len(enc.ids)):
        if not enc.special[i] and enc.offsets[i][1] > cut:
            return i
    return None


def _tokens(tokenizer: Any, ids: Iterable[int]) -> tuple[str, ...]:
    return tuple(tokenizer.convert_ids_to_tokens(list(ids)))


def _describe(tokenizer: Any, prompt_enc: _Encoding, sides: list[tuple[str, str, _Encoding]], start: int) -> str:
    text_tokens = [i for i, s in zip(prompt_enc.ids, prompt_enc.special) if not s]
    tail = list(_tokens(tokenizer, text_tokens[-TAIL_TOKENS:]))
    shown_tail = ("..., " if len(tail) < len(prompt_enc.ids) else "") + ", ".join(map(repr, tail))
    parts = [f"prompt ends [{shown_tail}]"]
    for label, candidate, enc in sides:
        region = list(_tokens(tokenizer, enc.ids[start : start + REGION_TOKENS]))
        more = ", ..." if len(enc.ids) - start > REGION_TOKENS else ""
        shown = repr(region)[:-1] + more + "]"
        parts.append(f"{label} {json.dumps(candidate, ensure_ascii=False)} -> {shown}")
    return "; ".join(parts)


def _side_problem(
    tokenizer: Any, label: str, text: str, cut: int, enc: _Encoding, start: int, context_end: int
) -> str | None:
    """Why this side's diverging region is not a faithful tokenization, if it is not."""
    unk = tokenizer.unk_token_id
    for i in range(start, len(enc.ids)):
        if unk is not None and enc.ids[i] == unk:
            lo, hi = enc.offsets[i]
            return f"the {label} side maps {text[lo:hi]!r} to the unknown token {tokenizer.unk_token!r}"
    position, previous = context_end, None
    for i in range(start, len(enc.ids)):
        lo, hi = enc.offsets[i]
        # Byte-fallback pieces of one character share that character's offsets.
        if enc.special[i] or (lo != position and (lo, hi) != previous):
            return f"the {label} side's token offsets do not cover {text[position:]!r}"
        position, previous = hi, (lo, hi)
    if position != len(text):
        return f"the {label} side's token offsets do not cover {text[position:]!r}"
    # Offsets can cover text the tokens do not reproduce (a lowercasing normalizer ...).
    region = text[context_end:]
    text_ids = [t for t, s in zip(enc.ids, enc.special) if not s]
    decoded = tokenizer.decode(text_ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
    if not decoded.endswith(region):
        shown = decoded[-len(region) - 8 :]
        return f"the {label} side's tokens decode to {shown!r}, which does not end with {region!r}"
    end = _chain_end(enc, start, cut)
    if end is None:
        return f"no {label} token reaches past the cut"
    if end - start + 1 > MAX_CHAIN:
        return f"the {label} side needs {end - start + 1} tokens to reach past the cut (at most {MAX_CHAIN})"
    return None


def _first_token(tokenizer: Any, candidate: str, label: str) -> int:
    ids = tokenizer(candidate, add_special_tokens=False)["input_ids"]
    if not ids:
        raise CutError(f"the {label} candidate {candidate!r} tokenizes to nothing")
    return ids[0]


def plan_cut(tokenizer: Any, prompt: str, correct: str, wrong: str) -> CutPlan:
    """Decide which tokens stand for each candidate at the cut after ``prompt``.

    The context is the longest token prefix shared by tokenize(prompt + correct) and
    tokenize(prompt + wrong). Each side is scored from there by its chain: the tokens
    up to and including the first one whose text reaches past the cut.
    """
    if not correct or not wrong or correct[0] == wrong[0]:
        raise CutError(
            f"candidates must be non-empty and differ in their first character: correct {correct!r}, wrong {wrong!r}"
        )
    cut = len(prompt)
    t = _encode(tokenizer, prompt)
    a = _encode(tokenizer, prompt + correct)
    b = _encode(tokenizer, prompt + wrong)
    start = _common_prefix(a.ids, b.ids)
    context_end = _context_end(a, start)
    sides = [("correct", correct, a), ("wrong", wrong, b)]

    def untokenizable(reason: str) -> CutError:
        return CutError(f"cut not representable by this tokenizer: {_describe(tokenizer, t, sides, start)}: {reason}")

    if start == 0:
        raise untokenizable("the two sides share no leading token, so there is no context to read them after")
    if context_end > cut:
        raise untokenizable("a token shared by both sides reaches past the cut")
    for label, candidate, enc in sides:
        problem = _side_problem(tokenizer, label, prompt + candidate, cut, enc, start, context_end)
        if problem:
            raise untokenizable(problem)

    correct_ids = a.ids[start : _chain_end(a, start, cut) + 1]
    wrong_ids = b.ids[start : _chain_end(b, start, cut) + 1]
    context = a.ids[:start]
    single = len(correct_ids) == 1 and len(wrong_ids) == 1
    if single and context == t.ids:
        kind = "plain"
    elif single:
        kind = "healed"
    else:
        kind = "chain"
    return CutPlan(
        kind=kind,
        context_ids=context,
        correct_ids=correct_ids,
        wrong_ids=wrong_ids,
        correct_tokens=_tokens(tokenizer, correct_ids),
        wrong_tokens=_tokens(tokenizer, wrong_ids),
        backed_off_chars=cut - context_end,
        plain_correct_id=_first_token(tokenizer, correct, "correct"),
        plain_wrong_id=_first_token(tokenizer, wrong, "wrong"),
        prompt_ids=t.ids,
    )


@dataclass(frozen=True)
class RunScore:
    """One case's reading. Plain values only: it goes into reports and baselines."""

    p_correct: float  # product over the correct chain
    p_wrong: float
    top: tuple[tuple[str, float], ...]  # at the (possibly backed-off) cut: (decoded token, prob)
    kind: str
    correct_tokens: tuple[str, ...]
    wrong_tokens: tuple[str, ...]
    plain_p_correct: float | None  # naive reading at the full prompt; None when it is the same reading
    plain_p_wrong: float | None
    softmax_dtype: str
    forward_passes: int
    # The same logits through the other softmax (float32 when the main one ran in the model's dtype, and the
    # reverse), so that a run shows which verdicts the choice of softmax dtype decides. None for a float32 model.
    other_softmax_dtype: str | None = None
    other_p_correct: float | None = None
    other_p_wrong: float | None = None


def _needs_plain(plan: CutPlan) -> bool:
    naive = (plan.plain_correct_id, plan.plain_wrong_id)
    return plan.kind != "plain" or naive != (plan.correct_ids[0], plan.wrong_ids[0])


def _reads(plan: CutPlan) -> dict[tuple[int, ...], set[int]]:
    """Every context this plan needs a pass for, and the ids read there."""
    reads: dict[tuple[int, ...], set[int]] = {plan.context_ids: {plan.correct_ids[0], plan.wrong_ids[0]}}
    for chain in (plan.correct_ids, plan.wrong_ids):
        for i in range(1, len(chain)):
            reads.setdefault(plan.context_ids + chain[:i], set()).add(chain[i])
    if _needs_plain(plan):
        reads.setdefault(plan.prompt_ids, set()).update({plan.plain_correct_id, plan.plain_wrong_id})
    return reads


@dataclass(frozen=True)
class _Reading:
    probs: dict[int, float]
    top: tuple[tuple[int, float], ...]
    other: dict[int, float] | None  # the wanted ids under the other softmax dtype


def _resolve_softmax_dtype(model: Any, softmax_dtype: str | None) -> str:
    model_dtype = str(model.dtype).removeprefix("torch.")
    if softmax_dtype is None or softmax_dtype == model_dtype:
        return model_dtype
    if softmax_dtype == "float32":
        return "float32"
    raise ValueError(f"softmax_dtype must be None (the model's {model_dtype}) or 'float32', not {softmax_dtype!r}")


def forward_groups(contexts: list[tuple[int, ...]], batch_size: int) -> list[list[tuple[int, ...]]]:
    """Batches of equal-length contexts, so that no padding is ever needed."""
    by_length: dict[int, list[tuple[int, ...]]] = {}
    for context in contexts:
        by_length.setdefault(len(context), []).append(context)
    groups = []
    for same in by_length.values():
        groups.extend(same[i : i + batch_size] for i in range(0, len(same), batch_size))
    return groups


def _read_group(
    model: Any, group: list[tuple[int, ...]], wanted: dict[tuple[int, ...], set[int]], softmax_dtype: str, top_k: int
) -> dict[tuple[int, ...], _Reading]:
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
    readings = {}
    for row, context in enumerate(group):
        ids = sorted(wanted[context])
        values = probs[row, ids].tolist()
        others = dict(zip(ids, other[row, ids].tolist())) if other is not None else None
        # Ties in the list are ordered by token id, never by whatever topk returned.
        top = sorted(zip(top_i[row].tolist(), top_p[row].tolist()), key=lambda item: (-item[1], item[0]))
        readings[context] = _Reading(dict(zip(ids, values)), tuple(top), others)
    return readings


def _chain_probability(plan: CutPlan, chain: tuple[int, ...], readings: dict[tuple[int, ...], _Reading],
                       other: bool = False) -> float:
    # Python floats: a product of a few bfloat16 values is exact in float64.
    p = 1.0
    for i, token in enumerate(chain):
        reading = readings[plan.context_ids + chain[:i]]
        p *= reading.other[token] if other else reading.probs[token]
    return p


def _decode(loaded: Any, token: int, decoded: dict[int, str]) -> str:
    if token not in decoded:  # the tokenizer is touched only for a text not known yet (see cutcache.py)
        decoded[token] = loaded.tokenizer.decode([token])
    return decoded[token]


def _assemble(
    loaded: Any, plan: CutPlan, readings: dict[tuple[int, ...], _Reading], softmax_dtype: str, decoded: dict[int, str]
) -> RunScore:
    main = readings[plan.context_ids]
    plain = readings[plan.prompt_ids] if _needs_plain(plan) else None
    has_other = main.other is not None
    other_dtype = None if not has_other else "float32" if softmax_dtype != "float32" else str(
        loaded.model.dtype).removeprefix("torch.")
    return RunScore(
        p_correct=_chain_probability(plan, plan.correct_ids, readings),
        p_wrong=_chain_probability(plan, plan.wrong_ids, readings),
        top=tuple((_decode(loaded, i, decoded), p) for i, p in main.top),
        kind=plan.kind,
        correct_tokens=plan.correct_tokens,
        wrong_tokens=plan.wrong_tokens,
        plain_p_correct=plain.probs[plan.plain_correct_id] if plain else None,
        plain_p_wrong=plain.probs[plan.plain_wrong_id] if plain else None,
        softmax_dtype=softmax_dtype,
        forward_passes=len(_reads(plan)),
        other_softmax_dtype=other_dtype,
        other_p_correct=_chain_probability(plan, plan.correct_ids, readings, other=True) if has_other else None,
        other_p_wrong=_chain_probability(plan, plan.wrong_ids, readings, other=True) if has_other else None,
    )


def forward_contexts(plans: list[CutPlan]) -> dict[tuple[int, ...], set[int]]:
    """Every context the plans need a forward pass for (each once), and the ids read there."""
    wanted: dict[tuple[int, ...], set[int]] = {}
    for plan in plans:
        for context, ids in _reads(plan).items():
            wanted.setdefault(context, set()).update(ids)
    return wanted


def score_batch(
    loaded: Any, plans: list[CutPlan], softmax_dtype: str | None = None, top_k: int = 5, batch_size: int = 1,
    decoded: dict[int, str] | None = None,
) -> list[RunScore]:
    """Score several plans; each context is run once even if several plans need it.

    With ``batch_size`` > 1 only contexts of identical length share a pass (padding
    changes bfloat16 logits). Batched results were bit-identical to ``batch_size=1``
    on CPU (tests/test_score.py checks it on the tiny model, also with random attention
    and MLP weights; it held on gemma-3-270m too). GPU kernels may pick a different
    reduction order for a different batch shape, which is why the default stays 1.

    ``decoded`` (token id -> text) is read before the tokenizer is asked, and extended with what it answers.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    dtype = _resolve_softmax_dtype(loaded.model, softmax_dtype)
    wanted = forward_contexts(plans)
    readings: dict[tuple[int, ...], _Reading] = {}
    for group in forward_groups(list(wanted), batch_size):
        readings.update(_read_group(loaded.model, group, wanted, dtype, top_k))
    decoded = {} if decoded is None else decoded
    return [_assemble(loaded, plan, readings, dtype, decoded) for plan in plans]


def score(loaded: Any, plan: CutPlan, softmax_dtype: str | None = None, top_k: int = 5) -> RunScore:
    """P(correct), P(wrong) and the top-k at the cut, in the model's dtype by default.

    One pass at the context, one per extra chain step, and one at the full prompt for
    the naive reading when it differs (identical contexts are run once).
    """
    return score_batch(loaded, [plan], softmax_dtype=softmax_dtype, top_k=top_k)[0]
