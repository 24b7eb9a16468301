"""The text reading's chains past a prompt in one forward call: the trie of its contexts as a tree over the KV cache.

The text reading (readings.py) walks a trie of continuations from the backed-off context: `F` then `alse`, and every
other way of writing each candidate. Computed as incremental steps, each node was a forward call of its own, and each
call reads the whole model again (gemma-3-270m's 262,144-row head dominates: a one-token step cost about what a full
pass does). Here every node a prompt's readings read goes into a single call, as speculative decoding verifies a tree
of drafts (SpecInfer, Miao et al. 2024; Medusa, Cai et al. 2024): the nodes are fed after the tokens the cache keeps,
each at the position of its depth, and an attention mask lets each node see those tokens and its own ancestors only,
so that it computes what a step along its own chain computes, up to the rounding of the kernels' other shapes.

Pure (no torch): which contexts go into the call (`Ahead`, the contexts a text reading will read, found before it
reads them) and the call's layout (`Tree`: nodes, parents, depths, positions, the mask as data). The call itself is
model/paths.tree_step; scoring/rows.py's OnePassRows makes it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from .cut import Context


@dataclass(frozen=True)
class Tree:
    """One forward call over a cache cropped to its first `start` tokens: node n feeds `tokens[n]`, after the node
    `parents[n]` (-1: right after the kept tokens), and its row is the next-token distribution of `contexts[n]`.
    Parents come before their children."""

    start: int
    tokens: tuple[int, ...]
    parents: tuple[int, ...]
    contexts: tuple[Context, ...]

    @classmethod
    def of(cls, contexts: Iterable[Context], start: int) -> Tree:
        """The tree of `contexts` (each longer than `start`, all sharing their first `start` tokens) and of every
        prefix of them longer than `start`: a chain's node needs its ancestors in the same call. Shorter contexts
        first, then by their tokens, so that the layout is the same whatever order the contexts came in."""
        index: dict[Context, int] = {}
        tokens: list[int] = []
        parents: list[int] = []
        ordered = sorted(set(contexts), key=lambda c: (len(c), c))
        if ordered and (len(ordered[0]) <= start or any(c[:start] != ordered[0][:start] for c in ordered)):
            raise ValueError(f"every context must extend the same {start} tokens by at least one")
        for context in ordered:
            for end in range(start + 1, len(context) + 1):
                if context[:end] not in index:
                    index[context[:end]] = len(tokens)
                    tokens.append(context[end - 1])
                    parents.append(index.get(context[: end - 1], -1))
        nodes = tuple(sorted(index, key=index.__getitem__))
        return cls(start, tuple(tokens), tuple(parents), nodes)

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def depths(self) -> tuple[int, ...]:
        """1 for a node right after the kept tokens, one more for each ancestor."""
        depths: list[int] = []
        for parent in self.parents:
            depths.append(1 if parent < 0 else depths[parent] + 1)
        return tuple(depths)

    @property
    def positions(self) -> tuple[int, ...]:
        """Each node's position id: where its token stands in its own context."""
        return tuple(self.start + depth - 1 for depth in self.depths)

    def seen(self, node: int) -> list[int]:
        """The nodes `node` attends to: its ancestors and itself, in order."""
        chain = []
        while node >= 0:
            chain.append(node)
            node = self.parents[node]
        return chain[::-1]

    def mask(self) -> list[list[bool]]:
        """Per node, over the kept tokens and then the nodes: True where it attends (every kept token, its ancestors
        and itself), False elsewhere (its siblings, cousins and descendants)."""
        rows = []
        for node in range(len(self)):
            row = [True] * self.start + [False] * len(self)
            for seen in self.seen(node):
                row[self.start + seen] = True
            rows.append(row)
        return rows


class Known(Protocol):
    """What Ahead asks of the rows it looks ahead of (rows.Rows)."""

    main: dict[Context, object]

    def p(self, context: Context, token: int, other: bool = False) -> float: ...


class Ahead:
    """A source of probabilities (rows.Probabilities) that answers from `rows` where they hold a context and, where
    they do not, computes nothing and notes it as `wanted`: a text reading run against it names the contexts the real
    reading will read, before any of them is computed, so that one tree computes them all.

    A context not computed yet gives each token the probability 1 while it lies at most `levels` nodes past what the
    rows hold (an upper bound: every chain through it that the real reading could follow is followed, and noted),
    and 0 further on (nothing past it is followed). With `levels` 0 the walk notes exactly the nodes that the rows
    held decide (the chains' first nodes past the prompt); with 1, their children too, whatever the first nodes'
    rows will say: those are computed speculatively in the same call, and a reading that goes deeper still gets
    another call."""

    def __init__(self, rows: Known, levels: int) -> None:
        self.rows, self.levels = rows, levels
        self.wanted: set[Context] = set()

    def _beyond(self, context: Context) -> int:
        """How many nodes of `context`'s chain the rows do not hold (0: they hold `context`)."""
        n = 0
        while context and context not in self.rows.main:
            n, context = n + 1, context[:-1]
        return n

    def need(self, contexts: set[Context] | list[Context]) -> None:
        self.wanted.update(c for c in contexts if c not in self.rows.main)

    def p(self, context: Context, token: int, other: bool = False) -> float:
        if context in self.rows.main:
            return self.rows.p(context, token, other)
        return 1.0 if self._beyond(context) <= self.levels else 0.0

    # Only which chains are followed matters here: what a context adds to the sum and the parts shown do not.
    def total(self, context: Context, tokens: list[int], other: bool = False) -> float:
        return 0.0

    def largest(self, context: Context, tokens: list[int], k: int, other: bool = False) -> list[tuple[float, int]]:
        return []
