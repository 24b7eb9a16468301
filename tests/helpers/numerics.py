"""A chapter whose first case a bfloat16 step decides, and the rules of the tiny model that scores it so."""

# After "\n" the two candidates' logits are 0.25 and 0.251953125: one bfloat16 step apart, a tie of bfloat16
# probabilities (0.5 / 0.5) and not of float32 ones (0.4995 / 0.5005). After "a" a clear answer.
RULES = {"\n": {"3": 0.25, "4": 0.251953125}, "a": {"7": 2.0, "8": 1.0}}
CHAPTER = """\
chapter: demo
title: "rounding decides"
interpreter: "3.12"
cases:
  - id: rounded
    transcript: |-
      >>> print(3)
      █
    correct: "3"
    wrong: "4"
  - id: clear
    transcript: |-
      >>> print("a7")
      a█
    correct: "7"
    wrong: "8"
pairs:
  both: [rounded, clear]
"""
