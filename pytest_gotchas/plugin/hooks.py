"""pytest hooks: options, collection of chapter files, verdicts as report categories, the summary and the reports.

Chapter files are collected only with --gotchas (or `gotchas = true` in the ini); the fixtures are there for
users' own Python tests on every run. torch and transformers are imported only when
the first case is scored, so --collect-only and runs with nothing to score never load them. Each hook is a short
call into the steps (collect, scoring, baseline, report); this module only translates between pytest and them.
"""

from __future__ import annotations

import datetime
import platform
import sys
from pathlib import Path
from typing import Any

import pytest

from ..truth import sandbox
from ..baseline.gate import Finished, Gate, make_gate, update_command
from ..baseline.store import BaselineError, checks_of
from ..cases.chapter import looks_like_chapter
from ..truth.collect import Collector
from ..model.embedded import short_names
from ..truth.execute import Cache, Limits
from .fixtures import RECORDED, gotchas, gotchas_model  # noqa: F401  (fixtures of this plugin)
from ..truth.interpreters import Finder
from .nodes import MODEL_FIXTURE, PLUGIN, ChapterFile, GotchaItem, GotchasWarning  # noqa: F401  (-W filters name it here)
from .options import OPTIONS, OptionError, Settings, settings
from ..report import html, json_report, junit, terminal
from ..results import onepass
from ..results.report import Report
from ..results.schema import CaseResult
from ..scoring.scorer import ModelSlot, ModelUnavailable, Scorer, Timings, process_report
from ..results.verdict import OUTCOMES


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
    (on the xdist controller, from the workers' reports). Registered on every run, so that users' Python tests can
    use the fixtures; chapter files are collected only with --gotchas."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        cache = getattr(config, "cache", None)  # None under -p no:cacheprovider: execute without caching
        self.settings = settings
        self.worker_id, self.workers = worker(config)
        self.cache_dir = cache.mkdir("gotchas") if cache else None
        self.collector = Collector(Finder(overrides=settings.python),
                                   Cache(self.cache_dir / "transcripts" if self.cache_dir else None),
                                   Limits(timeout=settings.timeout), settings.runs, settings.variants)
        names = settings.models or [None]
        self.model_ids = short_names(names)
        self.model_names = dict(zip(self.model_ids, names))
        self.timings = Timings()
        self.scorers: dict[str, Scorer] = {}
        self.gate = _gate(config, settings, self.model_ids) if settings.enabled else None
        self.results: list[CaseResult] = []
        self.chapter_files: dict[str, Path] = {}  # chapter name -> the file that has it
        self.worker_timings: dict[str, Any] = {}  # xdist controller: the latest timings of each worker
        self.finished: list[Finished] = []
        self._said: set[str] = set()
        self.stop: str | None = None  # why the session must stop (a baseline of another model)

    def scorer(self, model: str) -> Scorer:
        """The scorer of one model of the run (its model loads on first use)."""
        if model not in self.scorers:
            self.scorers[model] = Scorer(ModelSlot(lambda: self._load(model), self.timings), self.cache_dir,
                                         self.settings.softmax_dtype, self.settings.top_k, self.settings.batch_size,
                                         self.settings.reading, self.settings.bos, model,
                                         self.settings.precision_check, self.settings.layers,
                                         self.settings.one_pass_check)
        return self.scorers[model]

    def _load(self, model: str) -> Any:
        from ..model.load import ModelSpec, load_model

        auto = self.settings.device == "auto"  # device_map="auto": one model over every GPU
        spec = ModelSpec(name=self.model_names[model], dtype=self.settings.dtype, device_map_auto=auto,
                         device=None if auto else self.settings.device, worker_id=self.worker_id,
                         workers=self.workers)
        return load_model(spec, self.settings.model_cache, log=_notice, lazy_tokenizer=self.cache_dir is not None)

    def take_notes(self, scorer: Scorer) -> list[str]:
        """A model's notes not said yet in this process."""
        fresh = [note for note in scorer.notes if note not in self._said]
        self._said.update(fresh)
        return fresh

    def failures(self, result: CaseResult) -> str | None:
        """Why a scored case fails its test: a pair that passed in the baseline broke (decided per member, where the
        case ran), or --gotchas-strict and a verdict that is not ok."""
        failure = None
        if self.gate is not None:
            failure, stop = self.gate.check(result)
            if stop:
                self.stop = "gotchas: the baseline cannot be used with this model"
        strict = terminal.strict_message(result) if self.settings.strict else None
        return "\n\n".join(f for f in (failure, strict) if f) or None

    def timings_report(self) -> dict[str, Any]:
        """This process's phases; under xdist, the controller's report time and each worker's phases."""
        if not self.worker_timings:
            return process_report(self.timings, list(self.scorers.values()), self.collector.cache)
        return {"seconds": {"report": round(self.timings.seconds["report"], 4)},
                "workers": dict(sorted(self.worker_timings.items()))}

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        """A Python test that uses the model runs once per model of the run, as the chapter items do."""
        if MODEL_FIXTURE in metafunc.fixturenames and len(self.model_ids) > 1:
            metafunc.parametrize(MODEL_FIXTURE, self.model_ids, indirect=True, scope="session", ids=self.model_ids)

    @pytest.hookimpl(wrapper=True)
    def pytest_collection(self, session: pytest.Session) -> Any:
        with self.timings.phase("collection"):
            return (yield)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call":
            self.results.extend(CaseResult.from_dict(data) for data in getattr(report, "gotchas", []))
        timings = getattr(report, "gotchas_timings", None)
        if timings is not None:
            gateway = getattr(getattr(report, "node", None), "gateway", None)
            self.worker_timings[str(getattr(gateway, "id", "worker"))] = timings

    def ordered(self) -> list[CaseResult]:
        """The results in the run's model order, then chapter and case order: under xdist they arrive as workers
        finish them."""
        rank = {model: n for n, model in enumerate(self.model_ids)}
        return sorted(self.results, key=lambda r: (rank.get(str(r.model_id), len(rank)), r.chapter.order,
                                                   r.chapter.case_ids.index(r.id) if r.id in r.chapter.case_ids else 0))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.worker_id is not None or self.gate is None:
            return
        self.results = self.ordered()
        self.finished = self.gate.finish_all(self.results)
        for finished in self.finished:
            if finished.to_record is None:
                continue
            try:
                finished.lines.append((self.gate.record(finished, self.results), {"green": True}))
            except (OSError, BaselineError) as error:
                finished.lines.append((f"baseline: could not write {finished.to_record[0]}: {error}", {"red": True}))
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if not self.results or (self.settings.json is None and self.settings.html is None):
            return
        with self.timings.phase("report"):  # building it; not the writes that follow
            report = Report(self.results, run_meta(session.config), [f.to_dict() for f in self.finished if f.path])
            _ = report.chapters
        if self.settings.json is not None:
            report.run["timings"] = self.timings_report()
            checked = onepass.check(self.results)
            if checked is not None:
                report.run["one_pass_check"] = checked.to_dict()
            json_report.write(self.settings.json, report)
        if self.settings.html is not None:
            html.write(self.settings.html, report)

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        if self.worker_id is not None or not self.results:
            return
        terminalreporter.write_sep("=", "gotchas")
        lines = [line for finished in self.finished for line in finished.lines]
        for line, markup in terminal.summary_lines(Report(self.results), lines):
            terminalreporter.write_line(line, **markup)


def pytest_configure(config: pytest.Config) -> None:
    plugin = GotchasPlugin(config, read_settings(config))
    config.stash[PLUGIN] = plugin
    config.pluginmanager.register(plugin, "gotchas-plugin")


def _gate(config: pytest.Config, values: Settings, models: list[str]) -> Gate:
    """The baselines this run compares with (read now, so that a bad file is a usage error before anything runs).
    A --gotchas-baseline path is relative to the current directory, the ini option's to the ini file."""
    explicit = values.baseline
    if explicit is not None and not explicit.is_absolute():
        from_cli = config.getoption("gotchas_baseline") is not None
        ini_dir = config.inipath.parent if config.inipath else config.rootpath
        explicit = (config.invocation_params.dir if from_cli else ini_dir) / explicit
    try:
        return make_gate(config.rootpath, explicit, models, values.dtype, values.device, values.softmax_dtype,
                         update=values.update_baseline, any_model=values.baseline_any_model,
                         command=update_command(str(a) for a in config.invocation_params.args),
                         checks=checks_of(values.precision_check, values.variants))
    except BaselineError as error:
        raise pytest.UsageError(str(error)) from None


def pytest_report_header(config: pytest.Config) -> str | None:
    """Said once per run: how this run's snippets are confined (README: "What a snippet can do")."""
    if not config.stash[PLUGIN].settings.enabled:
        return None
    return f"gotchas: snippets run under {sandbox.isolation().description}"


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if not parent.config.stash[PLUGIN].settings.enabled or file_path.suffix not in (".yaml", ".yml"):
        return None
    if not looks_like_chapter(file_path):
        return None
    return ChapterFile.from_parent(parent, path=file_path)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if call.when != "call":
        return report
    plugin = item.config.stash[PLUGIN]
    results = item.stash.get(RECORDED, [])
    if isinstance(item, GotchaItem) and item.result is not None:
        results = [item.result]
        report.gotchas_item = True
        item.user_properties.extend(junit.properties(item.result))  # --junitxml carries the numbers
        report.user_properties = list(item.user_properties)
    if results:
        report.gotchas = [result.to_dict() for result in results]
        if plugin.worker_id is not None:  # the controller writes the JSON: it needs each worker's timings
            report.gotchas_timings = plugin.timings_report()
    if call.excinfo is not None and isinstance(call.excinfo.value, ModelUnavailable):
        item.session.shouldstop = "gotchas: the model could not be loaded"  # one clear error, not one per case
    if plugin.stop:
        item.session.shouldstop = plugin.stop
    return report


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    data = getattr(report, "gotchas", None)
    if not data or not getattr(report, "gotchas_item", False) or report.when != "call" or report.failed:
        return None
    result = CaseResult.from_dict(data[0])
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
