"""What the tests of `gotchas new` share: a snippet (the late-binding closure) with the transcript and the case it
gives, a hand-written chapter to append to, the rules of the tiny model that scores it, and running the command
and reading what it printed."""

from __future__ import annotations

import pytest

# After "[" the tiny model says "0" (the misreading) over "2" (the truth); after "2" it prefers "," to "]".
RULES = {"[": {"0": 2.0, "2": 1.0}, "2": {",": 1.0, "]": 3.0}}

LATE_CLOSURE = """\
fs = []
for i in range(3):
    fs.append(lambda: i)
[f() for f in fs]
"""

LATE_CLOSURE_TRANSCRIPT = """\
>>> fs = []
>>> for i in range(3):
...     fs.append(lambda: i)
... 
>>> [f() for f in fs]
[2, 2, 2]
"""

LATE_CLOSURE_CASE = """\
  - id: late-closure
    transcript: |-
      >>> fs = []
      >>> for i in range(3):
      ...     fs.append(lambda: i)
      ... 
      >>> [f() for f in fs]
      [█
    correct: "2"
    wrong: "0"
"""

# A chapter with comments, a column-0 comment that belongs to `pairs:`, and a key after the cases.
CHAPTER = """\
# A hand-written chapter: its comments and layout must survive an append.
chapter: demo
title: "demo chapter"   # inline comment
interpreter: "3.11"

cases:
  # the first case
  - id: plus
    transcript: |-
      >>> 1 + 1
      █
    correct: "2"
    wrong: "3"

  - id: minus
    transcript: |-
      >>> 1 - 1
      █
    correct: "0"
    wrong: "1"

# pairs belong here
pairs:
  plus-vs-minus: [plus, minus]
"""


def new(*args: str) -> list[str]:
    return ["new", *args]


def printed_case(stdout: str) -> str:
    return stdout.split("# the case, ready to paste under `cases:` in a chapter file\n", 1)[1]


def error_of(capsys: pytest.CaptureFixture[str], code: int) -> str:
    assert code == 1
    return capsys.readouterr().err
