"""A chapter whose case has variants: read by the chapter tests, scored by the plugin's variants tests."""

CHAPTER = """\
chapter: demo
title: "names decide"
interpreter: "3.12"
cases:
  - id: named
    transcript: |-
      >>> xs = [7]
      >>> xs
      [█
    correct: "7"
    wrong: "8"
    variants:
      - id: rename-ys
        transcript: |-
          >>> ys = [7]
          >>> ys
          [█
        correct: "7"
        wrong: "8"
      - id: rename-zs
        transcript: |-
          >>> zs = [7]
          >>> zs
          [█
        correct: "7"
        wrong: "8"
  - id: steady
    transcript: |-
      >>> print("a7")
      a█
    correct: "7"
    wrong: "8"
pairs:
  both: [named, steady]
"""
