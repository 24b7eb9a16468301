"""pytest hooks: options, collection of chapter files, verdicts as report categories, the summary and the reports.

Inert unless --gotchas (or `gotchas = true` in the ini) is given. torch and transformers are imported only when
the first case is scored, so --collect-only and runs with nothing to score never load them. Each hook is a short
call into the steps (collect, scoring, baseline, report); this module only translates between pytest and them.
"""

from __future__ import annotations

import datetime
import platform
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from . import sandbox
from .baseline.gate import Finished, Gate, make_gate, update_command
from .baseline.store import BaselineError
from .cases import CaseFileError, looks_like_chapter
from .collect import Collector, Planned
from .execute import Cache, Limits
from .interpreters import Finder
from .options import OPTIONS, OptionError, Settings, settings
from .report import html, json_report, junit, terminal
from .report.data import Report
from .results import CaseResult
from .scoring import GotchasError, ModelSlot, ModelUnavailable, Scorer, Timings
from .verdict import OUTCOMES, Status

PLUGIN = pytest.StashKey["GotchasPlugin"]()


class GotchasWarning(pytest.PytestWarning):
    """Ground truth differs on this interpreter in an implementation-defined chapter."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gotchas", "probe a language model with executed Python transcripts")
    for option in OPTIONS:
        if option.kind == "flag":
            group.addoption(option.flag, action="store_true", default=None, dest=option.ini, help=option.help)
            parser.addini(option.ini, option.help, type="bool", default=option.default)
            continue
        action = "append" if option.kind == "list" else "store"
        group.addoption(option.flag, action=action, default=None, dest=option.ini, metavar=option.metavar,
                        choices=option.choices, type=_argparse_type(option), help=option.help)
        parser.addini(option.ini, option.help, type="linelist" if option.kind == "list" else "string",
                      default=[] if option.kind == "list" else None)


def _argparse_type(option: Any) -> Any:
    import argparse

    def parse(raw: str) -> Any:
        try:
            return option.parse(raw)
        except OptionError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def read_settings(config: pytest.Config) -> Settings:
    """The command line wins over the ini file; ini values are validated as command-line values are."""
    values = {}
    for option in OPTIONS:
        given = config.getoption(option.ini)  # already validated by argparse
        if given is not None:
            values[option.name] = given
            continue
        raw = config.getini(option.ini)
        if raw in (None, "", []):
            continue
        try:
            values[option.name] = option.convert(raw)
        except OptionError as error:
            raise pytest.UsageError(f"ini option {option.ini} {error}") from None
    return settings(values)


def worker(config: pytest.Config) -> tuple[str | None, int]:
    """(this xdist worker's id, the number of workers), or (None, 0) outside xdist."""
    info = getattr(config, "workerinput", None)
    return (info["workerid"], int(info.get("workercount") or 0)) if info else (None, 0)


class GotchasPlugin:
    """One process's gotchas state: the steps, wired from the settings, and the results gathered for the summary
    (on the xdist controller, from the workers' reports)."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        cache = getattr(config, "cache", None)  # None under -p no:cacheprovider: execute without caching
        self.settings = settings
        self.worker_id, self.workers = worker(config)
        self.collector = Collector(Finder(overrides=settings.python),
                                   Cache(cache.mkdir("gotchas") / "transcripts" if cache else None),
                                   Limits(timeout=settings.timeout), settings.runs)
        self.timings = Timings()
        self.slot = ModelSlot(self._load, self.timings)
        self.scorer = Scorer(self.slot, cache.mkdir("gotchas") if cache else None, settings.softmax_dtype,
                             settings.top_k, settings.batch_size, settings.reading)
        self.gate = _gate(config, settings)
        self.results: list[CaseResult] = []
        self.chapter_files: dict[str, Path] = {}  # chapter name -> the file that has it
        self.worker_timings: dict[str, Any] = {}  # xdist controller: the latest timings of each worker
        self.finished = Finished()

    def _load(self) -> Any:
        from .model import ModelSpec, load_model

        auto = self.settings.device == "auto"  # device_map="auto": one model over every GPU
        spec = ModelSpec(name=self.settings.model, dtype=self.settings.dtype, device_map_auto=auto,
                         device=None if auto else self.settings.device, worker_id=self.worker_id,
                         workers=self.workers)
        return load_model(spec, self.settings.model_cache, log=_notice, lazy_tokenizer=self.scorer.cache_dir is not None)

    def timings_report(self) -> dict[str, Any]:
        """This process's phases; under xdist, the controller's report time and each worker's phases."""
        if not self.worker_timings:
            return self.scorer.report(self.collector.cache)
        return {"seconds": {"report": round(self.timings.seconds["report"], 4)},
                "workers": dict(sorted(self.worker_timings.items()))}

    @pytest.hookimpl(wrapper=True)
    def pytest_collection(self, session: pytest.Session) -> Any:
        with self.timings.phase("collection"):
            return (yield)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "gotchas", None)
        if data is not None and report.when == "call":
            self.results.append(CaseResult.from_dict(data))
        timings = getattr(report, "gotchas_timings", None)
        if timings is not None:
            gateway = getattr(getattr(report, "node", None), "gateway", None)
            self.worker_timings[str(getattr(gateway, "id", "worker"))] = timings

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.worker_id is not None:
            return
        self.finished = self.gate.finish(self.results)
        if self.finished.to_record is not None:
            try:
                self.finished.lines.append((self.gate.record(self.finished, self.results), {"green": True}))
            except (OSError, BaselineError) as error:
                self.finished.lines.append((f"baseline: could not write {self.finished.to_record[0]}: {error}",
                                            {"red": True}))
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if not self.results or (self.settings.json is None and self.settings.html is None):
            return
        with self.timings.phase("report"):  # building it; not the writes that follow
            report = Report(self.results, run_meta(session.config), self.finished.to_dict())
            _ = report.chapters
        if self.settings.json is not None:
            report.run["timings"] = self.timings_report()
            json_report.write(self.settings.json, report)
        if self.settings.html is not None:
            html.write(self.settings.html, report)

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        if self.worker_id is not None or not self.results:
            return
        terminalreporter.write_sep("=", "gotchas")
        for line, markup in terminal.summary_lines(Report(self.results), self.finished.lines):
            terminalreporter.write_line(line, **markup)


def pytest_configure(config: pytest.Config) -> None:
    values = read_settings(config)
    if not values.enabled:
        return
    plugin = GotchasPlugin(config, values)
    config.stash[PLUGIN] = plugin
    config.pluginmanager.register(plugin, "gotchas-plugin")


def _gate(config: pytest.Config, values: Settings) -> Gate:
    """The baseline this run compares with (read now, so that a bad file is a usage error before anything runs).
    A --gotchas-baseline path is relative to the current directory, the ini option's to the ini file."""
    explicit = values.baseline
    if explicit is not None and not explicit.is_absolute():
        from_cli = config.getoption("gotchas_baseline") is not None
        ini_dir = config.inipath.parent if config.inipath else config.rootpath
        explicit = (config.invocation_params.dir if from_cli else ini_dir) / explicit
    try:
        return make_gate(config.rootpath, explicit, values.model, values.dtype, values.device, values.softmax_dtype,
                         update=values.update_baseline, any_model=values.baseline_any_model,
                         command=update_command(str(a) for a in config.invocation_params.args))
    except BaselineError as error:
        raise pytest.UsageError(str(error)) from None


def pytest_report_header(config: pytest.Config) -> str | None:
    """Said once per run: how this run's snippets are confined (README: "What a snippet can do")."""
    if PLUGIN not in config.stash:
        return None
    return f"gotchas: snippets run under {sandbox.isolation().description}"


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if PLUGIN not in parent.config.stash or file_path.suffix not in (".yaml", ".yml"):
        return None
    if not looks_like_chapter(file_path):
        return None
    return ChapterFile.from_parent(parent, path=file_path)


class ChapterFile(pytest.File):
    def collect(self) -> list["GotchaItem"]:
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
        plugin = self.config.stash[PLUGIN]
        planned = self.planned
        if planned.status != Status.SCORED:
            self.result = planned.result()
            self.user_properties.extend(junit.properties(self.result))
            if planned.status in (Status.SKIPPED, Status.EXCLUDED, Status.CRASH):
                # Located at the case, not at this line, in `-rs` output: as pytest's own skip marks do.
                raise pytest.skip.Exception(planned.message or planned.status, _use_item_location=True)
            return
        self.result = plugin.scorer.score(planned)
        self.user_properties.extend(junit.properties(self.result))  # --junitxml carries the numbers
        failure, stop = plugin.gate.check(self.result)  # the baseline gate, decided per member
        if stop:
            self.session.shouldstop = "gotchas: the baseline cannot be used with this model"
        strict = terminal.strict_message(self.result) if plugin.settings.strict else None
        failures = [f for f in (failure, strict) if f]
        if failures:
            raise GotchasError("\n\n".join(failures))

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
        plugin = item.config.stash[PLUGIN]
        if item.result is not None:
            report.gotchas = item.result.to_dict()
        if plugin.worker_id is not None:  # the controller writes the JSON: it needs each worker's timings
            report.gotchas_timings = plugin.timings_report()
        if call.excinfo is not None and isinstance(call.excinfo.value, ModelUnavailable):
            item.session.shouldstop = "gotchas: the model could not be loaded"  # one clear error, not one per case
    return report


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    data = getattr(report, "gotchas", None)
    if data is None or report.when != "call" or report.failed:
        return None
    result = CaseResult.from_dict(data)
    outcome = OUTCOMES.get(result.outcome)
    if outcome is None or outcome.category is None:
        return None
    word = terminal.verbose_word(result) if result.scored else outcome.word
    return outcome.category, outcome.letter, (word, {outcome.colour: True})


def run_meta(config: pytest.Config) -> dict[str, Any]:
    return {
        "command": " ".join(["pytest", *config.invocation_params.args]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "pytest": pytest.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "xdist_workers": getattr(config.option, "numprocesses", None) or 0,
        "isolation": sandbox.isolation().description,
    }


def _notice(line: str) -> None:
    """Before slow one-time work (converting a GGUF), say why the run is waiting; stderr reaches the terminal
    from xdist workers too."""
    sys.stderr.write(f"gotchas: {line}\n")
    sys.stderr.flush()


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
