"""Which position of the source stands for which position of the target, when a pair is patched (pure: no torch,
no tokenizer; patching.py uses it, and so do the reports' descriptions of what aligned).

Patching puts the source's residual stream at position s into the target's at position t; that is only meaningful
when s and t play the same part in both programs. Position i is not position i once the members differ in length
(TransformerLens's patching asks for equal lengths; nnsight's left-padded batches shift positions, its issue #672),
so the alignment is explicit and what cannot be aligned is listed, never guessed:

- the shared prefix, position by position (its activations are identical in both members: causal attention);
- the shared suffix, counted from the end (the prefix wins where the two would overlap: a token is counted once);
- the differing middle by a token-level diff (difflib.SequenceMatcher on the token ids, no junk heuristic): equal
  tokens with equal tokens, a substituted run only with a run of the same length inside the diff, position by
  position; inserted, deleted and unequal substituted runs are not aligned (a '(' is never patched over a 'k' merely
  because the middles have the same length: dict-vs-set-reversed's middles, 17 tokens each, differ token by token);
- the two last positions (where each member's cut is read), always, with each other (they are kept out of the diff).

``pairs`` runs over the target from the first differing position to the end; the last pair is always there, even
for identical sequences, where it lies in the shared prefix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from .cut import common_prefix

Pair = tuple[int, int]  # (source position, target position)


@dataclass(frozen=True)
class Alignment:
    source_length: int
    target_length: int
    prefix: int  # shared leading tokens: positions 0..prefix-1 are equal in both
    suffix: int  # shared trailing tokens, disjoint from the prefix
    pairs: tuple[Pair, ...]  # aligned (s, t), t ascending, every t >= prefix, plus the last pair
    middle_aligned: bool  # every position of the differing middles was aligned (an empty middle counts)
    unaligned_source: tuple[int, ...]  # source positions past the prefix with no counterpart
    unaligned_target: tuple[int, ...]
    unaligned: str  # "" when nothing past the prefix was left out; else what was, and why

    @property
    def last(self) -> Pair:
        return self.source_length - 1, self.target_length - 1

    def shared(self, pair: Pair) -> bool:
        """The pair is one position of the shared prefix: patching it must change nothing."""
        s, t = pair
        return s == t < self.prefix

    @property
    def prefix_check(self) -> Pair | None:
        """The shared-prefix position the run-time check patches (the last one), or None: no shared prefix."""
        return (self.prefix - 1, self.prefix - 1) if self.prefix else None

    @property
    def shared_pairs(self) -> tuple[Pair, ...]:
        """The pairs that lie in the shared prefix (only the last pair of identical sequences can)."""
        return tuple(p for p in self.pairs if self.shared(p))


def _common_suffix(a: Sequence[int], b: Sequence[int], limit: int) -> int:
    n = 0
    while n < limit and a[len(a) - 1 - n] == b[len(b) - 1 - n]:
        n += 1
    return n


def _span(positions: Sequence[int]) -> str:
    if not positions:
        return "none"
    if list(positions) == list(range(positions[0], positions[-1] + 1)):
        return str(positions[0]) if len(positions) == 1 else f"{positions[0]}-{positions[-1]}"
    return ",".join(map(str, positions))


def _diff_pairs(source: Sequence[int], target: Sequence[int], middle_s: list[int], middle_t: list[int]
                ) -> list[Pair]:
    """The diff's pairs of two middles: equal runs, and substituted runs of the same length, position by position."""
    a, b = [source[s] for s in middle_s], [target[t] for t in middle_t]
    found: list[Pair] = []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal" or (op == "replace" and i2 - i1 == j2 - j1):
            found += [(middle_s[i], middle_t[j]) for i, j in zip(range(i1, i2), range(j1, j2))]
    return found


def align(source_ids: Sequence[int], target_ids: Sequence[int]) -> Alignment:
    """The alignment of two members' context token ids (BOS included, if the tokenizer adds it)."""
    source, target = list(source_ids), list(target_ids)
    if not source or not target:
        raise ValueError(f"align needs at least one token on each side (source {len(source)}, "
                         f"target {len(target)})")
    ls, lt = len(source), len(target)
    prefix = common_prefix(source, target)
    suffix = _common_suffix(source, target, min(ls, lt) - prefix)
    middle_s = list(range(prefix, ls - suffix))
    middle_t = list(range(prefix, lt - suffix))
    aligned: dict[int, int] = {}  # t -> s
    # The cuts pair with each other, so they stay out of the diff (without a suffix they end the middles).
    diffed_s = [s for s in middle_s if s != ls - 1]
    diffed_t = [t for t in middle_t if t != lt - 1]
    diffed = _diff_pairs(source, target, diffed_s, diffed_t)
    aligned.update((t, s) for s, t in diffed)
    aligned.update((lt - suffix + i, ls - suffix + i) for i in range(suffix))
    aligned[lt - 1] = ls - 1  # the cuts: already there unless the last positions sit in the middle
    left_s = tuple(s for s in middle_s if s not in aligned.values())
    left_t = tuple(t for t in middle_t if t not in aligned)
    pairs = tuple((aligned[t], t) for t in sorted(aligned))  # every t >= prefix, but a last t inside it
    note = ""
    if left_s or left_t:
        out = [f"{side} positions {_span(left)}" for side, left in (("source", left_s), ("target", left_t)) if left]
        note = (f"not aligned by the token diff of the middles (source {len(middle_s)} tokens, target "
                f"{len(middle_t)}): left out {', '.join(out)}; aligned: prefix {prefix}, suffix {suffix}, "
                f"{len(diffed)} of the middle by the diff, last positions")
    return Alignment(ls, lt, prefix, suffix, pairs, not (left_s or left_t), left_s, left_t, note)
