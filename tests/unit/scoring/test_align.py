"""scoring/align.py: every alignment case, with exact expected values."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_gotchas.scoring.align import Alignment, align

BOS = 2


def test_middle_of_equal_length_aligns_position_by_position() -> None:
    # list(...)[ vs set(...){ : prefix BOS, one differing token, shared suffix, differing cut token.
    source = [BOS, 10, 20, 21, 22, 30]
    target = [BOS, 11, 20, 21, 22, 31]
    assert align(source, target) == Alignment(
        source_length=6, target_length=6, prefix=1, suffix=0,
        pairs=((1, 1), (2, 2), (3, 3), (4, 4), (5, 5)), middle_aligned=True,
        unaligned_source=(), unaligned_target=(), unaligned="")


def test_shared_suffix_is_counted_from_the_end() -> None:
    source = [BOS, 5, 9, 7, 8]
    target = [BOS, 5, 6, 7, 8]
    result = align(source, target)
    assert (result.prefix, result.suffix, result.middle_aligned) == (2, 2, True)
    assert result.pairs == ((2, 2), (3, 3), (4, 4))
    assert result.unaligned == ""


def test_middle_of_unequal_length_aligns_only_prefix_suffix_and_last() -> None:
    source = [BOS, 1, 9, 9, 4, 4]  # middle: positions 2-3
    target = [BOS, 1, 8, 4, 4]  # middle: position 2
    result = align(source, target)
    assert (result.prefix, result.suffix, result.middle_aligned) == (2, 2, False)
    assert result.pairs == ((4, 3), (5, 4))  # the suffix from the end; the last pair is in it
    assert (result.unaligned_source, result.unaligned_target) == ((2, 3), (2,))
    assert result.unaligned == ("not aligned by the token diff of the middles (source 2 tokens, target 1): left out "
                                "source positions 2-3, target positions 2; aligned: prefix 2, suffix 2, 0 of the "
                                "middle by the diff, last positions")


def test_unequal_middles_without_a_suffix_still_align_the_last_positions() -> None:
    source = [BOS, 7, 8, 9]  # the cut tokens differ: no shared suffix
    target = [BOS, 5, 6]
    result = align(source, target)
    assert (result.prefix, result.suffix) == (1, 0)
    assert result.pairs == ((3, 2),)
    assert (result.unaligned_source, result.unaligned_target) == ((1, 2), (1,))
    assert result.last == (3, 2)


def test_identical_sequences_give_only_the_last_pair_inside_the_prefix() -> None:
    ids = [BOS, 4, 5, 6]
    result = align(ids, ids)
    assert (result.prefix, result.suffix, result.middle_aligned) == (4, 0, True)
    assert result.pairs == ((3, 3),)
    assert result.shared((3, 3)) and result.shared_pairs == ((3, 3),)
    assert result.prefix_check == (3, 3)
    assert (result.unaligned_source, result.unaligned_target, result.unaligned) == ((), (), "")


def test_source_a_prefix_of_the_target() -> None:
    result = align([BOS, 5, 6], [BOS, 5, 6, 8, 9])
    assert (result.prefix, result.suffix, result.middle_aligned) == (3, 0, False)
    # The source's cut lies in the shared prefix; it is still aligned with the target's cut, not with position 2.
    assert result.pairs == ((2, 4),)
    assert not result.shared((2, 4))
    assert (result.unaligned_source, result.unaligned_target) == ((), (3,))
    assert result.unaligned == ("not aligned by the token diff of the middles (source 0 tokens, target 2): left out "
                                "target positions 3; aligned: prefix 3, suffix 0, 0 of the middle by the diff, last "
                                "positions")


def test_target_a_prefix_of_the_source() -> None:
    result = align([BOS, 5, 6, 8, 9], [BOS, 5, 6])
    assert (result.prefix, result.suffix) == (3, 0)
    assert result.pairs == ((4, 2),)  # the target's cut, inside the shared prefix, patched from the source's cut
    assert not result.shared((4, 2)) and result.shared_pairs == ()
    assert (result.unaligned_source, result.unaligned_target) == ((3,), ())


def test_a_suffix_that_would_overlap_the_prefix_is_shortened() -> None:
    # Both end in [1, 2], but the target's [1, 2] is its whole prefix: counted once, as prefix.
    result = align([BOS, 1, 2, 1, 2], [BOS, 1, 2])
    assert (result.prefix, result.suffix) == (3, 0)
    assert result.pairs == ((4, 2),)
    assert result.unaligned_source == (3,)
    # A repeated token: the prefix takes the first, the suffix what is left.
    repeated = align([BOS, 3, 3], [BOS, 3])
    assert (repeated.prefix, repeated.suffix, repeated.pairs, repeated.unaligned_source) == (2, 0, ((2, 1),), ())
    middle = align([BOS, 3, 9, 3], [BOS, 3])
    assert (middle.prefix, middle.suffix, middle.pairs, middle.unaligned_source) == (2, 0, ((3, 1),), (2,))
    overlapping = align([BOS, 4, 7, 4], [BOS, 4])
    assert (overlapping.prefix, overlapping.suffix) == (2, 0)


def test_suffix_bounded_by_the_shorter_side() -> None:
    result = align([BOS, 3, 2], [BOS, 2])  # suffix [2] fits beside the prefix [BOS] on the shorter side
    assert (result.prefix, result.suffix, result.pairs, result.unaligned_source) == (1, 1, ((2, 1),), (1,))


def test_nothing_shared() -> None:
    result = align([1, 2], [3, 4, 5])
    assert (result.prefix, result.suffix, result.prefix_check) == (0, 0, None)
    assert result.pairs == ((1, 2),)
    assert (result.unaligned_source, result.unaligned_target) == ((0,), (0, 1))


def test_pairs_run_in_target_order_from_the_first_difference() -> None:
    result = align([BOS, 1, 9, 8, 4, 5, 6], [BOS, 1, 7, 6, 4, 5, 6])
    assert [t for _, t in result.pairs] == [2, 3, 4, 5, 6]
    assert all(s == t for s, t in result.pairs)
    assert result.prefix_check == (1, 1)


def _ids(text: str) -> list[int]:
    """Words as token ids (one id per distinct word), BOS first: readable stand-ins for a tokenizer's pieces."""
    vocab: dict[str, int] = _VOCAB
    return [BOS] + [vocab.setdefault(word, len(vocab) + 10) for word in text.split()]


_VOCAB: dict[str, int] = {}


def test_equal_length_middles_pair_like_with_like_not_position_by_position() -> None:
    # dict-vs-set-reversed's shape: middles of the same length whose shared words sit at other offsets, so position
    # i is not position i (the old alignment put '(' over 'k' and 'reversed' over ':').
    source = _ids("x = set ( reversed ( [ k for k in range ( 5 ) ) ) ; print ( x ) \\n =")
    target = _ids("x = { k : None for k in reversed ( range ( 5 ) ) } ; print ( x ) \\n {")
    assert len(source) == len(target)
    result = align(source, target)
    words = {v: k for k, v in _VOCAB.items()}
    assert [(words[source[s]], words[target[t]]) for s, t in result.pairs] == [
        ("k", "k"), ("for", "for"), ("k", "k"), ("in", "in"), ("range", "range"), ("(", "("), ("5", "5"), (")", ")"),
        (")", ")"), (")", "}"),  # a one-token substitution inside the diff
        (";", ";"), ("print", "print"), ("(", "("), ("x", "x"), (")", ")"), ("\\n", "\\n"),
        ("=", "{")]  # the cuts, always
    assert (result.unaligned_source, result.unaligned_target) == ((3, 4, 5, 6, 7), (3, 5, 6, 10, 11))
    assert not result.middle_aligned
    assert result.unaligned == ("not aligned by the token diff of the middles (source 22 tokens, target 22): left "
                                "out source positions 3-7, target positions 3,5,6,10,11; aligned: prefix 3, suffix 0, "
                                "16 of the middle by the diff, last positions")


def test_a_substituted_run_of_the_same_length_aligns_inside_the_diff() -> None:
    # middles: [7 8 | 4 | 9] against [5 6 | 4 | 1 2]: "7 8" -> "5 6" substituted (same length), 4 equal, 9 -> "1 2"
    # substituted with another length: left out.
    source = [BOS, 7, 8, 4, 9, 30]
    target = [BOS, 5, 6, 4, 1, 2, 31]
    result = align(source, target)
    assert result.pairs == ((1, 1), (2, 2), (3, 3), (5, 6))
    assert (result.unaligned_source, result.unaligned_target) == ((4,), (4, 5))


def test_unequal_lengths_align_the_shared_tokens_of_the_middle() -> None:
    source = [BOS, 1, 20, 21, 22, 40]  # an inserted token (1) before the shared run
    target = [BOS, 20, 21, 22, 41]
    result = align(source, target)
    assert result.pairs == ((2, 1), (3, 2), (4, 3), (5, 4))
    assert (result.unaligned_source, result.unaligned_target) == ((1,), ())
    assert "3 of the middle by the diff" in result.unaligned


def test_empty_sides_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one token"):
        align([], [BOS])


def test_alignment_is_frozen() -> None:
    result = align([BOS, 1], [BOS, 2])
    with pytest.raises(AttributeError):
        result.prefix = 0  # type: ignore[misc]


def test_importing_align_does_not_import_torch() -> None:
    code = "import sys, pytest_gotchas.scoring.align; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
