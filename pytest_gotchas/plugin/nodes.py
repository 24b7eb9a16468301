"""The collection tree: a chapter file, and one item per case and model.

Items request the session fixture `gotchas_model` the way pytest's own doctest items request `doctest_namespace`
(plugin/compat.py), so `--setup-show` shows it and pytest's fixture machinery owns the model. With several models
each item carries the model as its parameter, as a parametrized test does: pytest then groups the items by model
and tears one model down before it sets up the next, so one model is in memory at a time.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from ..cases.chapter import CaseFileError
from ..results.schema import CaseResult
from ..results.verdict import Status
from ..scoring.scorer import GotchasError
from ..truth.collect import Planned
from . import compat
from .state import MODEL_FIXTURE, PLUGIN
from .warning import GotchasWarning


class ChapterFile(pytest.File):
    def collect(self) -> list[GotchaItem]:
        gotchas = self.config.stash[PLUGIN]
        try:
            plan = gotchas.collector.plan_chapter(self.path, _relative(self.path, self.config.rootpath))
        except CaseFileError as error:
            raise self.CollectError(str(error)) from None
        first = gotchas.chapter_files.setdefault(plan.chapter.name, self.path)
        if first != self.path:
            raise self.CollectError(
                f"{plan.chapter.path.name}: chapter name {plan.chapter.name!r} is already the name of "
                f"{_relative(first, self.config.rootpath)}; give each chapter file its own `chapter:` name (pairs, "
                "reports and baselines are keyed by it)")
        for line, message in plan.warnings:
            warnings.warn_explicit(GotchasWarning(message), category=None, filename=str(self.path), lineno=line)
        if plan.refused:
            raise self.CollectError("ground truth refuses these cases:\n" + "\n".join(plan.refused))
        gotchas.know(plan.info)
        items = []
        several = len(gotchas.model_ids) > 1
        for index, model in enumerate(gotchas.model_ids):
            for planned in plan.planned:
                name = f"{planned.case.id}[{model}]" if several else planned.case.id
                item = GotchaItem.from_parent(self, name=name, planned=planned, model=model,
                                              index=index if several else None)
                item.extra_keyword_matches.update({planned.chapter.name, model})
                items.append(item)
        return items


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
        gotchas = self.config.stash[PLUGIN]
        planned = self.planned
        if planned.status != Status.SCORED:
            self.result = planned.result(model=self.model)
            if planned.status in (Status.SKIPPED, Status.EXCLUDED, Status.CRASH):
                # Located at the case, not at this line, in `-rs` output: as pytest's own skip marks do.
                raise pytest.skip.Exception(planned.message or planned.status, _use_item_location=True)
            return
        scorer = self.funcargs[MODEL_FIXTURE]  # type: ignore[attr-defined]
        self.result = scorer.score(planned)
        for note in gotchas.take_notes(scorer):
            warnings.warn_explicit(GotchasWarning(note), category=None, filename=str(self.path),
                                   lineno=planned.case.line)
        failure, stop = gotchas.failure(self.result, scorer, planned.info)
        if stop:
            self.session.shouldstop = stop
        if failure:
            raise GotchasError(failure)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, GotchasError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.planned.case.line - 1, f"{self.planned.info.label}: {self.name}"


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
