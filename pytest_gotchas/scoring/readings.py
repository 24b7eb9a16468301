"""The forward passes at the cut, and the readings taken from them.

Two readings of P(correct) and P(wrong) come from the same passes:

- ``text`` (the default verdict): the probability that the model's output, as text, continues with the candidate.
  From the backed-off context of the cut plan (cut.py), with s = the prompt text after that context + the candidate:
  P(s) = the sum of p(v) over the tokens v whose text starts with s, plus, for each token v whose text is a proper
  prefix of s, p(v) * P(rest of s | context + v). Every tokenization the model could produce is counted; branches
  below MIN_BRANCH, deeper than MAX_DEPTH tokens or past MAX_PASSES forward passes are not followed, and the mass they
  could hold is reported as ``neglected`` (an upper bound), never hidden. The sum is taken in float64 and rounded to
  the softmax dtype, like every other probability of the run.
- ``token``: the write-up's reading: one token per candidate at the cut (plain), at the backed-off context (healed), or
  a product along a chain (multi-token); ``plain`` beside it when the cut is not plain.

Only the last position's logits are computed (``logits_to_keep=1``: bit-identical and about 25% faster on CPU). Each
context's logits go through the softmax in the model's dtype (the write-up's probabilities are bfloat16 values) and
in float32, so that every run also says what the other softmax would give (``other-softmax``). torch is imported
inside the functions that need it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .cut import CutPlan
from ..results.schema import OTHER_SOFTMAX, PLAIN, PRECISION, TEXT, TOKEN, Reading, TopToken
from ..results.verdict import run_verdict
from .vocab import Vocab

Context = tuple[int, ...]
MIN_BRANCH = 1e-4  # a chain through a shorter token is followed while its probability so far is at least this
MAX_DEPTH = 8  # tokens along one chain
MAX_PASSES = 32  # forward passes the text reading may add per run
SHOWN, SHOWN_FROM = 5, 1e-4  # contributions listed per candidate, and the least of them


@dataclass(frozen=True)
class Scored:
    """What the passes gave for one plan: its readings by name, and the top-k at the token reading's context."""

    readings: dict[str, Reading]
    top: list[TopToken]
    forward_passes: int


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
    """Next-token probabilities of contexts, each computed once, in both softmax dtypes."""

    def __init__(self, model: Any, softmax_dtype: str, batch_size: int, top_k: int) -> None:
        self.model, self.softmax_dtype, self.batch_size, self.top_k = model, softmax_dtype, batch_size, top_k
        self.other_dtype = None if model_dtype(model) == "float32" else (
            model_dtype(model) if softmax_dtype == "float32" else "float32")
        self.main: dict[Context, Any] = {}
        self.other: dict[Context, Any] = {}
        self.top: dict[Context, tuple[tuple[int, float], ...]] = {}
        self.calls = 0

    def need(self, contexts: set[Context] | list[Context]) -> None:
        missing = sorted(c for c in set(contexts) if c not in self.main)
        for group in forward_groups(missing, self.batch_size):
            self._run(group)

    def _run(self, group: list[Context]) -> None:
        import torch

        input_ids = torch.tensor(group, dtype=torch.long, device=self.model.device)
        with torch.inference_mode():
            logits = self.model(input_ids=input_ids, logits_to_keep=1, use_cache=False).logits[:, -1, :]
            in_model_dtype = torch.softmax(logits, dim=-1)
            in_float32 = torch.softmax(logits.float(), dim=-1) if logits.dtype != torch.float32 else None
            probs, other = in_model_dtype, in_float32
            if self.softmax_dtype == "float32" and in_float32 is not None:
                probs, other = in_float32, in_model_dtype
            top_p, top_i = torch.topk(probs, k=min(self.top_k, probs.shape[-1]), dim=-1)
        self.calls += 1
        for n, context in enumerate(group):
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
    level = [(context, text, 1.0, ())]
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
    """The Scored of each cut, in order, and what the passes cost (of the model, and of its float32 copy)."""

    def __init__(self, scored: list[Scored], *rows: Rows) -> None:
        super().__init__(scored)
        self.passes = sum(len(r.main) for r in rows)  # contexts run
        self.calls = sum(r.calls for r in rows)  # model calls: fewer when batch_size grouped some
        self.tokens = sum(len(c) for r in rows for c in r.main)


def score_batch(loaded: Any, cuts: list[Cut] | list[CutPlan], softmax_dtype: str | None = None, top_k: int = 5, batch_size: int = 1,
                decoded: dict[int, str] | None = None, vocab: Callable[[], Vocab] | None = None,
                main: str = TOKEN, precision: Any = None,
                rows_of: Callable[[str, int, int], Any] | None = None) -> list[Scored]:
    """Every reading of several cuts; each context is run once even if several cuts need it.

    With ``batch_size`` > 1 only contexts of identical length share a pass. Batched results were bit-identical to
    ``batch_size=1`` on CPU (tests/test_readings.py checks it on the tiny model; it held on gemma-3-270m too). GPU
    kernels may pick a different reduction order for a different batch shape, which is why the default stays 1.

    ``decoded`` (token id -> text) is read before the tokenizer is asked, and extended with what it answers.
    ``vocab`` gives the token texts the text reading needs; without it there is no text reading. ``main`` names
    the reading the verdict comes from: ``other-softmax`` is that reading through the other softmax dtype, and with
    a float32 copy of the model as ``precision`` the reading ``precision`` is that reading computed in float32.
    ``rows_of(softmax dtype, batch_size, top_k)`` makes the source of the probabilities where the model is not a
    transformers model (a vLLM engine: scoring/vllm_rows.py); by default Rows runs ``loaded.model``.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    cuts = [cut if isinstance(cut, Cut) else Cut(cut) for cut in cuts]
    dtype = resolve_softmax_dtype(loaded.model, softmax_dtype)
    rows = Rows(loaded.model, dtype, batch_size, top_k) if rows_of is None else rows_of(dtype, batch_size, top_k)
    rows.need(forward_contexts([cut.plan for cut in cuts]))
    known = {} if decoded is None else decoded

    def decode(token: int) -> str:
        if token not in known:  # the tokenizer is touched only for a text not known yet (see cutcache.py)
            known[token] = loaded.tokenizer.decode([token])
        return known[token]

    table = vocab() if vocab is not None and all(cut.prompt for cut in cuts) else None
    exact = Rows(precision, "float32", batch_size, top_k) if precision is not None else None
    scored = []
    for cut in cuts:
        plan = cut.plan
        before = len(rows.main)
        readings: dict[str, Reading] = {}
        texts = (plan, cut.prompt, cut.correct, cut.wrong, rows, table, dtype, decode)
        if table is not None:
            readings[TEXT] = text_reading(*texts)  # type: ignore[arg-type]
        readings[TOKEN] = token_reading(plan, rows, dtype)
        if _needs_plain(plan):
            readings[PLAIN] = _plain_reading(plan, rows, dtype, decode)
        if rows.other_dtype is not None:
            readings[OTHER_SOFTMAX] = (text_reading(*texts[:6], rows.other_dtype, decode, other=True)  # type: ignore
                                       if main == TEXT else token_reading(plan, rows, rows.other_dtype, other=True))
        if exact is not None:
            exact.need(_reads(plan))
            readings[PRECISION] = (text_reading(plan, cut.prompt, cut.correct, cut.wrong, exact, table,  # type: ignore
                                                 "float32", decode)
                                   if main == TEXT else token_reading(plan, exact, "float32"))
        top = [TopToken(decode(i), p) for i, p in rows.top[plan.context_ids]]
        scored.append(Scored(readings, top, len(_reads(plan)) + len(rows.main) - before))
    return Batch(scored, rows, *([exact] if exact is not None else []))


def score(loaded: Any, plan: CutPlan, softmax_dtype: str | None = None, top_k: int = 5) -> Scored:
    """The token readings and the top-k at one cut, in the model's dtype by default."""
    return score_batch(loaded, [plan], softmax_dtype=softmax_dtype, top_k=top_k)[0]
