"""Chapter files written by the tests: the header, the text under `cases:`, the file itself, line numbers in it,
and the cases that several test modules write."""

from __future__ import annotations

import textwrap
from pathlib import Path

# A chapter header; the cases follow under `cases:` (line 5 is the first case line).
HEADER = """\
chapter: demo
title: "demo chapter"
interpreter: "3.12"
cases:
"""


def chapter_text(cases: str, header: str = HEADER, footer: str = "") -> str:
    """A chapter file: `cases` is the YAML list under `cases:` written at column 0 (it is indented here)."""
    body = textwrap.indent(textwrap.dedent(cases).strip("\n"), "  ") + "\n"
    return header + body + textwrap.dedent(footer)


def write_chapter_file(folder: Path, cases: str, name: str = "a.yaml", header: str = HEADER,
                       footer: str = "") -> tuple[Path, str]:
    """The chapter of `cases` written as `folder / name` (the `write_chapter` fixture's work): (path, text)."""
    text = chapter_text(cases, header, footer)
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path, text


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """1-based line of the nth line of `text` that contains `needle`."""
    hits = [n for n, line in enumerate(text.split("\n"), start=1) if needle in line]
    assert len(hits) >= nth, f"{needle!r} occurs {len(hits)} times in\n{text}"
    return hits[nth - 1]


ONE_CASE = """
- id: plus
  transcript: |-
    >>> 1 + 1
    █
  correct: "2"
  wrong: "3"
"""

# Two scored cases a pair or twin can name: `one` and `two`.
TWO_CASES = """
- id: one
  transcript: |-
    >>> [1, 2]
    [█
  correct: "1"
  wrong: "2"
- id: two
  transcript: |-
    >>> [2, 1]
    [█
  correct: "2"
  wrong: "1"
"""

MISSING = """
- id: nowhere
  interpreter: "3.99"
  transcript: |-
    >>> 1 + 1
    █
  unscored: "no such interpreter"
"""

UNSEEDED_SET = """
- id: letters
  transcript: |-
    >>> set(['a', 'b', 'c'])
    {'█
  unscored: "the order depends on the hash seed"
"""


def describe(py) -> str:
    """The line collection (truth/collect.py) appends to every refusal."""
    return f"  (python {py.version} at {py.path}; no variables set; 3 runs)"

# Two cases in one pair that a tiny model's rules decide (after `a` and after `b`): the chapter of the runs of
# several models, of two backends, and of the private pytest API's tests.
PAIR_CHAPTER = """\
chapter: demo
title: "two models"
interpreter: "3.12"
env: {PYTHONHASHSEED: "0"}
cases:
  - id: one
    transcript: |-
      >>> print("a7")
      a█
    correct: "7"
    wrong: "8"
  - id: two
    transcript: |-
      >>> print("b7")
      b█
    correct: "7"
    wrong: "8"
pairs:
  both: [one, two]
"""

# `one` (after "[") and `plus` (after a newline) are ok for REFUSED_BETWEEN_RULES' tiny model; `bad`'s candidates
# are not what Python prints: ground truth refuses it, between two cases that score.
REFUSED_BETWEEN = """
- id: one
  transcript: |-
    >>> [1, 2]
    [█
  correct: "1"
  wrong: "2"
- id: bad
  transcript: |-
    >>> 2 + 2
    █
  correct: "5"
  wrong: "3"
- id: plus
  transcript: |-
    >>> 1 + 1
    █
  correct: "2"
  wrong: "3"
"""
REFUSED_BETWEEN_RULES = {"[": {"1": 2.0, "2": 1.0}, "\n": {"2": 2.0, "3": 1.0}}


# The tiny model's rules (helpers/tinymodel.py) after `a` and `b`, and the chapter of the two cases they answer
# opposite ways: patching's and the edges' plugin tests.
SEVEN_EIGHT_RULES = {"a": {"7": 2.0, "8": 0.5}, "b": {"8": 2.0, "7": 0.5}}


def seven_eight_chapter(title: str, pairs: str, *others: tuple[str, str, str], name: str = "demo") -> str:
    """Chapter `name`: `seven` (`print("a7")`, answers 7) and `eight` (`print("b8")`, answers 8), then each of
    `others` = (its id, the expression printed, the output's first character, where it is cut), answering 7, then
    the chapter's `pairs:` lines."""
    extra = "".join(f"""  - id: {name}
    transcript: |-
      >>> print({printed})
      {cut}█
    correct: "7"
    wrong: "8"
""" for name, printed, cut in others)
    return f'''\
chapter: {name}
title: "{title}"
interpreter: "3.11"
env: {{PYTHONHASHSEED: "0"}}
cases:
  - id: seven
    transcript: |-
      >>> print("a7")
      a█
    correct: "7"
    wrong: "8"
  - id: eight
    transcript: |-
      >>> print("b8")
      b█
    correct: "8"
    wrong: "7"
{extra}pairs:
{pairs}'''


def tiny_runner(pytester, model, chapter: str):
    """`run(*args)`: pytest --gotchas on `chapter` (as demo.yaml) with the tiny `model`, its JSON report read back
    ({} when none was written)."""
    from helpers.results import read_report

    def run(*args: str):
        (pytester.path / "demo.yaml").write_text(chapter)
        out = pytester.path / "result.json"
        out.unlink(missing_ok=True)
        result = pytester.runpytest_subprocess(
            "--gotchas", "--gotchas-model", str(model), "--gotchas-cache-dir", str(pytester.path / "models"),
            "-o", f"cache_dir={pytester.path / 'pc'}", "--rootdir", str(pytester.path), "-p", "no:randomly",
            "--gotchas-json", str(out), *args)
        return result, read_report(out) if out.exists() else {}
    return run
