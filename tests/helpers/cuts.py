"""The tiny model of the cut and token-reading tests: its rules, one prompt of each kind of cut (plain, an exact
tie, healed, a chain), and a text's token ids."""

from __future__ import annotations

RULES = {
    " ": {"1": 3.0, "2": 1.0, "3": 0.5},  # "x = " -> plain, no tie
    "\n": {"T": 2.0, "F": 2.0},  # "1 == 1\n" -> an exact tie
    "2": {"),": 1.0, ")]": 2.0, ")": 0.5},  # "(2, 2)" + "," / "]" -> healed to "),", ")]"
    "{": {"'": 1.0, "'.": 0.5},  # "[{'" + "k" / "." -> chain "'" "k" vs "'."
    "'": {"k": 3.0, "v": 1.0},
    ":": {"\n": 4.0, " ": 1.0},
}

PLAIN = ("x = ", "1", "2")
TIE = ("1 == 1\n", "True", "False")
HEALED = ("(2, 2)", ",", "]")
CHAIN = ("[{'", "k", ".")


def ids(tokenizer, text: str) -> tuple[int, ...]:
    return tuple(tokenizer(text)["input_ids"])
