"""The catalogue of the chapters (docs/cases.md) is the chapter files' own account: every number is counted from
them, and every authority named there is cited in the chapter's header comment."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import REPO

from pytest_gotchas.cases.chapter import Chapter, load_chapter

START, END = "<!-- catalogue -->", "<!-- /catalogue -->"
COLUMNS = ["ch.", "title", "scored cases", "pairs", "twins", "variants", "interpreter", "from", "authority"]


def header_comment(path: Path) -> str:
    """The comment lines above `chapter:`, as one line of words."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    return " ".join(" ".join(lines).split())


def chapters() -> list[tuple[Chapter, str]]:
    found = [(load_chapter(p), header_comment(p)) for p in (REPO / "cases").glob("*.yaml")]
    return sorted(found, key=lambda c: -1 if c[0].number is None else c[0].number)


def expected_row(chapter: Chapter, comment: str) -> list[str]:
    scored = [c for c in chapter.cases if c.scored]
    return [
        "" if chapter.number is None else str(chapter.number),
        chapter.title,
        str(len(scored)),
        str(len(chapter.pairs)),
        str(len(chapter.twins)),
        str(sum(len(c.variants) for c in scored)),
        chapter.cases[0].interpreter if len({c.interpreter for c in chapter.cases}) == 1 else "several",
        "spec" if comment.startswith("Spec section:") else "own",
    ]


def table() -> list[list[str]]:
    text = (REPO / "docs" / "cases.md").read_text(encoding="utf-8")
    assert START in text and END in text, f"docs/cases.md has no {START} ... {END} block"
    rows = [line for line in text.split(START, 1)[1].split(END, 1)[0].splitlines() if line.startswith("|")]
    cells = [[cell.strip() for cell in row.strip().strip("|").split("|")] for row in rows]
    assert cells[0] == COLUMNS
    return [[cell.replace("\\|", "|") for cell in row] for row in cells[2:]]


def test_one_row_per_chapter_with_its_counts() -> None:
    rows = table()
    body, total = rows[:-1], rows[-1]
    assert [row[:8] for row in body] == [expected_row(*c) for c in chapters()]
    found = chapters()
    assert total[:6] == [
        "", f"**{len(found)} chapters**",
        f"**{sum(1 for ch, _ in found for c in ch.cases if c.scored)}**",
        f"**{sum(len(ch.pairs) for ch, _ in found)}**",
        f"**{sum(len(ch.twins) for ch, _ in found)}**",
        f"**{sum(len(c.variants) for ch, _ in found for c in ch.cases if c.scored)}**",
    ]


@pytest.mark.parametrize("chapter, comment", chapters(), ids=[c.name for c, _ in chapters()])
def test_every_authority_named_is_cited_in_the_chapter(chapter: Chapter, comment: str) -> None:
    (row,) = [r for r in table()[:-1] if r[1] == chapter.title]
    cited = [a.strip() for a in row[8].split(";") if a.strip()]
    assert cited, f"{chapter.path.name}: the catalogue names no authority"
    for authority in cited:
        words = " ".join(re.sub(r"[*`]", "", authority).split())
        assert words in comment, f"{chapter.path.name}: {words!r} is not cited in its header comment"
