"""The next-token probabilities the readings read (readings.py), and the passes that compute them.

One full forward pass per prompt (the write-up's method), in OnePassRows: the main pass runs over the prompt's own
tokens (BOS included) and keeps the logits of the last position (the plain reading) and of every context of the text
reading that is still inside the prompt (``logits_to_keep`` as a tensor of positions). An earlier position is not
always a separate pass's arithmetic: on SmolLM2-135M in bfloat16 (AMD EPYC, AVX2) the hidden states at every earlier
position differed from a pass over that shorter context from the first layer on, by 2 to 6 ulps of a logit, while
the last position's row was the same bits. So the token reading, the write-up's, reads no earlier position: each of
its contexts other than the prompt (the back-off one or two tokens earlier, a chain token inside or past the prompt,
a back-off that BPE retokenized) gets a full pass of its own, counted, and always equals plain separate passes bit
for bit. A back-off is rare (3 of 225 runs of the library on gemma-3-270m), so passes stay about one per run.

The text reading's chains past the prompt (`F` then `alse`) are incremental steps on the KV cache of the pass they
extend: the cache cropped to the shared prefix less REFEED tokens, those fed again with the new ones. A step is one
token's compute instead of a whole prompt's, but not the same arithmetic: the attention kernels compute a row of a
short query differently, and in bfloat16 on this project's AMD EPYC (AVX2) 21 of 41 step rows of the spec's prompts
differed from separate passes in their last bits (6 of 41 with 8 tokens re-fed; bench/onepass.py), which moved text
readings but no verdict. So the steps and the earlier positions are named: each Run counts its
``incremental_steps``, the summary says how many there were, and --gotchas-one-pass-check recomputes every reading
with Rows (one full pass per context, ``use_cache=False``: the method before) and lists what differs.

Where the model's attention takes a tree mask (model/paths.takes_tree: eager and sdpa), the contexts one `need` asks
for on one cache are not a call each but nodes of one tree (scoring/tree.py): one call computes them all, and the
text reading looks ahead (readings.py) so that a prompt's chains are one call, not one per context. A tree's rows are
yet another arithmetic (other shapes: each node is a row of a matmul over all nodes): on gemma-3-270m and SmolLM2 in
bfloat16 (AMD EPYC, AVX-512 BF16) they differed from steps and from separate passes by a few ulps of a logit in some
rows, like the steps; counted apart (``tree_calls``, ``tree_contexts``) and checked the same way.

Rows is the method before one-pass scoring, and the check's: one full pass per context. torch is imported inside
the functions that need it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from ..model import paths
from ..results.vocabulary import ReadingKind
from .cut import Context, CutPlan, common_prefix
from .tree import Tree

MAX_DEPTH = 8  # tokens along one chain of the text reading
REFEED = 1  # tokens an incremental step computes again, its new one included (1: only the new token)


class Waits(Protocol):
    """Where a tree's head waits to be one product with other cases' trees (heads.Heads)."""

    def wait(self, rows: OnePassRows, tree: Tree, hidden: Any) -> None: ...


class Pending(Exception):
    """Trees whose head waits for one product with other cases' trees (heads.Heads): the readings that asked for
    them stop here, and run again once the product is kept."""


def needs_plain(plan: CutPlan) -> bool:
    naive = (plan.plain_correct_id, plan.plain_wrong_id)
    return plan.kind != ReadingKind.PLAIN or naive != (plan.correct_ids[0], plan.wrong_ids[0])


def token_contexts(plan: CutPlan) -> set[Context]:
    """Every context the token reading of this plan needs a pass for."""
    contexts = {plan.context_ids}
    for chain in (plan.correct_ids, plan.wrong_ids):
        contexts.update(plan.context_ids + chain[:i] for i in range(1, len(chain)))
    if needs_plain(plan):
        contexts.add(plan.prompt_ids)
    return contexts


def forward_contexts(plans: list[CutPlan]) -> set[Context]:
    """Every context the token readings of the plans need (each once)."""
    return set().union(*(token_contexts(plan) for plan in plans)) if plans else set()


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


def softmax_refusal(softmax_dtype: str | None, dtype: str, flag: str = "--gotchas-") -> str | None:
    """Why a run cannot take `softmax_dtype` with a model in `dtype`, before anything loads (resolve_softmax_dtype
    computes only these two); None when it can. Pure."""
    if softmax_dtype in (None, dtype, "float32"):
        return None
    return (f"{flag}softmax-dtype {softmax_dtype} cannot read a {dtype} model: the softmax at the cut runs in the "
            f"model's dtype or in float32 (finer probabilities); leave {flag}softmax-dtype out, or give float32")


def resolve_softmax_dtype(dtype: str, softmax_dtype: str | None) -> str:
    """The softmax dtype of a model computed in `dtype` (model_dtype)."""
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

    def __init__(self, model: Any, softmax_dtype: str, batch_size: int, top_k: int, *, dtype: str | None = None
                 ) -> None:
        """`dtype`: the logits' dtype where no `model` runs here (scoring/engine_rows.py); else the model's."""
        self.model, self.softmax_dtype, self.batch_size, self.top_k = model, softmax_dtype, batch_size, top_k
        own = dtype or model_dtype(model)
        self.other_dtype = None if own == "float32" else (own if softmax_dtype == "float32" else "float32")
        self.main: dict[Context, Any] = {}
        self.other: dict[Context, Any] = {}
        self.top: dict[Context, tuple[tuple[int, float], ...]] = {}
        self.calls = 0  # model calls for full passes: fewer than passes when batch_size grouped some
        self.full = 0  # full forward passes (contexts run from their first token)
        self.tokens = 0  # tokens of the full passes
        self.steps = 0  # contexts computed on a KV cache, one call each or in a tree (OnePassRows)
        self.step_tokens = 0  # tokens the steps fed (a tree: its nodes)
        self.tree_calls = 0  # calls that computed a tree of contexts on a KV cache
        self.tree_contexts = 0  # the contexts those calls computed (in `steps` too; the nodes fed: `step_tokens`)
        self.owner = -1  # the cut whose readings ask now (readings.score_batch sets it); -1: the prompts' passes
        self.caused: dict[int, list[int]] = {}  # cut -> [full passes, contexts computed on a cache] it asked for
        self.non_finite = False  # a logit computed apart from the model's forward (heads.py) was not finite

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
        self._owe(len(group), 0)

    @contextmanager
    def asking(self, owner: int) -> Iterator[None]:
        """While the readings of cut `owner` ask: what they cause is counted as theirs (`caused`)."""
        self.owner = owner
        try:
            yield
        finally:
            self.owner = -1

    def _owe(self, full: int, steps: int, owner: int | None = None) -> None:
        """Count what `owner` (default: the cut asking now) caused: a case's counts stay its cuts' own however many
        rounds its readings took (heads.py stops and runs them again)."""
        owner = self.owner if owner is None else owner
        if owner >= 0:
            caused = self.caused.setdefault(owner, [0, 0])
            caused[0] += full
            caused[1] += steps

    def _keep(self, contexts: list[Context], logits: Any) -> None:
        """Store the rows of `logits` (one per context) through both softmax dtypes, and their top-k."""
        import torch

        with torch.inference_mode():
            in_model_dtype = torch.softmax(logits, dim=-1)
            in_float32 = paths.softmax32(logits) if logits.dtype != torch.float32 else None
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


def main_positions(plan: CutPlan) -> set[int]:
    """The positions of the prompt's main pass whose logits the readings of this plan read: the last (the plain
    reading), and, when the backed-off context is a prefix of the prompt's tokens, every position from the back-off
    on (the back-off itself, and the chain and text contexts that are still inside the prompt). vLLM reads them all
    from its prompt logprobs; OnePassRows keeps only those no token reading needs."""
    prompt = plan.prompt_ids
    positions = {len(prompt) - 1}
    if _is_prefix(plan.context_ids, prompt):
        positions.update(range(len(plan.context_ids) - 1, len(prompt)))
    positions.update(len(c) - 1 for c in token_contexts(plan) if _is_prefix(c, prompt))
    return positions


class OnePassRows(Rows):
    """Next-token probabilities with one full forward pass per prompt (see the module's docstring).

    ``prompts(plans)`` runs the main passes (equal-length prompts share a call under ``batch_size``, never padded),
    keeping the logits at every position the plans read and each pass's KV cache, then a full pass for each context
    of a token reading that no main pass holds; ``need`` computes any other missing context (the text reading's) as
    an incremental step on the cache that shares the longest prefix with it, or, where none can be extended to it,
    as a full pass of its own (counted in ``full``)."""

    def __init__(self, model: Any, softmax_dtype: str, batch_size: int, top_k: int, refeed: int = REFEED,
                 tree: bool | None = None, heads: Waits | None = None) -> None:
        """`tree`: compute the contexts on a cache as one tree per `need` (default: where the model takes one).
        `heads`: where a tree's head waits to be one product with other cases' trees (heads.py); None: at once."""
        super().__init__(model, softmax_dtype, batch_size, top_k)
        self.refeed = refeed
        self.tree = paths.takes_tree(model) if tree is None else tree
        self.heads = heads
        self.caches: dict[Context, Any] = {}  # contexts run as full passes -> their KV cache (None: not extendable)
        self.full_contexts: list[Context] = []  # in the order they ran
        self._cache_arg = paths.cache_arg(model)

    def prompts(self, plans: list[CutPlan]) -> None:
        """The main pass of each distinct prompt, then a full pass for each context of a token reading other than a
        prompt (see the module's docstring: the token reading reads no earlier position)."""
        token = forward_contexts(plans)
        keep: dict[Context, set[int]] = {}
        for plan in plans:
            prompt = plan.prompt_ids
            kept = keep.setdefault(prompt, {len(prompt) - 1})
            kept.update(n for n in main_positions(plan) if prompt[: n + 1] not in token)
        todo = sorted(c for c in keep if c not in self.caches)
        for group in forward_groups(todo, self.batch_size):
            self._full(group, keep)
        roots = sorted(token - set(self.main))
        for group in forward_groups(roots, self.batch_size):
            self._full(group)

    def need(self, contexts: set[Context] | list[Context]) -> None:
        fulls: list[Context] = []
        on: dict[Context, list[tuple[Context, int]]] = {}  # base -> the contexts computed on its cache
        for context in sorted(c for c in set(contexts) if c not in self.main):
            base, shared = self._base(context)
            if base is None:
                fulls.append(context)
            else:
                on.setdefault(base, []).append((context, shared))
        waiting = [self._on_cache(base, stepped) for base, stepped in on.items()]
        for group in forward_groups(fulls, self.batch_size):
            self._full(group)
        if any(waiting):
            raise Pending(sum(waiting))

    def _on_cache(self, base: Context, group: list[tuple[Context, int]]) -> int:
        """The contexts of `group` (each with the prefix it shares with `base`) from the cache of `base`: one tree
        where the model takes one and the cache holds the tree's every node (a sliding window must not drop one),
        else a step each. Returns 1 where the tree's head waits (`heads`), 0 where every row is kept."""
        start = min(self._start(context, shared) for context, shared in group)
        tree = Tree.of([context for context, _ in group], start) if self.tree else None
        if tree is None or not paths.extendable(self.caches[base], start + len(tree)):
            for context, shared in group:
                self._step(context, base, shared)
            return 0
        call = (self.model, self.caches[base], len(base), start, list(tree.tokens), list(tree.positions), tree.mask(),
                self._cache_arg)
        if self.heads is not None:
            self.heads.wait(self, tree, paths.tree_hidden(*call))
            return 1
        self.tree_rows(tree, paths.tree_step(*call), self.owner)
        return 0

    def tree_rows(self, tree: Tree, logits: Any, owner: int) -> None:
        """Keep a tree's rows (`logits`, one per node), counted as `owner`'s."""
        new = sum(context not in self.main for context in tree.contexts)  # not the ancestors fed again
        self.tree_calls += 1
        self.tree_contexts += new
        self.steps += new
        self.step_tokens += len(tree)
        self._owe(0, new, owner)
        self._keep(list(tree.contexts), logits)

    def _start(self, context: Context, shared: int) -> int:
        """Where a context's step starts: the cache cropped to the shared prefix, REFEED tokens fed again (at least
        one token fed)."""
        return max(1, min(shared, len(context) - self.refeed))

    def _base(self, context: Context) -> tuple[Context | None, int]:
        """The full pass whose cache shares the longest prefix with `context`, and that prefix's length; None when
        no cache can be extended to it within MAX_DEPTH new tokens."""
        best, shared = None, 0
        for base, cache in self.caches.items():
            n = common_prefix(base, context)
            if n > shared and cache is not None and paths.extendable(cache, max(len(base), len(context))):
                best, shared = base, n
        if best is None or len(context) - shared > MAX_DEPTH:
            return None, 0
        return best, shared

    def _full(self, group: list[Context], wanted: dict[Context, set[int]] | None = None) -> None:
        """Full passes over equal-length contexts, keeping the positions each context wants (default: its last)."""
        import torch

        last = len(group[0]) - 1
        want = {c: wanted[c] if wanted else {last} for c in group}
        positions = sorted(set().union(*want.values()))
        input_ids = torch.tensor(group, dtype=torch.long, device=self.model.device)
        keep: Any = 1 if positions == [last] else torch.tensor(positions, device=self.model.device)
        with torch.inference_mode():
            output = self.model(input_ids=input_ids, logits_to_keep=keep, use_cache=True)
        self._count(group)
        self.full_contexts.extend(group)
        for j, position in enumerate(positions):
            # In a batch, a row keeps only its own context's positions: another prompt's kept position may be a
            # context a token reading needs from a pass of its own.
            rows = [n for n, c in enumerate(group) if position in want[c]]
            self._keep([group[n][: position + 1] for n in rows], output.logits[rows, j, :])
        cache = paths.cache_of(output)
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
        start = self._start(context, shared)
        logits = paths.step(self.model, self.caches[base], len(base), start, list(context[start:]), self._cache_arg)
        self.steps += 1
        self.step_tokens += len(context) - start
        self._owe(0, 1)
        self._keep([context], logits)
