"""The collection tree: a chapter file, and one item per case and model.

Items request the session fixture `gotchas_model` the way pytest's own doctest items request `doctest_namespace`,
so `--setup-show` shows it and pytest's fixture machinery owns the model. With several models each item carries
the model as its parameter, as a parametrized test does: pytest then groups the items by model and tears one model
down before it sets up the next, so one model is in memory at a time.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from ..cases.chapter import CaseFileError
from ..truth.collect import Planned
from ..results.schema import CaseResult
from ..scoring.scorer import GotchasError
from ..results.verdict import Status

MODEL_FIXTURE = "gotchas_model"
PLUGIN = pytest.StashKey[Any]()  # the run's plugin.GotchasPlugin


class GotchasWarning(pytest.PytestWarning):
    """Ground truth differs on this interpreter in an implementation-defined chapter, or a model's convention
    looks wrong."""


def _callspec(model: str, index: int) -> Any:
    """The parameter of an item of a run of several models, in the form pytest gives a parametrized test's items
    (CallSpec since pytest 9.1, CallSpec2 before): pytest reorders and sets up session fixtures by it."""
    from _pytest import python
    from _pytest.scope import Scope

    kind = getattr(python, "CallSpec", None) or getattr(python, "CallSpec2")
    return kind(params={MODEL_FIXTURE: model}, indices={MODEL_FIXTURE: index},
                _arg2scope={MODEL_FIXTURE: Scope.Session}, _idlist=(model,), marks=[])


class ChapterFile(pytest.File):
    def collect(self) -> list[GotchaItem]:
        plugin = self.config.stash[PLUGIN]
        try:
            plan = plugin.collector.plan_chapter(self.path, _relative(self.path, self.config.rootpath))
        except CaseFileError as error:
            raise self.CollectError(str(error)) from None
        first = plugin.chapter_files.setdefault(plan.chapter.name, self.path)
        if first != self.path:
            raise self.CollectError(
                f"{plan.chapter.path.name}: chapter name {plan.chapter.name!r} is already the name of "
                f"{_relative(first, self.config.rootpath)}; give each chapter file its own `chapter:` name (pairs, "
                "reports and baselines are keyed by it)")
        for line, message in plan.warnings:
            warnings.warn_explicit(GotchasWarning(message), category=None, filename=str(self.path), lineno=line)
        if plan.refused:
            raise self.CollectError("ground truth refuses these cases:\n" + "\n".join(plan.refused))
        items = []
        several = len(plugin.model_ids) > 1
        for index, model in enumerate(plugin.model_ids):
            for planned in plan.planned:
                name = f"{planned.case.id}[{model}]" if several else planned.case.id
                item = GotchaItem.from_parent(self, name=name, planned=planned, model=model,
                                              index=index if several else None)
                item.extra_keyword_matches.update({planned.chapter.name, model})
                items.append(item)
        return items


class GotchaItem(pytest.Item):
    def __init__(self, *, planned: Planned, model: str, index: int | None, **kwargs: Any) -> None:
        from _pytest.fixtures import TopRequest

        super().__init__(**kwargs)
        self.planned = planned
        self.model = model
        self.result: CaseResult | None = None
        if index is not None:
            self.callspec = _callspec(model, index)
        self.add_marker(pytest.mark.usefixtures(MODEL_FIXTURE))
        # What pytest's doctest items do to take part in fixtures.
        self.obj = self.cls = None
        self._fixtureinfo = self.session._fixturemanager.getfixtureinfo(node=self, func=None, cls=None)
        self.fixturenames = self._fixtureinfo.names_closure
        self.funcargs: dict[str, object] = {}
        self._request = TopRequest(self, _ispytest=True)  # type: ignore[arg-type]

    def setup(self) -> None:
        self._request._fillfixtures()

    def runtest(self) -> None:
        plugin = self.config.stash[PLUGIN]
        planned = self.planned
        if planned.status != Status.SCORED:
            self.result = planned.result(model_id=self.model)
            if planned.status in (Status.SKIPPED, Status.EXCLUDED, Status.CRASH):
                # Located at the case, not at this line, in `-rs` output: as pytest's own skip marks do.
                raise pytest.skip.Exception(planned.message or planned.status, _use_item_location=True)
            return
        scorer = self.funcargs[MODEL_FIXTURE]
        self.result = scorer.score(planned)
        for note in plugin.take_notes(scorer):
            warnings.warn_explicit(GotchasWarning(note), category=None, filename=str(self.path),
                                   lineno=planned.case.line)
        failures = plugin.failures(self.result)
        if failures:
            raise GotchasError(failures)

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
