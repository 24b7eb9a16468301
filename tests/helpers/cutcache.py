"""The chapter of the cut-cache tests (a plain and a healed cut), the rules of the tiny model that scores it, and
the cuts of each kind that the cache holds."""

RULES = {"a": {"7": 2.0, "8": 1.0}, "6": {"),": 2.0, ")]": 1.0}, "[": {"'": 1.0, "'.": 1.0}}
CUTS = [("a", "7", "8"), ("[(5, 6)", ",", "]"), ("[{'", "k", ".")]  # plain, healed, chain

CHAPTER = """\
chapter: demo
title: "cached cuts"
interpreter: "3.11"
env: {PYTHONHASHSEED: "0"}
cases:
  - id: plain
    transcript: |-
      >>> print("a7")
      a█
    correct: "7"
    wrong: "8"
  - id: healed
    transcript: |-
      >>> [(5, 6), (7, 8)]
      [(5, 6)█
    correct: ","
    wrong: "]"
"""
