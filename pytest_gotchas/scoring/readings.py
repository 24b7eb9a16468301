"""The forward passes at the cut, and the readings taken from them.

Two readings of P(correct) and P(wrong) come from the same passes:

- ``text`` (the default verdict): the probability that the model's output, as text, continues with the candidate.
  From the backed-off context of the cut plan (cut.py), with s = the prompt text after that context + the candidate:
  P(s) = the sum of p(v) over the tokens v whose text starts with s, plus, for each token v whose text is a proper
  prefix of s, p(v) * P(rest of s | context + v). Every tokenization the model could produce is counted; branches
  below MIN_BRANCH, deeper than MAX_DEPTH tokens or past MAX_PASSES contexts are not followed, and the mass they
  could hold is reported as ``neglected`` (an upper bound), never hidden. The sum is taken in float64 and rounded to
  the softmax dtype, like every other probability of the run.
- ``token``: the write-up's reading: one token per candidate at the cut (plain), at the backed-off context (healed), or
  a product along a chain (multi-token); ``plain`` beside it when the cut is not plain.

The passes themselves, one full forward pass per prompt, are rows.py's.

Each context's logits go through the softmax in the model's dtype (the write-up's probabilities are bfloat16 values)
and in float32, so that every run also says what the other softmax would give (``other-softmax``). torch is imported
inside the functions that need it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..backends.protocol import Backend, Role
from .cut import CutPlan
from ..results.schema import Reading, TopToken
from ..results.verdict import run_verdict
from .rows import (MAX_DEPTH, REFEED, Context, OnePassRows, Probabilities, Rows, model_dtype, needs_plain,
                   resolve_softmax_dtype, round_to, token_contexts)
from .tree import Ahead
from .vocab import Vocab
from ..results.vocabulary import ReadingKind, ReadingName

MIN_BRANCH = 1e-4  # a chain through a shorter token is followed while its probability so far is at least this
MAX_PASSES = 32  # contexts (incremental steps, or passes of the check) the text reading may add per run
AHEAD = 1  # levels of a prompt's trie computed before the readings know they need them (look_ahead)
SHOWN, SHOWN_FROM = 5, 1e-4  # contributions listed per candidate, and the least of them


@dataclass(frozen=True)
class Scored:
    """What the passes gave for one plan: its readings by name, and the top-k at the token reading's context."""

    readings: dict[str, Reading]
    top: list[TopToken]
    forward_passes: int  # full passes this run added (the main pass, and any a context could not be stepped to)
    incremental_steps: int = 0  # KV-cached steps this run added
    checked: dict[str, Reading] = field(default_factory=dict)  # --gotchas-one-pass-check: the readings recomputed


def _chain(plan: CutPlan, chain: tuple[int, ...], rows: Probabilities, other: bool) -> float:
    # Python floats: a product of a few bfloat16 values is exact in float64.
    p = 1.0
    for i, token in enumerate(chain):
        p *= rows.p(plan.context_ids + chain[:i], token, other)
    return p


def token_reading(plan: CutPlan, rows: Probabilities, dtype: str, other: bool = False) -> Reading:
    pc, pw = _chain(plan, plan.correct_ids, rows, other), _chain(plan, plan.wrong_ids, rows, other)
    return Reading(pc, pw, run_verdict(pc, pw), plan.kind, dtype, list(plan.correct_tokens), list(plan.wrong_tokens))


def _plain_reading(plan: CutPlan, rows: Rows, dtype: str, decode: Callable[[int], str]) -> Reading:
    pc, pw = rows.p(plan.prompt_ids, plan.plain_correct_id), rows.p(plan.prompt_ids, plan.plain_wrong_id)
    return Reading(pc, pw, run_verdict(pc, pw), ReadingKind.PLAIN, dtype, [decode(plan.plain_correct_id)],
                   [decode(plan.plain_wrong_id)])


@dataclass
class _Text:
    """The text probability of one candidate, as it is summed."""

    total: float = 0.0
    neglected: float = 0.0
    parts: list[tuple[float, tuple[int, ...]]] = field(default_factory=list)  # (p, the token path)


def text_probability(rows: Probabilities, vocab: Vocab, context: Context, text: bytes, other: bool = False,
                     budget: list[int] | None = None) -> _Text:
    """P(the output continues with `text` | context), breadth first along chains through shorter tokens."""
    budget = budget if budget is not None else [MAX_PASSES]
    out = _Text()
    level: list[tuple[Context, bytes, float, tuple[int, ...]]] = [(context, text, 1.0, ())]
    while level:
        rows.need([c for c, _, _, _ in level])
        following = []
        for ctx, rest, weight, path in level:
            extending = vocab.extending(rest)
            out.total += weight * rows.total(ctx, extending, other)
            out.parts.extend((weight * p, (*path, v)) for p, v in rows.largest(ctx, extending, SHOWN, other))
            for token, length in vocab.proper_prefixes(rest):
                p = weight * rows.p(ctx, token, other)
                if p < MIN_BRANCH or len(path) + 1 >= MAX_DEPTH or budget[0] <= 0:
                    out.neglected += p
                    continue
                budget[0] -= 1
                following.append((ctx + (token,), rest[length:], p, (*path, token)))
        level = following
    return out


def _sides(plan: CutPlan, prompt: str, correct: str, wrong: str, rows: Probabilities, vocab: Vocab,
           other: bool = False) -> list[_Text]:
    """The text probability of each candidate, their chains sharing one budget of contexts."""
    rest = prompt[len(prompt) - plan.backed_off_chars:] if plan.backed_off_chars else ""
    budget = [MAX_PASSES]
    return [text_probability(rows, vocab, plan.context_ids, (rest + candidate).encode(), other, budget)
            for candidate in (correct, wrong)]


def text_reading(plan: CutPlan, prompt: str, correct: str, wrong: str, rows: Probabilities, vocab: Vocab, dtype: str,
                  decode: Callable[[int], str], other: bool = False) -> Reading:
    sides = _sides(plan, prompt, correct, wrong, rows, vocab, other)

    def shown(side: _Text) -> list[str]:
        best = sorted((part for part in side.parts if part[0] >= SHOWN_FROM), key=lambda part: (-part[0], part[1]))
        return [f"{'+'.join(repr(decode(t)) for t in path)} {p * 100:.2f}%" for p, path in best[:SHOWN]]

    pc, pw = (round_to(side.total, dtype) for side in sides)
    return Reading(pc, pw, run_verdict(pc, pw), ReadingKind.TEXT, dtype, shown(sides[0]), shown(sides[1]),
                   neglected=sides[0].neglected + sides[1].neglected)


@dataclass(frozen=True)
class Cut:
    """One run to read: its plan and its texts (a plan alone gets no text reading)."""

    plan: CutPlan
    prompt: str = ""
    correct: str = ""
    wrong: str = ""


class Batch(list):  # type: ignore[type-arg]
    """The Scored of each cut, in order, and what the passes cost (of the model, and of its float32 copy); the
    check's separate passes apart."""

    def __init__(self, scored: list[Scored], rows: Sequence[Rows], check: Sequence[Rows] | None = None) -> None:
        super().__init__(scored)
        self.passes = sum(r.full for r in rows)  # full forward passes
        self.calls = sum(r.calls for r in rows)  # model calls for them: fewer when batch_size grouped some
        self.tokens = sum(r.tokens for r in rows)  # tokens of the full passes
        self.steps = sum(r.steps for r in rows)  # contexts computed on a KV cache, one call each or in a tree
        self.step_tokens = sum(r.step_tokens for r in rows)
        self.tree_calls = sum(r.tree_calls for r in rows)  # calls that computed a tree of them
        self.tree_contexts = sum(r.tree_contexts for r in rows)
        self.check_passes = sum(r.full for r in check or [])  # --gotchas-one-pass-check: its separate passes


def look_ahead(cut: Cut, rows: Probabilities, vocab: Vocab, walks: tuple[bool, ...]) -> None:
    """Where `rows` compute a tree (OnePassRows on a model that takes one), every context the text readings of `cut`
    will read (one `walks` entry per reading: whether it reads the other softmax), in as few calls as their chains
    allow: each call holds the contexts that the rows computed so far decide, and, AHEAD levels past them, every
    chain the readings could follow (tree.Ahead); a chain deeper still gets the next call. Elsewhere nothing: steps
    and separate passes compute what a reading asks for, when it asks."""
    if not (isinstance(rows, OnePassRows) and rows.tree):
        return
    while True:
        wanted: set[Context] = set()
        for depth in sorted({0, AHEAD}):
            for other in walks:
                ahead = Ahead(rows, depth)
                _sides(cut.plan, cut.prompt, cut.correct, cut.wrong, ahead, vocab, other)
                wanted |= ahead.wanted
        if not wanted:
            return
        rows.need(wanted)


def read_cut(cut: Cut, rows: Probabilities, dtype: str, other_dtype: str | None, table: Vocab | None,
             decode: Callable[[int], str], main: str = ReadingName.TOKEN,
             exact: Probabilities | None = None) -> dict[str, Reading]:
    """Every reading of one cut from `rows` (and the float32 copy's `exact`): the same code whichever way the rows
    are computed, so that one pass and separate passes can only differ by their numbers."""
    plan = cut.plan
    rows.need(token_contexts(plan))
    readings: dict[str, Reading] = {}
    texts = (plan, cut.prompt, cut.correct, cut.wrong)
    if table is not None:
        look_ahead(cut, rows, table, (False, True) if other_dtype is not None and main == ReadingName.TEXT else (False,))
        readings[ReadingName.TEXT] = text_reading(*texts, rows, table, dtype, decode)
    readings[ReadingName.TOKEN] = token_reading(plan, rows, dtype)
    if needs_plain(plan):
        readings[ReadingName.PLAIN] = _plain_reading(plan, rows, dtype, decode)  # type: ignore[arg-type]
    if other_dtype is not None:
        readings[ReadingName.OTHER_SOFTMAX] = (text_reading(*texts, rows, table, other_dtype, decode, other=True)  # type: ignore
                                   if main == ReadingName.TEXT else token_reading(plan, rows, other_dtype, other=True))
    if exact is not None:
        exact.need(token_contexts(plan))
        if main == ReadingName.TEXT and table is not None:
            look_ahead(cut, exact, table, (False,))
        readings[ReadingName.PRECISION] = (text_reading(*texts, exact, table, "float32", decode)  # type: ignore[arg-type]
                               if main == ReadingName.TEXT else token_reading(plan, exact, "float32"))
    return readings


def score_batch(loaded: Backend, cuts: list[Cut] | list[CutPlan], softmax_dtype: str | None = None, top_k: int = 5,
                batch_size: int = 1, decoded: dict[int, str] | None = None, vocab: Callable[[], Vocab] | None = None,
                main: str = ReadingName.TOKEN, precision: Any = None, check: bool = False, refeed: int = REFEED,
                rows_of: Callable[[str, int, int, int], Any] | None = None) -> Batch:
    """Every reading of several cuts: one full pass per distinct prompt, every other context read from it (an
    earlier position, or an incremental step on its KV cache; see OnePassRows).

    With ``batch_size`` > 1 only prompts of identical length share a pass. Batched results were bit-identical to
    ``batch_size=1`` on most CPUs (tests/unit/scoring/test_token_reading.py checks it on the tiny model; it held on
    gemma-3-270m too), not on an Intel AVX-512 Xeon without BF16, where scoring runs each prompt alone
    (model/invariance.py). GPU kernels may pick a different reduction order for a different batch shape, which is
    why the default stays 1.

    ``decoded`` (token id -> text) is read before the tokenizer is asked, and extended with what it answers.
    ``vocab`` gives the token texts the text reading needs; without it there is no text reading. ``main`` names
    the reading the verdict comes from: ``other-softmax`` is that reading through the other softmax dtype, and with
    a float32 copy of the model as ``precision`` the reading ``precision`` is that reading computed in float32.
    ``check``: also compute every reading again with separate full passes (Rows), into each Scored's ``checked``.
    ``rows_of(softmax dtype, batch_size, top_k, refeed)``: the rows of a backend that gives logits rows by
    context (scoring/engine_rows.py): an engine's (``loaded.role``), whose ``loaded.dtype`` names the logits' dtype.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    cuts = [cut if isinstance(cut, Cut) else Cut(cut) for cut in cuts]
    plans = [cut.plan for cut in cuts]
    module = loaded.model if loaded.role is Role.MODULE else None  # None: an engine's rows come through `rows_of`
    dtype = resolve_softmax_dtype(loaded.dtype if module is None else model_dtype(module), softmax_dtype)
    rows = (OnePassRows(module, dtype, batch_size, top_k, refeed) if rows_of is None
            else rows_of(dtype, batch_size, top_k, refeed))
    rows.prompts(plans)
    exact = OnePassRows(precision, "float32", batch_size, top_k, refeed) if precision is not None else None
    if exact is not None:
        exact.prompts(plans)
    separate = Rows(module, dtype, batch_size, top_k) if check else None
    separate_exact = Rows(precision, "float32", batch_size, top_k) if check and precision is not None else None
    known = {} if decoded is None else decoded

    def decode(token: int) -> str:
        if token not in known:  # the tokenizer is touched only for a text not known yet (see cutcache.py)
            known[token] = loaded.tokenizer.decode([token])
        return known[token]

    table = vocab() if vocab is not None and all(cut.prompt for cut in cuts) else None
    claimed: set[Context] = set()
    scored: list[Scored] = []
    for cut in cuts:
        plan = cut.plan
        # The main pass (and the full passes of token-reading contexts outside it) is the first run's that needs
        # it; passes and steps while reading are the run's that caused them.
        own = ((token_contexts(plan) | {plan.prompt_ids}) & set(rows.full_contexts)) - claimed
        claimed |= own
        with rows.asking(len(scored)):
            readings = read_cut(cut, rows, dtype, rows.other_dtype, table, decode, main, exact)
        checked = (read_cut(cut, separate, dtype, separate.other_dtype, table, decode, main, separate_exact)
                   if separate is not None else {})
        top = [TopToken(decode(i), p) for i, p in rows.top[plan.context_ids]]
        full, steps = rows.caused.get(len(scored), (0, 0))
        scored.append(Scored(readings, top, len(own) + full, steps, checked))
    used = [rows] + ([exact] if exact is not None else [])
    return Batch(scored, used, [r for r in (separate, separate_exact) if r is not None])


def score(loaded: Backend, plan: CutPlan, softmax_dtype: str | None = None, top_k: int = 5) -> Scored:
    """The token readings and the top-k at one cut, in the model's dtype by default."""
    return score_batch(loaded, [plan], softmax_dtype=softmax_dtype, top_k=top_k)[0]
