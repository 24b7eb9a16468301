"""The controller's role (the serial run's, or the xdist controller's): it gathers every case result from the test
reports and, under xdist, each worker's chapters, models and timings once; at the end it compares with the
baselines (and records them), writes the JSON and HTML reports, and prints the summary."""

from __future__ import annotations

import datetime
import platform
import shlex
import warnings
from typing import Any

import pytest

from ..baseline.gate import Gate
from ..report import json_report, terminal, wording, wording_baseline
from ..report.escape import escape
from ..results.baselines import BaselineOutcome
from ..results.report import Report, result_from_data
from ..results.rollup import in_run_order, merged_infos
from ..results.schema import CaseResult, ChapterInfo, Invocation
from . import newhooks, worker
from .session import GotchasSession
from .warning import GotchasWarning

RESULTS = "gotchas"  # the attribute of a test report that carries its case results, as plain values


class Controller:
    def __init__(self, gotchas: GotchasSession) -> None:
        self.gotchas = gotchas
        self.results: list[CaseResult] = []
        self.workers: dict[str, worker.WorkerData] = {}
        self.outcomes: list[BaselineOutcome] = []
        self.report: Report | None = None
        self.errors: list[str] = []  # reports that could not be written, said after the summary
        self.obtained: dict[str, wording.Line] = {}  # model -> where its regressed run's baseline was written
        self.hook_failures: dict[tuple[str, str], newhooks.HookFailure] = {}  # (hook, plugin) -> its first failure
        # How the run ends (the report's run.not_run, interrupted, stopped_by): the node ids selected to run, in this
        # process or (xdist) in the workers, and those whose run finished (a teardown report).
        self.selected: list[str] = []
        self.finished: set[str] = set()
        self.stopped_by: str | None = None

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.selected = [item.nodeid for item in session.items]

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.selected = list(ids)  # every worker collects the same items (xdist checks it)

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """Ctrl-C, pytest.exit(), or a stop asked for (session.shouldstop): what pytest says stopped the run."""
        self.stopped_by = str(excinfo.value) or excinfo.typename

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown":
            self.finished.add(report.nodeid)
        if report.when != "call":
            return
        for data in getattr(report, RESULTS, []):
            result = result_from_data(data)
            self.results.append(result)
            config = self.gotchas.config
            self.failed(newhooks.call_each(config.hook.pytest_gotchas_case_result, result.key, {"result": result},
                                           config=config))

    def failed(self, failures: list[newhooks.HookFailure]) -> None:
        """Hook implementations that raised, kept by hook and plugin: the first failure and how often."""
        for failure in failures:
            known = self.hook_failures.setdefault((failure.hook, failure.plugin), failure)
            if known is not failure:
                known.times += 1

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        data = worker.receive(node)
        if data is not None:
            self.workers[str(node.gateway.id)] = data

    def gathered(self) -> worker.WorkerData:
        """Every chapter and model the run knows, from this process and from every worker."""
        parts = [worker.local_data(self.gotchas), *self.workers.values()]
        models = {m.id: m for part in parts for m in part.models}
        notes: dict[str, list[str]] = {}
        for part in parts:  # each worker that loaded a model has its notes: said once
            for model, said in part.notes.items():
                kept = notes.setdefault(model, [])
                kept.extend(note for note in said if note not in kept)
        return worker.WorkerData([c for part in parts for c in part.chapters], list(models.values()), notes=notes)

    def say_notes(self, session: pytest.Session, notes: dict[str, list[str]]) -> None:
        """Each model's notes once, at the run's level: a GotchasWarning located at the model, not at the case
        whose scoring loaded it. Under -W error it fails the run and is said after the summary, as an error."""
        for model, said in notes.items():
            for note in said:
                try:
                    warnings.warn_explicit(GotchasWarning(escape(note, lines=True)), category=None,
                                           filename=f"model {model}", lineno=0)
                except GotchasWarning as error:
                    self.errors.append(f"gotchas: {error}")
                    session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.finish(session)
        if self.hook_failures and session.exitstatus == pytest.ExitCode.OK:  # a failed test says more: kept
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR

    def finish(self, session: pytest.Session) -> None:
        gate = self.gotchas.gate
        if gate is None:
            return
        known = self.gathered()
        self.say_notes(session, known.notes)
        infos = merged_infos(known.chapters)
        results = in_run_order(self.results, infos, self.gotchas.model_ids)
        models = {m.id: m for m in known.models}
        self.outcomes = gate.finish_all(results, models, infos)
        for outcome in self.outcomes:
            if outcome.update and outcome.now is not None and outcome.refusal is None:
                gate.record(outcome, results, infos)
                if outcome.write_error is not None:
                    session.exitstatus = pytest.ExitCode.TESTS_FAILED
            elif outcome.comparison is not None and outcome.comparison.regressions and outcome.refusal is None:
                self.obtained[outcome.model] = self.write_obtained(gate, outcome, results, infos)
        ordered_models = [models[m] for m in self.gotchas.model_ids if m in models]
        with self.gotchas.clock.phase("report"):  # building it; not the writes that follow
            self.report = Report(results, list(infos.values()), ordered_models, self.invocation(session.config),
                                 self.outcomes)
            _ = self.report.chapters
        self.report.run.timings = self.gotchas.timings()
        self.ended(session, self.report.run)
        self.write(session)
        if self.report.results:
            self.failed(newhooks.call_each(session.config.hook.pytest_gotchas_report, "the report",
                                           {"report": self.report}, config=session.config))

    @staticmethod
    def write_obtained(gate: Gate, outcome: BaselineOutcome, results: list[CaseResult],
                       infos: dict[str, ChapterInfo]) -> wording.Line:
        """A regression: this run's baseline beside the shipped one (baseline/gate.py), for CI to upload and diff."""
        try:
            return wording_baseline.obtained_line(outcome.path or "", gate.obtained(outcome, results, infos))
        except OSError as error:
            return wording_baseline.obtained_line(outcome.path or "", None, error.strerror or str(error))

    def invocation(self, config: pytest.Config) -> Invocation:
        return Invocation(
            command=shlex.join(["pytest", *config.invocation_params.args]),  # copied from the page, it reruns the run
            date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            pytest=pytest.__version__, python=platform.python_version(), platform=platform.platform(),
            xdist_workers=getattr(config.option, "numprocesses", None) or 0,
            isolation=self.gotchas.isolation.description, level=self.gotchas.settings.level,
            workers={name: data.timings for name, data in sorted(self.workers.items()) if data.timings})

    def ended(self, session: pytest.Session, run: Invocation) -> None:
        """How the run ended, as the report records it: pytest's exit status so far, and the selected items that
        never ran (after Ctrl-C, -x, --maxfail or a stop), with what stopped it."""
        run.exit_status = int(session.exitstatus)
        run.not_run = [nodeid for nodeid in self.selected if nodeid not in self.finished]
        run.interrupted = bool(run.not_run)
        stop = self.stopped_by or session.shouldfail or session.shouldstop
        run.stopped_by = str(stop) if stop else None

    def write(self, session: pytest.Session) -> None:
        """The JSON and HTML reports, each written whole or not at all; a path that cannot be written is said after
        the summary and fails the run."""
        settings, report = self.gotchas.settings, self.report
        if report is None or not report.results:
            return
        for path, write in ((settings.json, json_report.write), (settings.html, _write_html)):
            if path is None:
                continue
            try:
                write(path, report)
            except OSError as error:
                self.errors.append(f"gotchas: cannot write the report {path}: {error.strerror or error}")
                session.exitstatus = pytest.ExitCode.USAGE_ERROR

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        report = self.report
        if report is None or not report.results:
            self.write_errors(terminalreporter)
            return
        terminalreporter.write_sep("=", "gotchas")
        several = len(self.gotchas.model_ids) > 1
        lines = []
        for outcome in self.outcomes:
            lines += wording_baseline.outcome_lines(outcome, prefix=several)
            if outcome.model in self.obtained:
                text, markup = self.obtained[outcome.model]
                lines.append((f"[{outcome.model}] {text.strip()}" if several else text, markup))
        for line, markup in terminal.summary_lines(report, lines):
            terminalreporter.write_line(line, **markup)
        self.write_errors(terminalreporter)

    def write_errors(self, terminalreporter: Any) -> None:
        """What failed around the results, after the summary: reports not written, other plugins' hooks that raised."""
        errors = self.errors + [terminal.hook_failure_text(f.hook, f.plugin, f.error, f.where, f.subject, f.times)
                                for f in self.hook_failures.values()]
        for error in errors:
            terminalreporter.write_line(escape(error), red=True)


def _write_html(path: Any, report: Report) -> None:
    """report/html.py, imported only by a run that writes the page (its views cost about 0.3 s to import)."""
    from ..report import html

    html.write(path, report)
