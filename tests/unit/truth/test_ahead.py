"""Collector.execute_ahead: the snippets of several chapters executed side by side in one pool, then checked chapter
by chapter, give what chapters executed one after another give: the same transcripts, refusals, warnings and
statuses, in the same order; an execution that cannot run is its chapter's error, as it was."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.chapters import HEADER, MISSING, UNSEEDED_SET, chapter_text
from helpers.execution import strong

from pytest_gotchas.truth import execute as execute_mod
from pytest_gotchas.truth.collect import ChapterPlan, Collector, chapter_info
from pytest_gotchas.cases.chapter import load_chapter
from pytest_gotchas.truth.execute import Cache, ExecutionError, Limits
from pytest_gotchas.truth.interpreters import Finder

FIRST = """
- id: right
  transcript: |-
    >>> print(1 + 1)
    █
  correct: "2"
  wrong: "3"
- id: wrong
  transcript: |-
    >>> print(2 + 2)
    █
  correct: "5"
  wrong: "4"
- id: shown
  transcript: |-
    >>> print(3 + 3)
    █
  unscored: "shown, not scored"
"""
SECOND = """
- id: differs
  transcript: |-
    >>> print(10 // 3)
    █
  correct: "4"
  wrong: "3"
- id: same
  transcript: |-
    >>> print(10 // 5)
    █
  correct: "2"
  wrong: "3"
"""
CHAPTERS = {
    "first.yaml": chapter_text(FIRST + MISSING, HEADER.replace("chapter: demo", "chapter: first")),
    "second.yaml": chapter_text(SECOND, HEADER.replace("chapter: demo", "chapter: second")
                                .replace("cases:", "implementation_defined: true\ncases:")),
    "third.yaml": chapter_text(UNSEEDED_SET, HEADER.replace("chapter: demo", "chapter: third")),
}


def plans(folder: Path, ahead: bool, jobs: int = 4) -> list[ChapterPlan]:
    """Every chapter planned, its snippets executed ahead in one pool or chapter by chapter; no transcript cache, so
    that each way executes every snippet."""
    collector = Collector(Finder(), Cache(None, strong()), Limits(), runs=3, jobs=jobs)
    chapters = []
    for name, text in CHAPTERS.items():
        (folder / name).write_text(text, encoding="utf-8")
        chapter = load_chapter(folder / name, name)
        info = chapter_info(chapter, name)
        chapters.append((chapter, info, collector.prepare(chapter, info)))
    if ahead:
        ticks: list[tuple[int, int]] = []
        collector.execute_ahead([planned for _, _, planned in chapters], lambda done, total: ticks.append((done, total)))
        assert ticks[-1] == (len(ticks), len(ticks)) == (6, 6)  # each snippet once (the missing interpreter: none)
    return [collector.verify(chapter, info, planned) for chapter, info, planned in chapters]


def facts(plan: ChapterPlan) -> list[object]:
    return [plan.refused, plan.warnings, [(p.case.id, p.status, p.message, p.refusals, p.outputs) for p in plan.planned]]


def test_chapters_executed_side_by_side_give_what_one_after_another_gives(tmp_path: Path, py312) -> None:
    serial = [facts(plan) for plan in plans(tmp_path, ahead=False, jobs=1)]
    ahead = [facts(plan) for plan in plans(tmp_path, ahead=True)]
    assert ahead == serial
    first, second, third = serial
    assert [": ".join(message.split(": ")[:2]) for message in first[0]] == ["first.yaml:11: case 'wrong'",
                                                                           "first.yaml:17: case 'shown'"]
    assert [line for line, _ in second[1]] == [6] and second[0] == []  # a warning, no refusal
    assert [case[1] for case in first[2] + second[2] + third[2]] == [
        "scored", "scored", "unscored", "skipped", "excluded", "scored", "unscored"]
    assert len({output.text for output in third[2][0][4]}) == 2  # the unseeded set, printed two ways


def test_an_execution_that_cannot_run_is_its_chapters_error(tmp_path: Path, py312,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    def full(*args: object, **kwargs: object) -> None:
        raise ExecutionError("cannot execute the snippets: no room")

    monkeypatch.setattr(execute_mod, "run_once", full)
    collector = Collector(Finder(), Cache(None, strong()), Limits(), runs=3)
    (tmp_path / "first.yaml").write_text(CHAPTERS["first.yaml"], encoding="utf-8")
    chapter = load_chapter(tmp_path / "first.yaml", "first.yaml")
    info = chapter_info(chapter, "first.yaml")
    planned = collector.prepare(chapter, info)
    collector.execute_ahead([planned])  # nothing raised here: each chapter's verify raises its own
    with pytest.raises(ExecutionError, match="no room"):
        collector.verify(chapter, info, planned)
