"""Chapters with families, written by the tests of cases/families.py, truth/instances.py and the plugin.

FAMILY_CHAPTER's pair is a list and a set of range(n) reversed: the list prints n - 1 first, the set 0 first, so
each member's wrong answer is its partner's first number. Its family draws n from 2 to 9 (instance zero is n = 3)
and a name for the loop variable. REFUSING_FAMILY draws n from 1 to 3: at n = 1 both print 0 and their outputs part
at the closing bracket, not at a number as instance zero's do, so that instance is refused.
"""

from __future__ import annotations

FAMILY_CHAPTER = """\
chapter: fam
title: "families"
interpreter: "3.12"
cases:
  - id: list-first
    transcript: |-
      >>> list(reversed([x for x in range(3)]))
      [█
    correct: "2"
    wrong: "0"
    note: "a list keeps the order reversed() gives"
  - id: set-first
    transcript: |-
      >>> set(reversed([x for x in range(3)]))
      {█
    correct: "0"
    wrong: "2"
pairs:
  list-vs-set: [list-first, set-first]
families:
  list-vs-set:
    pair: list-vs-set
    slots:
      x: name
      n: {int: [2, 9]}
    zero: {x: x, n: 3}
    members:
      list-first: |-
        >>> list(reversed([${x} for ${x} in range(${n})]))
        [█
      set-first: |-
        >>> set(reversed([${x} for ${x} in range(${n})]))
        {█
"""

REFUSING_FAMILY = FAMILY_CHAPTER.replace("n: {int: [2, 9]}", "n: {int: [1, 3]}").replace("x: name", "x: {name: [x]}")

# The tiny model's rules for FAMILY_CHAPTER: after "[" it prefers "2", after "{" "0" (each instance's own numbers
# decide its verdicts; the tests read the cut, not the verdicts).
FAMILY_RULES = {"[": {"2": 2.0, "0": 1.0}, "{": {"0": 2.0, "2": 1.0}}

# A twin family and a case family, each stating its misreading: the twin prints "a<d> <w>" two ways (the misreading
# is d + 1), the case doubles n (the misreading triples it).
TWIN_AND_CASE_FAMILIES = """\
chapter: tw
title: "twin and case families"
interpreter: "3.12"
cases:
  - id: joined
    transcript: |-
      >>> print("a7", "x")
      a█
    correct: "7"
    wrong: "8"
  - id: concatenated
    transcript: |-
      >>> print("a" + "7", "x")
      a█
    correct: "7"
    wrong: "8"
  - id: doubled
    transcript: |-
      >>> 3 * 2
      █
    correct: "6"
    wrong: "9"
twins:
  spelled-twice: [joined, concatenated]
families:
  spelled-twice:
    twin: spelled-twice
    slots:
      d: {int: [1, 8]}
      w: {choice: [x, y, z]}
    zero: {d: 7, w: x}
    misreading: "${d + 1}"
    members:
      joined: |-
        >>> print("a${d}", "${w}")
        a█
      concatenated: |-
        >>> print("a" + "${d}", "${w}")
        a█
  doubled:
    case: doubled
    slots:
      n: {int: [2, 9]}
    zero: {n: 3}
    misreading: "${n * 3}"
    members:
      doubled: |-
        >>> ${n} * 2
        █
"""
