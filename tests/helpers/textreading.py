"""The tiny model of the text-reading and vocabulary tests: merges that make longer tokens of the candidates'
text, and rules that put the mass on them."""

from __future__ import annotations

from helpers.tinymodel import DEFAULT_MERGES

MERGES = (*DEFAULT_MERGES, "])", "],", "ru", "Tr", "Tru", "True")
# After "2": the merged "])" and "]," carry most of the mass; the lone "]" almost none (the case).
# After "6" the healed cut: ")," and ")]" as one token, and ")" followed by "," or "]" as a chain.
RULES = {
    "2": {"])": 3.0, "],": 2.0, ",": 1.5, "]": -2.0},
    "6": {"),": 1.0, ")]": 0.5, ")": 1.5},
    ")": {",": 1.0, "]": 2.0},
    ":": {"T": 1.0, "Tr": 0.5, "True": 2.0, "F": 1.0},
    "T": {"r": 1.0, "ru": 0.5},
    "Tr": {"u": 2.0},
    "Tru": {"e": 2.0},
    "r": {"u": 1.0},
    "u": {"e": 3.0},
}
