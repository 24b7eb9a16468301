"""Tokenization at the cut, pure (the tokenizer only, no model): which token ids stand for each candidate.

tokenize(prompt + candidate) is often not tokenize(prompt) + [token]: Gemma merges "),", ")]" and "'." into single
tokens. ``plan_cut`` backs off to the longest token prefix both continuations share and reads each candidate from
there as the chain of its tokens up to the first one that reaches past the cut: one token each is "plain" when the
context is the prompt's own tokens, "healed" when it is shorter, and a "chain" otherwise. A cut the tokenizer cannot
represent (unknown tokens, a normalising tokenizer, a chain longer than MAX_CHAIN) is a CutError that shows the tokens.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..results.vocabulary import ReadingKind

Context = tuple[int, ...]  # token ids fed to the model, BOS included: what a row of next-token probabilities follows
MAX_CHAIN = 8  # tokens per side; longer chains mean the cut is nowhere near a token boundary
TAIL_TOKENS = 4  # prompt tokens shown in a CutError
REGION_TOKENS = 12  # candidate-side tokens shown in a CutError


@dataclass(frozen=True)
class CutPlan:
    """Which ids to read where. Pure data, computed from the tokenizer only."""

    kind: ReadingKind  # PLAIN, HEALED or CHAIN
    context_ids: tuple[int, ...]  # fed to the model (with BOS); ends at a clean token boundary
    correct_ids: tuple[int, ...]  # 1 token for plain/healed; the chain for "chain"
    wrong_ids: tuple[int, ...]
    correct_tokens: tuple[str, ...]
    wrong_tokens: tuple[str, ...]
    backed_off_chars: int  # prompt characters the context stops short of the cut
    plain_correct_id: int  # naive reading: first token of tokenizer(candidate) at the full prompt
    plain_wrong_id: int
    prompt_ids: tuple[int, ...]  # tokenizer(prompt), where the naive reading is taken
    bos: str | None = None  # the special token the context starts with ("<bos>"), or None


class CutError(Exception):
    """The cut cannot be represented by this tokenizer (or the candidates are unusable)."""


@dataclass(frozen=True)
class _Encoding:
    ids: tuple[int, ...]
    offsets: tuple[tuple[int, int], ...]
    special: tuple[bool, ...]  # added by the tokenizer (BOS ...), not text


def _encode(tokenizer: Any, text: str, bos: str = "auto") -> _Encoding:
    enc = tokenizer(text, return_offsets_mapping=True, return_special_tokens_mask=True)
    ids = tuple(enc["input_ids"])
    offsets = tuple(tuple(o) for o in enc["offset_mapping"])
    special = tuple(bool(s) for s in enc["special_tokens_mask"])
    first = tokenizer.bos_token_id
    if bos == "always" and first is not None and ids[:1] != (first,):
        ids, offsets, special = (first, *ids), ((0, 0), *offsets), (True, *special)
    elif bos == "never" and first is not None and ids[:1] == (first,):
        ids, offsets, special = ids[1:], offsets[1:], special[1:]
    # Trailing added tokens (an EOS some tokenizers append) are not part of a prompt.
    end = len(ids)
    while end and special[end - 1]:
        end -= 1
    return _Encoding(ids[:end], offsets[:end], special[:end])


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading ids the two sequences share."""
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


def _kind(context: Sequence[int], correct_ids: Sequence[int], wrong_ids: Sequence[int],
          prompt_ids: Sequence[int]) -> ReadingKind:
    """plain: one token a side after the prompt's own tokens; healed: one token a side after a shorter context;
    chain: a side needs more than one token."""
    if len(correct_ids) == 1 and len(wrong_ids) == 1:
        return ReadingKind.PLAIN if context == prompt_ids else ReadingKind.HEALED
    return ReadingKind.CHAIN


def plan_cut(tokenizer: Any, prompt: str, correct: str, wrong: str, bos: str = "auto") -> CutPlan:
    """Decide which tokens stand for each candidate at the cut after ``prompt``.

    The context is the longest token prefix shared by tokenize(prompt + correct) and
    tokenize(prompt + wrong). Each side is scored from there by its chain: the tokens
    up to and including the first one whose text reaches past the cut.

    ``bos``: "auto" follows the tokenizer's own convention (Gemma's adds <bos>; SmolLM2's, by its GGUF metadata,
    adds none), "always" puts the tokenizer's BOS token first, "never" leaves it out.
    """
    if bos == "always" and tokenizer.bos_token_id is None:
        raise CutError("--gotchas-bos always: this tokenizer has no BOS token")
    if not correct or not wrong or correct[0] == wrong[0]:
        raise CutError(
            f"candidates must be non-empty and differ in their first character: correct {correct!r}, wrong {wrong!r}"
        )
    cut = len(prompt)
    t = _encode(tokenizer, prompt, bos)
    a = _encode(tokenizer, prompt + correct, bos)
    b = _encode(tokenizer, prompt + wrong, bos)
    start = common_prefix(a.ids, b.ids)
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

    ends = _chain_end(a, start, cut), _chain_end(b, start, cut)
    assert ends[0] is not None and ends[1] is not None  # _side_problem refused a side with none
    correct_ids = a.ids[start : ends[0] + 1]
    wrong_ids = b.ids[start : ends[1] + 1]
    context = a.ids[:start]
    return CutPlan(
        kind=_kind(context, correct_ids, wrong_ids, t.ids),
        context_ids=context,
        correct_ids=correct_ids,
        wrong_ids=wrong_ids,
        correct_tokens=_tokens(tokenizer, correct_ids),
        wrong_tokens=_tokens(tokenizer, wrong_ids),
        backed_off_chars=cut - context_end,
        plain_correct_id=_first_token(tokenizer, correct, "correct"),
        plain_wrong_id=_first_token(tokenizer, wrong, "wrong"),
        prompt_ids=t.ids,
        bos=tokenizer.convert_ids_to_tokens(context[0]) if t.special[:1] == (True,) else None,
    )
