"""README is the newcomer's page and docs/ holds the rest: every relative link in them reaches a file (and a heading,
when it names one), README links every docs page, each page links back, and README stays short. The contents of
the pages are checked where they are kept in step with the code: the options table (unit/plugin/test_options.py),
the case library (unit/test_catalogue.py) and what a snippet cannot read (unit/truth/test_isolation.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import REPO

README = REPO / "README.md"
PAGES = sorted((REPO / "docs").glob("*.md"))
LINK = re.compile(r"!?\[([^\]]*)\]\(([^)\s]+)\)")


def unfenced(text: str) -> str:
    """The text outside fenced code blocks (a `# comment` in a shell block is no heading)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def prose(text: str) -> str:
    """The text outside fenced code blocks and inline code, where a link is a link."""
    return re.sub(r"`[^`\n]*`", "", unfenced(text))


def links(path: Path) -> list[str]:
    return [target for _, target in LINK.findall(prose(path.read_text(encoding="utf-8")))]


def anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    headings = re.findall(r"^#+ (.+)$", unfenced(path.read_text(encoding="utf-8")), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def relative(target: str) -> bool:
    return not re.match(r"[a-z][a-z0-9+.-]*:", target) and not target.startswith("#")


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(path: Path) -> None:
    for target in filter(relative, links(path)):
        file, _, anchor = target.partition("#")
        where = (path.parent / file).resolve()
        assert where.is_file(), f"{path.relative_to(REPO)}: link {target!r} names no file"
        if anchor and where.suffix == ".md":
            assert anchor in anchors(where), f"{path.relative_to(REPO)}: link {target!r} names no heading"


def test_readme_links_every_docs_page() -> None:
    linked = {(REPO / target.partition("#")[0]).resolve() for target in filter(relative, links(README))}
    assert PAGES and [p for p in PAGES if p.resolve() not in linked] == []


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_each_page_says_what_it_covers_and_links_back(path: Path) -> None:
    title, lead = path.read_text(encoding="utf-8").split("\n\n", 2)[:2]
    assert re.fullmatch(r"# \S.*", title), f"{path.name} starts with no title"
    assert "](../README.md)" in lead, f"{path.name}: the line under its title does not link back to README"


def test_readme_stays_short_and_leads_with_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 230
    first = re.search(r"```(?:bash|sh|shell|console)?\n(.*?)```", text, re.S)
    assert first, "README has no fenced shell block"
    commands = [line for line in first.group(1).splitlines() if line and not line.startswith("#")]
    assert [c.rsplit(" && ", 1)[-1] for c in commands] == ["pytest --gotchas cases/", "pytest tests/ -n 2"]
