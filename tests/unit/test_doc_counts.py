"""The documents' counts of the case library (README.md and docs/*.md: chapters, scored cases, pairs, twins) are the
library's own, counted from the chapter files under cases/ without a model (docs/cases.md's table is held by
test_catalogue.py). A chapter added or removed fails here until the prose says so too."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import CASES_DIR, REPO

from pytest_gotchas.cases.chapter import Chapter, load_chapter

WORDS = {"twelve": 12, "seventeen": 17, "twenty-nine": 29, "thirty-four": 34}


def library() -> list[Chapter]:
    return [load_chapter(p) for p in sorted(CASES_DIR.glob("*.yaml"))]


def counts() -> dict[str, int]:
    chapters = library()
    return {
        "chapters": len(chapters),
        "scored": sum(1 for ch in chapters for c in ch.cases if c.scored),
        "pairs": sum(len(ch.pairs) for ch in chapters),
        "twins": sum(len(ch.twins) for ch in chapters),
        "own": sum(1 for ch in chapters if not _from_spec(ch)),
        "pair chapters": sum(1 for ch in chapters if ch.pairs and not _from_spec(ch)),
        "twin chapters": sum(1 for ch in chapters if ch.twins and not _from_spec(ch)),
        "most pairs": max(len(ch.pairs) for ch in chapters),
        "families": sum(len(ch.families) for ch in chapters),
    }


def _from_spec(chapter: Chapter) -> bool:
    return chapter.path.read_text(encoding="utf-8").startswith("# Spec section:")


def number(text: str) -> int:
    return int(text) if text.isdigit() else WORDS[text.lower()]


# (file, a pattern whose groups are counts, the count each group states)
CLAIMS: list[tuple[str, str, list[str]]] = [
    ("README.md", r"a run of all (\d+) chapters \((\d+) scored cases: \d+ verdicts and ch\.4's crash case; (\d+) "
                  r"pairs, (\d+)\s+twins\)", ["chapters", "scored", "pairs", "twins"]),
    ("README.md", r"gemma-3-270m passes \d+ of the (\d+) pairs", ["pairs"]),
    ("README.md", r"the case library \(([\w-]+) chapters", ["chapters"]),
    ("docs/cases.md", r"The ([\w-]+) chapters under `cases/`", ["chapters"]),
    ("docs/cases.md", r"\n([\w-]+) chapters, one YAML file each", ["chapters"]),
    ("docs/cases.md", r"the other ([\w-]+) are this project's own\. (\w+) of them", ["own", "pair chapters"]),
    ("docs/cases.md", r"The other (\w+)\s+\(ch\.17-28\) are chapters of twins", ["twin chapters"]),
    ("docs/cases.md", r"With (\d+) pairs, chapters of", ["pairs"]),
    ("docs/cases.md", r"(\d+) families, one for each of\s+the library's (\d+) pairs", ["families", "pairs"]),
    ("docs/report.md", r"on CPU over all (\d+) chapters", ["chapters"]),
    ("docs/models.md", r"A chapter holds at most (\d+) pairs", ["most pairs"]),
]


@pytest.mark.parametrize(("name", "pattern", "keys"), CLAIMS, ids=[f"{c[0]}:{c[2]}" for c in CLAIMS])
def test_each_count_the_documents_state_is_the_librarys(name: str, pattern: str, keys: list[str]) -> None:
    text = (REPO / name).read_text(encoding="utf-8")
    found = re.search(pattern, text)
    assert found is not None, f"{name} no longer says {pattern!r}: update the claim here with the prose"
    actual = counts()
    assert {k: number(g) for k, g in zip(keys, found.groups())} == {k: actual[k] for k in keys}, name
