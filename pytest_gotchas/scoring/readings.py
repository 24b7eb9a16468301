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

One full forward pass per prompt (the write-up's method), in OnePassRows: the main pass runs over the prompt's own
tokens (BOS included) and keeps the logits of every position a reading asks for (``logits_to_keep`` as a tensor of
positions): the full prompt (the plain reading), the backed-off context one or two tokens earlier, and every chain
or text context that is still inside the prompt. Row by row these equal separate passes over the shorter contexts
bit for bit (tests/unit/scoring/test_one_pass.py; measured on both embedded models, bench/onepass.py).

The text reading's chains past the prompt (`F` then `alse`) are incremental steps on the KV cache of the pass they
extend: the cache cropped to the shared prefix less REFEED tokens, those fed again with the new ones. A step is one
token's compute instead of a whole prompt's, but not the same arithmetic: the attention kernels compute a row of a
short query differently, and in bfloat16 on this project's AMD EPYC (AVX2) 21 of 41 step rows of the spec's prompts
differed from separate passes in their last bits (6 of 41 with 8 tokens re-fed; bench/onepass.py), which moved text
readings but no verdict. So the steps are named: each Run counts its ``incremental_steps``, the summary says how many
there were, and --gotchas-one-pass-check recomputes every reading with Rows (one full pass per context,
``use_cache=False``: the method before) and lists what differs. The token reading, the write-up's, takes no steps: a
context of it that is not inside the prompt's pass (a chain token past the prompt, a back-off that BPE retokenized
so that it is no prefix of the prompt's tokens) gets a full pass of its own, counted, so that it always equals plain
separate passes bit for bit.

Each context's logits go through the softmax in the model's dtype (the write-up's probabilities are bfloat16 values)
and in float32, so that every run also says what the other softmax would give (``other-softmax``). torch is imported
inside the functions that need it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .cut import CutPlan
from ..results.schema import OTHER_SOFTMAX, PLAIN, PRECISION, TEXT, TOKEN, Reading, TopToken
from ..results.verdict import run_verdict
from .vocab import Vocab

Context = tuple[int, ...]
MIN_BRANCH = 1e-4  # a chain through a shorter token is followed while its probability so far is at least this
MAX_DEPTH = 8  # tokens along one chain
MAX_PASSES = 32  # contexts (incremental steps, or passes of the check) the text reading may add per run
REFEED = 1  # tokens an incremental step computes again, its new one included (1: only the new token)
SHOWN, SHOWN_FROM = 5, 1e-4  # contributions listed per candidate, and the least of them


@dataclass(frozen=True)
class Scored:
    """What the passes gave for one plan: its readings by name, and the top-k at the token reading's context."""

    readings: dict[str, Reading]
    top: list[TopToken]
    forward_passes: int  # full passes this run added (the main pass, and any a context could not be stepped to)
    incremental_steps: int = 0  # KV-cached steps this run added
    checked: dict[str, Reading] = field(default_factory=dict)  # --gotchas-one-pass-check: the readings recomputed


def _needs_plain(plan: CutPlan) -> bool:
    naive = (plan.plain_correct_id, plan.plain_wrong_id)
    return plan.kind != "plain" or naive != (plan.correct_ids[0], plan.wrong_ids[0])


def _reads(plan: CutPlan) -> set[Context]:
    """Every context the token reading of this plan needs a pass for."""
    contexts = {plan.context_ids}
    for chain in (plan.correct_ids, plan.wrong_ids):
        contexts.update(plan.context_ids + chain[:i] for i in range(1, len(chain)))
    if _needs_plain(plan):
        contexts.add(plan.prompt_ids)
    return contexts


def forward_contexts(plans: list[CutPlan]) -> set[Context]:
    """Every context the token readings of the plans need (each once)."""
    return set().union(*(_reads(plan) for plan in plans)) if plans else set()


def forward_groups(contexts: list[Context], batch_size: int) -> list[list[Context]]:
    """Batches of equal-length contexts, so that no padding is ever needed (padding changes bfloat16 logits)."""
    by_length: dict[int, list[Context]] = {}
    for context in contexts:
        by_length.setdefault(len(context), []).append(context)
    groups: list[list[Context]] = []
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


def round_to(total: float, dtype: str) -> float:
    """A sum as the softmax dtype holds it: mass that dtype cannot resolve (a chain's 1e-7 beside 0.47 in bfloat16)
    must not turn one of its exact ties into a verdict."""
    import torch

    return float(torch.tensor(total, dtype=torch.float64).to(getattr(torch, dtype)))


class Probabilities(Protocol):
    """What the readings ask of a source of next-token probabilities (Rows here; a layer's in layers.py)."""

    def need(self, contexts: set[Context] | list[Context]) -> None: ...

    def p(self, context: Context, token: int, other: bool = False) -> float: ...

    def total(self, context: Context, tokens: list[int], other: bool = False) -> float: ...

    def largest(self, context: Context, tokens: list[int], k: int, other: bool = False) -> list[tuple[float, int]]: ...


def largest(row: Any, tokens: list[int], k: int) -> list[tuple[float, int]]:
    """The k most probable of `tokens` in a row of probabilities, as (p, token), largest first."""
    import torch

    if not tokens:
        return []
    index = torch.tensor(tokens, dtype=torch.long)
    values, at = torch.topk(row[index], min(k, len(tokens)))
    return [(p, tokens[i]) for p, i in zip(values.tolist(), at.tolist())]


class Rows:
    """Next-token probabilities of contexts, each computed once, in both softmax dtypes: one full forward pass per
    context (``logits_to_keep=1``, no KV cache). The method before one-pass scoring, and the check's."""

    def __init__(self, model: Any, softmax_dtype: str, batch_size: int, top_k: int) -> None:
        self.model, self.softmax_dtype, self.batch_size, self.top_k = model, softmax_dtype, batch_size, top_k
        self.other_dtype = None if model_dtype(model) == "float32" else (
            model_dtype(model) if softmax_dtype == "float32" else "float32")
        self.main: dict[Context, Any] = {}
        self.other: dict[Context, Any] = {}
        self.top: dict[Context, tuple[tuple[int, float], ...]] = {}
        self.calls = 0  # model calls for full passes: fewer than passes when batch_size grouped some
        self.full = 0  # full forward passes (contexts run from their first token)
        self.tokens = 0  # tokens of the full passes
        self.steps = 0  # incremental steps on a KV cache (OnePassRows)
        self.step_tokens = 0  # tokens the steps fed

    def need(self, contexts: set[Context] | list[Context]) -> None:
        missing = sorted(c for c in set(contexts) if c not in self.main)
        for group in forward_groups(missing, self.batch_size):
            self._run(group)

    def _run(self, group: list[Context]) -> None:
        import torch

        input_ids = torch.tensor(group, dtype=torch.long, device=self.model.device)
        with torch.inference_mode():
            logits = self.model(input_ids=input_ids, logits_to_keep=1, use_cache=False).logits[:, -1, :]
        self._count(group)
        self._keep(group, logits)

    def _count(self, group: list[Context]) -> None:
        self.calls += 1
        self.full += len(group)
        self.tokens += sum(len(c) for c in group)

    def _keep(self, contexts: list[Context], logits: Any) -> None:
        """Store the rows of `logits` (one per context) through both softmax dtypes, and their top-k."""
        import torch

        with torch.inference_mode():
            in_model_dtype = torch.softmax(logits, dim=-1)
            in_float32 = torch.softmax(logits.float(), dim=-1) if logits.dtype != torch.float32 else None
            probs, other = in_model_dtype, in_float32
            if self.softmax_dtype == "float32" and in_float32 is not None:
                probs, other = in_float32, in_model_dtype
            top_p, top_i = torch.topk(probs, k=min(self.top_k, probs.shape[-1]), dim=-1)
        for n, context in enumerate(contexts):
            if context in self.main:
                continue
            self.main[context] = probs[n].cpu()
            if other is not None:
                self.other[context] = other[n].cpu()
            # Ties in the list are ordered by token id, never by whatever topk returned.
            self.top[context] = tuple(sorted(zip(top_i[n].tolist(), top_p[n].tolist()),
                                             key=lambda item: (-item[1], item[0])))

    def p(self, context: Context, token: int, other: bool = False) -> float:
        return float((self.other if other else self.main)[context][token])

    def total(self, context: Context, tokens: list[int], other: bool = False) -> float:
        """The probability of any of `tokens`, summed in float64 (exact for a few bfloat16 values)."""
        if not tokens:
            return 0.0
        import torch

        row = (self.other if other else self.main)[context]
        return float(row[torch.tensor(tokens, dtype=torch.long)].double().sum())

    def largest(self, context: Context, tokens: list[int], k: int, other: bool = False) -> list[tuple[float, int]]:
        return largest((self.other if other else self.main)[context], tokens, k)


def _is_prefix(short: Context, long: Context) -> bool:
    return len(short) <= len(long) and long[: len(short)] == short


def _shared(a: Context, b: Context) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def main_positions(plan: CutPlan) -> set[int]:
    """The positions of the prompt's main pass whose logits the readings of this plan read: the last (the plain
    reading), and, when the backed-off context is a prefix of the prompt's tokens, every position from the back-off
    on (the back-off itself, and the chain and text contexts that are still inside the prompt)."""
    prompt = plan.prompt_ids
    positions = {len(prompt) - 1}
    if _is_prefix(plan.context_ids, prompt):
        positions.update(range(len(plan.context_ids) - 1, len(prompt)))
    positions.update(len(c) - 1 for c in _reads(plan) if _is_prefix(c, prompt))
    return positions


def _cache_of(output: Any) -> Any:
    cache = getattr(output, "cache", None)  # transformers >= 5.2x names it `cache`; earlier, `past_key_values`
    return cache if cache is not None else getattr(output, "past_key_values", None)


def _extendable(cache: Any, length: int) -> bool:
    """Whether a copy of `cache` can be cropped and extended to a context of `length` tokens exactly as a full pass
    would compute it: dynamic layers only, every sliding window longer than the context (a sliding layer keeps only
    its window, and cannot be cropped back past it)."""
    layers = getattr(cache, "layers", None)
    if not layers:
        return False
    for layer in layers:
        if type(layer).__name__ not in ("DynamicLayer", "DynamicSlidingWindowLayer"):
            return False
        window = getattr(layer, "sliding_window", None)
        if window is not None and length > int(window) - 1:
            return False
    return True


class OnePassRows(Rows):
    """Next-token probabilities with one full forward pass per prompt (see the module's docstring).

    ``prompts(plans)`` runs the main passes (equal-length prompts share a call under ``batch_size``, never padded),
    keeping the logits at every position the plans read and each pass's KV cache, then a full pass for each context
    of a token reading that no main pass holds; ``need`` computes any other missing context (the text reading's) as
    an incremental step on the cache that shares the longest prefix with it, or, where none can be extended to it,
    as a full pass of its own (counted in ``full``)."""

    def __init__(self, model: Any, softmax_dtype: str, batch_size: int, top_k: int, refeed: int = REFEED) -> None:
        super().__init__(model, softmax_dtype, batch_size, top_k)
        self.refeed = refeed
        self.caches: dict[Context, Any] = {}  # contexts run as full passes -> their KV cache (None: not extendable)
        self.full_contexts: list[Context] = []  # in the order they ran
        forward = getattr(model, "forward", None)
        try:
            import inspect

            names = inspect.signature(forward).parameters if forward is not None else {}
        except (TypeError, ValueError):
            names = {}
        self._cache_arg = "cache" if "cache" in names else "past_key_values"

    def prompts(self, plans: list[CutPlan]) -> None:
        """The main pass of each distinct prompt, then a full pass for each context of a token reading that is not in
        one (a chain token past the prompt, a back-off that is no prefix of the prompt's tokens)."""
        keep: dict[Context, set[int]] = {}
        for plan in plans:
            keep.setdefault(plan.prompt_ids, set()).update(main_positions(plan))
        todo = sorted(c for c in keep if c not in self.caches)
        for group in forward_groups(todo, self.batch_size):
            self._full(group, sorted(set().union(*(keep[c] for c in group))))
        roots = sorted(forward_contexts(plans) - set(self.main))
        for group in forward_groups(roots, self.batch_size):
            self._full(group, [len(group[0]) - 1])

    def need(self, contexts: set[Context] | list[Context]) -> None:
        fulls = []
        for context in sorted(c for c in set(contexts) if c not in self.main):
            base, shared = self._base(context)
            if base is None:
                fulls.append(context)
            else:
                self._step(context, base, shared)
        for group in forward_groups(fulls, self.batch_size):
            self._full(group, [len(group[0]) - 1])

    def _base(self, context: Context) -> tuple[Context | None, int]:
        """The full pass whose cache shares the longest prefix with `context`, and that prefix's length; None when
        no cache can be extended to it within MAX_DEPTH new tokens."""
        best, shared = None, 0
        for base, cache in self.caches.items():
            n = _shared(base, context)
            if n > shared and cache is not None and _extendable(cache, max(len(base), len(context))):
                best, shared = base, n
        if best is None or len(context) - shared > MAX_DEPTH:
            return None, 0
        return best, shared

    def _full(self, group: list[Context], positions: list[int]) -> None:
        import torch

        input_ids = torch.tensor(group, dtype=torch.long, device=self.model.device)
        keep: Any = 1 if positions == [len(group[0]) - 1] else torch.tensor(positions, device=self.model.device)
        with torch.inference_mode():
            output = self.model(input_ids=input_ids, logits_to_keep=keep, use_cache=True)
        self._count(group)
        self.full_contexts.extend(group)
        logits = output.logits
        for j, position in enumerate(positions):
            self._keep([c[: position + 1] for c in group], logits[:, j, :])
        cache = _cache_of(output)
        for n, context in enumerate(group):
            self.caches[context] = cache if len(group) == 1 or cache is None else self._row_of(cache, n)

    @staticmethod
    def _row_of(cache: Any, n: int) -> Any:
        import copy

        import torch

        one = copy.deepcopy(cache)
        try:
            one.batch_select_indices(torch.tensor([n]))
        except (AttributeError, NotImplementedError, TypeError):
            return None
        return one

    def _step(self, context: Context, base: Context, shared: int) -> None:
        """`context` from the cache of `base`: cropped to `start` tokens, then fed the rest (REFEED tokens again, at
        least one)."""
        import copy

        import torch

        start = max(1, min(shared, len(context) - self.refeed))
        cache = copy.deepcopy(self.caches[base])
        cache.crop(start - len(base))
        feed = torch.tensor([context[start:]], dtype=torch.long, device=self.model.device)
        with torch.inference_mode():
            output = self.model(input_ids=feed, logits_to_keep=1, use_cache=True, **{self._cache_arg: cache})
        self.steps += 1
        self.step_tokens += len(context) - start
        self._keep([context], output.logits[:, -1, :])


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
    return Reading(pc, pw, run_verdict(pc, pw), "plain", dtype, [decode(plan.plain_correct_id)],
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


def text_reading(plan: CutPlan, prompt: str, correct: str, wrong: str, rows: Probabilities, vocab: Vocab, dtype: str,
                  decode: Callable[[int], str], other: bool = False) -> Reading:
    rest = prompt[len(prompt) - plan.backed_off_chars:] if plan.backed_off_chars else ""
    budget = [MAX_PASSES]
    sides = [text_probability(rows, vocab, plan.context_ids, (rest + candidate).encode(), other, budget)
             for candidate in (correct, wrong)]

    def shown(side: _Text) -> list[str]:
        best = sorted((part for part in side.parts if part[0] >= SHOWN_FROM), key=lambda part: (-part[0], part[1]))
        return [f"{'+'.join(repr(decode(t)) for t in path)} {p * 100:.2f}%" for p, path in best[:SHOWN]]

    pc, pw = (round_to(side.total, dtype) for side in sides)
    return Reading(pc, pw, run_verdict(pc, pw), "text", dtype, shown(sides[0]), shown(sides[1]),
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
        self.steps = sum(r.steps for r in rows)  # incremental steps on a KV cache
        self.step_tokens = sum(r.step_tokens for r in rows)
        self.check_passes = sum(r.full for r in check or [])  # --gotchas-one-pass-check: its separate passes


def read_cut(cut: Cut, rows: Probabilities, dtype: str, other_dtype: str | None, table: Vocab | None,
             decode: Callable[[int], str], main: str = TOKEN, exact: Probabilities | None = None) -> dict[str, Reading]:
    """Every reading of one cut from `rows` (and the float32 copy's `exact`): the same code whichever way the rows
    are computed, so that one pass and separate passes can only differ by their numbers."""
    plan = cut.plan
    rows.need(_reads(plan))
    readings: dict[str, Reading] = {}
    texts = (plan, cut.prompt, cut.correct, cut.wrong)
    if table is not None:
        readings[TEXT] = text_reading(*texts, rows, table, dtype, decode)
    readings[TOKEN] = token_reading(plan, rows, dtype)
    if _needs_plain(plan):
        readings[PLAIN] = _plain_reading(plan, rows, dtype, decode)  # type: ignore[arg-type]
    if other_dtype is not None:
        readings[OTHER_SOFTMAX] = (text_reading(*texts, rows, table, other_dtype, decode, other=True)  # type: ignore
                                   if main == TEXT else token_reading(plan, rows, other_dtype, other=True))
    if exact is not None:
        exact.need(_reads(plan))
        readings[PRECISION] = (text_reading(*texts, exact, table, "float32", decode)  # type: ignore[arg-type]
                               if main == TEXT else token_reading(plan, exact, "float32"))
    return readings


def score_batch(loaded: Any, cuts: list[Cut] | list[CutPlan], softmax_dtype: str | None = None, top_k: int = 5,
                batch_size: int = 1, decoded: dict[int, str] | None = None, vocab: Callable[[], Vocab] | None = None,
                main: str = TOKEN, precision: Any = None, check: bool = False, refeed: int = REFEED,
                rows_of: Callable[[str, int, int, int], Any] | None = None) -> Batch:
    """Every reading of several cuts: one full pass per distinct prompt, every other context read from it (an
    earlier position, or an incremental step on its KV cache; see OnePassRows).

    With ``batch_size`` > 1 only prompts of identical length share a pass. Batched results were bit-identical to
    ``batch_size=1`` on CPU (tests/unit/scoring/test_token_reading.py checks it on the tiny model; it held on
    gemma-3-270m too). GPU kernels may pick a different reduction order for a different batch shape, which is why
    the default stays 1.

    ``decoded`` (token id -> text) is read before the tokenizer is asked, and extended with what it answers.
    ``vocab`` gives the token texts the text reading needs; without it there is no text reading. ``main`` names
    the reading the verdict comes from: ``other-softmax`` is that reading through the other softmax dtype, and with
    a float32 copy of the model as ``precision`` the reading ``precision`` is that reading computed in float32.
    ``check``: also compute every reading again with separate full passes (Rows), into each Scored's ``checked``.
    ``rows_of(softmax dtype, batch_size, top_k, refeed)``: the rows of another backend (scoring/vllm_rows.py).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    cuts = [cut if isinstance(cut, Cut) else Cut(cut) for cut in cuts]
    plans = [cut.plan for cut in cuts]
    dtype = resolve_softmax_dtype(loaded.model, softmax_dtype)
    rows = (OnePassRows(loaded.model, dtype, batch_size, top_k, refeed) if rows_of is None
            else rows_of(dtype, batch_size, top_k, refeed))
    rows.prompts(plans)
    exact = OnePassRows(precision, "float32", batch_size, top_k, refeed) if precision is not None else None
    if exact is not None:
        exact.prompts(plans)
    separate = Rows(loaded.model, dtype, batch_size, top_k) if check else None
    separate_exact = Rows(precision, "float32", batch_size, top_k) if check and precision is not None else None
    known = {} if decoded is None else decoded

    def decode(token: int) -> str:
        if token not in known:  # the tokenizer is touched only for a text not known yet (see cutcache.py)
            known[token] = loaded.tokenizer.decode([token])
        return known[token]

    table = vocab() if vocab is not None and all(cut.prompt for cut in cuts) else None
    claimed: set[Context] = set()
    scored = []
    for cut in cuts:
        plan = cut.plan
        # The main pass (and the full passes of token-reading contexts outside it) is the first run's that needs
        # it; passes and steps while reading are the run's that caused them.
        own = ((_reads(plan) | {plan.prompt_ids}) & set(rows.full_contexts)) - claimed
        claimed |= own
        full, steps = rows.full, rows.steps
        readings = read_cut(cut, rows, dtype, rows.other_dtype, table, decode, main, exact)
        checked = (read_cut(cut, separate, dtype, separate.other_dtype, table, decode, main, separate_exact)
                   if separate is not None else {})
        top = [TopToken(decode(i), p) for i, p in rows.top[plan.context_ids]]
        scored.append(Scored(readings, top, len(own) + rows.full - full, rows.steps - steps, checked))
    used = [rows] + ([exact] if exact is not None else [])
    return Batch(scored, used, [r for r in (separate, separate_exact) if r is not None])


def score(loaded: Any, plan: CutPlan, softmax_dtype: str | None = None, top_k: int = 5) -> Scored:
    """The token readings and the top-k at one cut, in the model's dtype by default."""
    return score_batch(loaded, [plan], softmax_dtype=softmax_dtype, top_k=top_k)[0]
