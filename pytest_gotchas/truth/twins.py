"""Twins are one program written twice: both spellings must print the same text after the cut.

Pure: takes what each member's session printed after its prompt and returns the refusal, naming the twin and where
the two texts part, or None. Collection (collect.py) calls it once per twin with the first run of each member's own
transcript, under each primer.
"""

from __future__ import annotations

from ..cases.authoring import divergence

CONTEXT = 30  # characters shown on each side of the divergence


def twin_problem(members: tuple[str, str], after: tuple[str, str]) -> str | None:
    """`after`: the text each member's session printed after its prompt, in the order of `members`."""
    first, second = after
    if first == second:
        return None
    at = divergence(first, second)
    width = max(len(m) for m in members) + 3
    start = max(0, at - CONTEXT)
    return (f"the two spellings print different text after the cut, so they are not one program; they part at "
            f"line {first.count(chr(10), 0, at) + 1} after the cut, after {first[start:at]!r}:\n"
            f"    {repr(members[0]) + ':':<{width}} {first[at:at + CONTEXT]!r}\n"
            f"    {repr(members[1]) + ':':<{width}} {second[at:at + CONTEXT]!r}")
