"""The collection tree: a chapter file, and one item per case and model.

Items request the session fixture `gotchas_model` the way pytest's own doctest items request `doctest_namespace`
(compat.py), so `--setup-show` shows it and pytest's fixture machinery owns the model. With several models
each item carries the model as its parameter, as a parametrized test does: pytest then groups the items by model
and tears one model down before it sets up the next, so one model is in memory at a time.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from ..cases.chapter import CaseFileError
from ..baseline.gate import case_failure
from ..report import wording, wording_baseline, wording_collection
from ..report.escape import escape
from ..results.schema import CaseResult, ChapterInfo
from ..results.verdict import Status
from ..results.vocabulary import EdgeCorruption
from ..errors import GotchasError
from ..cases.chapter import Chapter
from ..cases.families import keywords
from ..truth.collect import Planned, chapter_info
from ..truth.execute import ExecutionError
from ..truth.partners import Partner, partners
from .. import compat
from .state import MODEL_FIXTURE, SESSION
from .warning import GotchasWarning


class ChapterFile(pytest.File):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # By model: the case order and the selected cases that GotchaItem.partners reads (--gotchas-patch).
        self.views: dict[str, tuple[dict[str, int], dict[str, Planned]]] = {}
        self.chapter: Chapter | None = None  # set by collect, with what every result records of the chapter
        self.info: ChapterInfo | None = None
        self.planned: list[Planned] = []  # every case of the chapter, selected or not (the edges' chapter mean)

    def collect(self) -> list[pytest.Item]:
        """One item per case and model, from the file alone: nothing is executed here. The ground truth of the
        items left after pytest's deselection (-k, -m, --deselect) is executed by `verify_selected`, still within
        collection, so that `-k sets` costs the sets chapter only."""
        gotchas = self.config.stash[SESSION]
        shown = _relative(self.path, self.config.rootpath)
        try:
            chapter = gotchas.collector.load(self.path, shown)
        except CaseFileError as error:
            raise self.CollectError(escape(str(error), lines=True)) from None
        self.chapter, self.info = chapter, chapter_info(chapter, shown)
        first = gotchas.chapter_files.setdefault(chapter.name, self.path)
        if first != self.path:
            raise self.CollectError(escape(wording_collection.duplicate_chapter(
                chapter.path.name, chapter.name, _relative(first, self.config.rootpath))))
        # `-m gotchas_<chapter>` selects this chapter exactly, where `-k` matches substrings of every id.
        marker = chapter_marker(chapter.name)
        self.config.addinivalue_line("markers", wording_collection.chapter_marker(marker, chapter.name))
        self.add_marker(getattr(pytest.mark, marker))
        gotchas.know(self.info)
        items: list[pytest.Item] = []
        several = len(gotchas.model_ids) > 1
        planned_cases = gotchas.collector.prepare(chapter, self.info)  # shared by the models' items
        self.planned = planned_cases
        family_names = keywords(chapter)  # `-k FAMILY` and `-k INSTANCE`
        for index, model in enumerate(gotchas.model_ids):
            for planned in planned_cases:
                name = f"{planned.case.id}[{model}]" if several else planned.case.id
                item = GotchaItem.from_parent(self, name=name, planned=planned, model=model,
                                              index=index if several else None)
                item.extra_keyword_matches.update({chapter.name, model, *family_names.get(planned.case.id, ())})
                items.append(item)
        return items

    def verify(self, items: list[GotchaItem]) -> None:
        """Execute and check the ground truth of this chapter's selected items (`verify_selected`); with the edges'
        chapter mean (`whole_chapter`), of every case of the chapter."""
        gotchas = self.config.stash[SESSION]
        assert self.chapter is not None and self.info is not None  # collected
        planned = list({id(item.planned): item.planned for item in items}.values())  # a case once, whatever models
        # the edges' mean is over every case, whatever -k selected; a case only the mean needs says no warning
        chapter_plan = gotchas.collector.verify(self.chapter, self.info,
                                                self.planned if whole_chapter(gotchas.settings) else planned)
        selected = {case.case.line for case in planned}
        lost = gotchas.collector.cache.take_lost()
        if lost is not None:  # said once, where it happened: a run without the cache goes on
            warnings.warn_explicit(GotchasWarning(escape(wording.transcript_cache_lost(lost.directory, lost.reason))),
                                   category=None, filename=str(self.path), lineno=0)
        for line, message in [(line, message) for line, message in chapter_plan.warnings if line in selected]:
            warnings.warn_explicit(GotchasWarning(escape(message, lines=True)), category=None, filename=str(self.path),
                                   lineno=line)


def whole_chapter(settings: Any) -> bool:
    """Whether the run needs every case of a selected chapter verified and scored for patching, not the selected
    ones alone: the edges' circuits against the chapter's mean (scoring/chaptermean.py)."""
    return bool(settings.patch_edges) and settings.patch_edges_corrupt == EdgeCorruption.MEAN


def chapter_marker(name: str) -> str:
    """The marker every case of a chapter carries (`-m gotchas_sets`), registered as the chapter is collected."""
    return f"gotchas_{name}"


def verify_selected(session: pytest.Session, items: list[pytest.Item]) -> None:
    """After pytest's deselection, still in collection: execute the ground truth of the selected cases only, chapter
    by chapter, in place. A refused case becomes one failing item in the place of its first selected item, whatever
    the models (its ground truth is theirs alike); a chapter whose snippets cannot be executed at all is reported as
    that file's collection error, as when it was executed while collecting, and its items leave the run."""
    gotchas = session.config.stash[SESSION]
    by_chapter: dict[ChapterFile, list[GotchaItem]] = {}
    for item in items:
        if isinstance(item, GotchaItem) and isinstance(item.parent, ChapterFile):
            by_chapter.setdefault(item.parent, []).append(item)
    _execute_ahead(session, items, by_chapter)
    failed: set[ChapterFile] = set()
    for done, (chapter, selected) in enumerate(by_chapter.items()):
        gotchas.progress.show("executing ground truth of chapter file", done, len(by_chapter),
                              _relative(chapter.path, session.config.rootpath))  # a cold cache: minutes for all
        try:
            chapter.verify(selected)
        except ExecutionError as error:
            failed.add(chapter)
            report = pytest.CollectReport(chapter.nodeid, "failed", escape(str(error), lines=True), [])
            session.ihook.pytest_collectreport(report=report)
    kept: list[pytest.Item] = []
    refused: set[int] = set()
    for item in items:
        if not isinstance(item, GotchaItem) or not isinstance(item.parent, ChapterFile):
            kept.append(item)
        elif item.parent in failed:
            continue
        elif not item.planned.refusals:
            kept.append(item)
        elif id(item.planned) not in refused:
            refused.add(id(item.planned))
            refusal = RefusedItem.from_parent(item.parent, name=item.planned.case.id, planned=item.planned)
            refusal.extra_keyword_matches.update(item.extra_keyword_matches)
            kept.append(refusal)
    items[:] = kept


def _execute_ahead(session: pytest.Session, items: list[pytest.Item],
                   by_chapter: dict[ChapterFile, list[GotchaItem]]) -> None:
    """The first case's model starts loading, and every selected chapter's snippets are executed side by side
    (plugin/ahead.py), for the chapters to be checked in order after; nothing ahead with --gotchas-jobs 1."""
    from . import ahead

    gotchas = session.config.stash[SESSION]
    scored = [item for item in items if isinstance(item, GotchaItem) and item.planned.status == Status.SCORED]
    first = scored[0].model if scored else None
    # Their prompts are the chapter's own, known before the snippets run (a family's drawn case is cut from them).
    known = {id(item.planned): item.planned for item in scored
             if item.model == first and item.planned.case.drawn is None}
    ahead.start(session, first, list(known.values()))
    if gotchas.settings.jobs == 1 or not by_chapter:
        return
    chapters = [chapter.planned if whole_chapter(gotchas.settings)
                else list({id(item.planned): item.planned for item in selected}.values())
                for chapter, selected in by_chapter.items()]
    gotchas.collector.execute_ahead(chapters, lambda done, total: gotchas.progress.show(
        "executing ground truth of snippet", done, total))


class GotchaItem(pytest.Item):
    def __init__(self, *, planned: Planned, model: str, index: int | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.planned = planned
        self.model = model
        self.result: CaseResult | None = None
        if index is not None:
            self.callspec = compat.callspec(MODEL_FIXTURE, model, index)
        self.add_marker(pytest.mark.usefixtures(MODEL_FIXTURE))
        compat.take_part_in_fixtures(self)

    def setup(self) -> None:
        compat.fill_fixtures(self)

    def runtest(self) -> None:
        gotchas = self.config.stash[SESSION]
        planned = self.planned
        if planned.status != Status.SCORED:
            self.result = planned.result(model=self.model)
            if planned.status in (Status.SKIPPED, Status.EXCLUDED, Status.CRASH):
                # Located at the case, not at this line, in `-rs` output: as pytest's own skip marks do.
                raise compat.skip_at_item(escape(planned.message or planned.status, lines=True))
            return
        scorer = self.funcargs[MODEL_FIXTURE]  # type: ignore[attr-defined]
        pairs = self.partners() if scorer.config.patch else []
        with gotchas.progress.around():  # patching takes a while a pair
            if pairs:
                if gotchas.patch_total is None:
                    gotchas.patch_total = sum(len(i.partners()) for i in self.session.items
                                              if isinstance(i, GotchaItem) and i.planned.status == Status.SCORED)
                gotchas.progress.show("patching pair", gotchas.patch_done, gotchas.patch_total,
                                      ", ".join(p.group for p in pairs))
                gotchas.patch_done += len(pairs)
            self.result = scorer.score(planned, pairs, self.chapter_cases() if pairs else [])
        gotchas.keep_notes(scorer)  # said once, at the run's end: they are the model's, not this case's
        failure = case_failure(gotchas.gate, self.result, scorer.model_info, planned.info, gotchas.settings.strict)
        if failure.stops:
            self.session.shouldstop = wording_baseline.REFUSED_STOP
        text = wording_baseline.case_failure_text(failure)
        if text:
            raise GotchasError(text)

    def partners(self) -> list[Partner]:
        """--gotchas-patch: the pairs (and twins) this case patches (truth/partners.py), among the cases selected for
        its model. Every process collects every item, so the item computes its pairs wherever it runs (xdist), and a
        serial run gives the same cells."""
        return partners(self.planned, *self._chapter_view())

    def chapter_cases(self) -> list[Planned]:
        """With the edges' mean (`whole_chapter`): every case of this item's chapter, in chapter order, selected or
        not (the scorer keeps those scored and verified); else none."""
        chapter = self.parent
        assert isinstance(chapter, ChapterFile)
        return chapter.planned if whole_chapter(self.config.stash[SESSION].settings) else []

    def _chapter_view(self) -> tuple[dict[str, int], dict[str, Planned]]:
        """The chapter's case order and its selected cases for this item's model, computed once per chapter and
        model (kept on the chapter's node): per item, a scan of every item was quadratic in the chapter's size."""
        chapter = self.parent
        assert isinstance(chapter, ChapterFile)
        if self.model not in chapter.views:
            chapter.views[self.model] = (
                {case_id: n for n, case_id in enumerate(self.planned.info.case_ids)},
                {i.planned.case.id: i.planned for i in self.session.items
                 if isinstance(i, GotchaItem) and i.parent is chapter and i.model == self.model})
        return chapter.views[self.model]

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, GotchasError):
            return escape(str(excinfo.value), lines=True)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.planned.case.line - 1, escape(f"{self.planned.info.label}: {self.name}")


class CaseRefused(Exception):
    """Ground truth refuses a case; the message names file, line and case for each prompt it refuses."""


class RefusedItem(pytest.Item):
    """A case whose prompt or candidates are not what Python prints (or whose output changes between runs, or that
    never finishes): it fails with the refusal's full message, and loads no model."""

    def __init__(self, *, planned: Planned, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.planned = planned

    @property
    def message(self) -> str:
        return wording_collection.refused_case(self.planned.refusals)

    def runtest(self) -> None:
        raise CaseRefused(self.message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, CaseRefused):
            return escape(str(excinfo.value), lines=True)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.planned.case.line - 1, escape(f"{self.planned.info.label}: {self.name} (refused)")


def chapter_order(items: list[pytest.Item]) -> None:
    """The chapters' items in the order of their files' numbers, numbers by value (cases/2-sets.yaml before
    cases/10-rounding.yaml, as the reports order them), each chapter's cases in file order. Other items keep their
    places; the sort is stable, so pytest's grouping by model that follows is unchanged."""
    places = [n for n, item in enumerate(items) if isinstance(item, (GotchaItem, RefusedItem))]
    cases = [item for item in items if isinstance(item, (GotchaItem, RefusedItem))]
    ordered = sorted(cases, key=lambda item: item.planned.info.order)
    for n, item in zip(places, ordered):
        items[n] = item


def refuse_unsafe_name(path: Path, root: Path) -> None:
    """A chapter file whose path (as its node id writes it) holds a control character, a bidirectional control or
    a byte that is not UTF-8 is refused before it becomes a node: pytest writes node ids raw into the JUnit XML,
    where such a character is not well-formed. The collection error is its folder's, naming the file escaped."""
    shown = _relative(path, root)
    if escape(shown) != shown:
        raise pytest.Collector.CollectError(wording_collection.unsafe_file_name(escape(shown)))


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
