"""pytest hooks: options, collection of chapter files, verdicts as report categories, the summary.

Inert unless --gotchas (or `gotchas = true` in the ini) is given. torch and transformers are imported only when
the first case is scored, so --collect-only and runs with nothing to score never load them.
"""

from __future__ import annotations

import datetime
import platform
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

from . import baseline as baseline_mod
from . import options
from .cases import CaseFileError, looks_like_chapter
from .report import html, json_report, junit, terminal
from .results import CRASH, EXCLUDED, SCORED, SKIPPED, UNSCORED, CaseResult
from .session import GotchasError, GotchasSession, ModelUnavailable, Planned, worker_id

STATE = pytest.StashKey[GotchasSession]()
GATE = pytest.StashKey[baseline_mod.Gate]()
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
    cuts_dir = cache.mkdir("gotchas") / "cuts" if cache else None  # the tokenizer's answers (cutcache.py)
    state = GotchasSession(settings, cache_dir, worker_id(), cuts_dir=cuts_dir)
    config.stash[STATE] = state
    config.stash[GATE] = _baseline_gate(config, settings)
    config.pluginmanager.register(Reporter(state), "gotchas-reporter")


def _baseline_gate(config: pytest.Config, settings: options.Settings) -> baseline_mod.Gate:
    """The baseline this run compares with (read now, so that a bad file is a usage error before anything runs).
    A --gotchas-baseline path is relative to the current directory, the ini option's to the ini file."""
    explicit = settings.baseline
    if explicit is not None and not explicit.is_absolute():
        from_cli = config.getoption("gotchas_baseline") is not None
        ini_dir = config.inipath.parent if config.inipath else config.rootpath
        explicit = (config.invocation_params.dir if from_cli else ini_dir) / explicit
    try:
        return baseline_mod.make_gate(
            config.rootpath, explicit, settings.model, settings.dtype, settings.device, settings.softmax_dtype,
            update=settings.update_baseline, any_model=settings.baseline_any_model, strict=settings.strict,
            command=baseline_mod.update_command(str(a) for a in config.invocation_params.args))
    except baseline_mod.BaselineError as error:
        raise pytest.UsageError(str(error)) from None


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
        for line, message in plan.warnings:
            warnings.warn_explicit(GotchasWarning(message), category=None, filename=str(self.path), lineno=line)
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
            self.user_properties.extend(junit.properties(self.result))  # --junitxml carries the numbers
            failure, stop = self.config.stash[GATE].check(self.result)  # the baseline gate, decided per member
            if stop:
                self.session.shouldstop = "gotchas: the baseline cannot be used with this model"
            if failure:
                raise GotchasError(failure)
            return
        self.result = planned.result()
        self.user_properties.extend(junit.properties(self.result))
        if planned.status in (SKIPPED, EXCLUDED, CRASH):
            # Located at the case, not at this line, in `-rs` output: as pytest's own skip marks do.
            raise pytest.skip.Exception(planned.message or planned.status, _use_item_location=True)

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
        if hasattr(item.config, "workerinput"):  # the controller writes the JSON: it needs each worker's timings
            report.gotchas_timings = item.config.stash[STATE].timings()
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
        self.worker_timings: dict[str, Any] = {}  # xdist controller: the latest timings of each worker

    @pytest.hookimpl(wrapper=True)
    def pytest_collection(self, session: pytest.Session) -> Any:
        started = time.perf_counter()
        try:
            return (yield)
        finally:
            self.state.seconds["collection"] += time.perf_counter() - started

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "gotchas", None)
        if data is not None and report.when == "call":
            self.state.results.append(CaseResult.from_dict(data))
        timings = getattr(report, "gotchas_timings", None)
        if timings is not None:
            gateway = getattr(getattr(report, "node", None), "gateway", None)
            self.worker_timings[str(getattr(gateway, "id", "worker"))] = timings

    def timings(self) -> dict[str, Any]:
        """This process's phases; under xdist, the controller's report time and each worker's phases."""
        if not self.worker_timings:
            return self.state.timings()
        return {"seconds": {"report": round(self.state.seconds["report"], 4)},
                "workers": dict(sorted(self.worker_timings.items()))}

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not hasattr(session.config, "workerinput"):
            self.baseline_lines = _finish_baseline(session, self.state.results)
        settings = self.state.settings
        if hasattr(session.config, "workerinput") or not self.state.results:
            return
        if settings.json is None and settings.html is None:
            return
        started = time.perf_counter()
        data = json_report.build(self.state.results, run_meta(session.config))  # one dict: the page is a view of it
        self.state.seconds["report"] += time.perf_counter() - started  # building it; not the writes that follow
        if settings.json is not None:
            data["run"]["timings"] = self.timings()
            json_report.write(settings.json, data)
        if settings.html is not None:
            html.write(settings.html, data)

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        if hasattr(config, "workerinput") or not self.state.results:
            return
        terminalreporter.write_sep("=", "gotchas")
        for line, markup in terminal.summary_lines(self.state.results):
            terminalreporter.write_line(line, **markup)
        baseline_lines = getattr(self, "baseline_lines", [])
        for line, markup in [("", {})] + baseline_lines if baseline_lines else []:
            terminalreporter.write_line(line, **markup)


def _finish_baseline(session: pytest.Session, results: list[CaseResult]) -> list[Any]:
    """Compare (and with --gotchas-update-baseline record) on the controller only; a failed write fails the run."""
    lines, to_write = session.config.stash[GATE].finish(results)
    if to_write is not None:
        try:
            baseline_mod.write(*to_write)
        except OSError as error:
            lines.append((f"baseline: could not write {to_write[0]}: {error}", {"red": True}))
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    return lines


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
