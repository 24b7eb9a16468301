"""pytest hooks: options, collection of chapter files, verdicts as report categories, the summary.

Inert unless --gotchas (or `gotchas = true` in the ini) is given. torch and transformers are imported only when
the first case is scored, so --collect-only and runs with nothing to score never load them.
"""

from __future__ import annotations

import datetime
import platform
import warnings
from pathlib import Path
from typing import Any

import pytest

from . import options
from .cases import CaseFileError, looks_like_chapter
from .report import json_report, terminal
from .results import CRASH, EXCLUDED, SCORED, SKIPPED, UNSCORED, CaseResult
from .session import GotchasError, GotchasSession, ModelUnavailable, Planned, worker_id

STATE = pytest.StashKey[GotchasSession]()
# pytest summary categories must be single words: pytester reads "3 prime-dep" back as "prime".
CATEGORY = {"ok": ("ok", ".", "ok"), "MISS": ("MISS", "M", "MISS"), "tie": ("tie", "T", "tie"),
            "noise": ("noise", "n", "noise"), "prime-dep": ("prime_dep", "P", "prime-dep"),
            UNSCORED: ("unscored", "u", "unscored"), CRASH: ("crash", "C", "CRASH")}


class GotchasWarning(pytest.PytestWarning):
    """Ground truth differs on this interpreter in an implementation-defined chapter."""


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    settings = options.read(config)
    if not settings.enabled:
        return
    cache = getattr(config, "cache", None)  # None under -p no:cacheprovider: execute without caching
    cache_dir = cache.mkdir("gotchas") / "transcripts" if cache else None
    state = GotchasSession(settings, cache_dir, worker_id())
    config.stash[STATE] = state
    config.pluginmanager.register(Reporter(state), "gotchas-reporter")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if STATE not in parent.config.stash or file_path.suffix not in (".yaml", ".yml"):
        return None
    if not looks_like_chapter(file_path):
        return None
    return ChapterFile.from_parent(parent, path=file_path)


class ChapterFile(pytest.File):
    def collect(self) -> list["GotchaItem"]:
        session = self.config.stash[STATE]
        display = self.config.rootpath and _relative(self.path, self.config.rootpath)
        try:
            plan = session.plan_chapter(self.path, display)
        except CaseFileError as error:
            raise self.CollectError(str(error)) from None
        for message in plan.warnings:
            warnings.warn_explicit(GotchasWarning(message), category=None, filename=str(self.path),
                                   lineno=1)
        if plan.refused:
            raise self.CollectError("ground truth refuses these cases:\n" + "\n".join(plan.refused))
        items = []
        for planned in plan.planned:
            item = GotchaItem.from_parent(self, name=planned.case.id, planned=planned)
            item.extra_keyword_matches.add(planned.chapter.name)
            items.append(item)
        return items


class GotchaItem(pytest.Item):
    def __init__(self, *, planned: Planned, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.planned = planned
        self.result: CaseResult | None = None

    def runtest(self) -> None:
        planned = self.planned
        if planned.status == SCORED:
            self.result = self.config.stash[STATE].score(planned)
            return
        self.result = planned.result()
        if planned.status in (SKIPPED, EXCLUDED, CRASH):
            pytest.skip(planned.message or planned.status)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, GotchasError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.planned.case.line - 1, f"{self.planned.info.label}: {self.name}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if isinstance(item, GotchaItem) and call.when == "call":
        if item.result is not None:
            report.gotchas = item.result.to_dict()
        if call.excinfo is not None and isinstance(call.excinfo.value, ModelUnavailable):
            # One clear error for the session, not one per case.
            item.session.shouldstop = "gotchas: the model could not be loaded"
    return report


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    data = getattr(report, "gotchas", None)
    if data is None or report.when != "call" or report.failed:
        return None
    key = data["verdict"] if data["status"] == SCORED else data["status"]
    if key not in CATEGORY:
        return None
    category, letter, word = CATEGORY[key]
    if data["status"] == SCORED:
        return category, letter, (terminal.verbose_word(CaseResult.from_dict(data)), _markup(key))
    return category, letter, (word, _markup(key))


def _markup(key: str) -> dict[str, bool]:
    return {"green": True} if key == "ok" else {"red": True} if key in ("MISS", CRASH) else {"yellow": True}


class Reporter:
    """Registered once per run: gathers results (on the xdist controller, from the workers' reports) and writes
    the summary."""

    def __init__(self, state: GotchasSession) -> None:
        self.state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "gotchas", None)
        if data is not None and report.when == "call":
            self.state.results.append(CaseResult.from_dict(data))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        settings = self.state.settings
        if hasattr(session.config, "workerinput") or not self.state.results or settings.json is None:
            return
        json_report.write(settings.json, json_report.build(self.state.results, run_meta(session.config)))

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        if hasattr(config, "workerinput") or not self.state.results:
            return
        terminalreporter.write_sep("=", "gotchas")
        for line, markup in terminal.summary_lines(self.state.results):
            terminalreporter.write_line(line, **markup)


def run_meta(config: pytest.Config) -> dict[str, Any]:
    workers = getattr(config.option, "numprocesses", None)
    return {
        "command": " ".join(["pytest", *config.invocation_params.args]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "pytest": pytest.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "xdist_workers": workers or 0,
    }


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
