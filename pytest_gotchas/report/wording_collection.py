"""The words of collection: a chapter file refused by its name or its chapter's name, a case refused by its ground
truth, and each chapter's marker. The plugin's nodes (plugin/nodes.py) and the `gotchas` fixture (plugin/probe.py)
say these; the facts they word (the refusals themselves) are truth/'s and cases/'."""

from __future__ import annotations

from collections.abc import Iterable


def duplicate_chapter(file: str, chapter: str, first: str) -> str:
    """Two chapter files give one chapter name, which pairs, reports and baselines are keyed by."""
    return (f"{file}: chapter name {chapter!r} is already the name of {first}; give each chapter file its own "
            "`chapter:` name (pairs, reports and baselines are keyed by it)")


def chapter_marker(marker: str, chapter: str) -> str:
    """The description of a chapter's marker (`-m gotchas_<chapter>`), as pytest --markers lists it."""
    return f"{marker}: the cases of chapter {chapter} (pytest-gotchas)"


def refused_case(refusals: Iterable[str]) -> str:
    """The failure of a case whose prompt or candidates are not what Python prints: each refusal in full."""
    return "ground truth refuses this case:\n" + "\n".join(refusals)


def unsafe_file_name(shown: str) -> str:
    """A chapter file whose path holds what pytest would write raw into node ids and the JUnit XML (`shown`:
    escaped)."""
    return (f"{shown}: a chapter file's name may not hold control characters (pytest would write them into node ids "
            "and the JUnit XML, which cannot hold them); rename the file")
