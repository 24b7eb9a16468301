"""pytest hooks: each a short call into the plugin's state (plugin/state.py) and its roles (plugin/controller.py,
plugin/worker.py). Chapter files are collected only with --gotchas (or `gotchas = true` in the ini); the fixtures
are there for users' Python tests on every run. Nothing of the steps is imported until a run needs it: without
--gotchas the plugin is inert, and --collect-only never imports torch or transformers.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from .fixtures import gotchas, gotchas_model  # noqa: F401  (the fixtures of this plugin)
from ..settings.options import OPTIONS, Option, OptionError, OptionKind
from .state import MODEL_FIXTURE, SESSION, RECORDED, ensure, read_settings


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import newhooks

    pluginmanager.add_hookspecs(newhooks)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gotchas", "probe a language model with executed Python transcripts")
    for option in OPTIONS:
        if option.kind == OptionKind.FLAG:
            group.addoption(option.flag, action="store_true", default=None, dest=option.ini, help=option.help)
            parser.addini(option.ini, option.help, type="bool", default=option.default)
            continue
        action = "append" if option.kind == OptionKind.LIST else "store"
        group.addoption(option.flag, action=action, default=None, dest=option.ini, metavar=option.metavar,
                        choices=option.choices, type=_argparse_type(option), help=option.help)
        if option.kind == OptionKind.LIST:
            parser.addini(option.ini, option.help, type="linelist", default=[])
        else:
            parser.addini(option.ini, option.help, type="string", default=None)


def _argparse_type(option: Option) -> Any:
    def parse(raw: str) -> Any:
        try:
            return option.parse(raw)
        except OptionError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def pytest_configure(config: pytest.Config) -> None:
    from .frozen import configured

    configured(config)
    if read_settings(config).enabled:
        ensure(config)  # a baseline that cannot be used is a usage error now, before anything runs


def pytest_report_header(config: pytest.Config) -> str | None:
    """Said once per run: how this run's snippets are confined (docs/isolation.md)."""
    if not read_settings(config).enabled:
        return None
    return f"gotchas: snippets run under {ensure(config).isolation.description}"


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if not read_settings(parent.config).enabled or file_path.suffix not in (".yaml", ".yml"):
        return None
    from ..cases.chapter import looks_like_chapter
    from .nodes import ChapterFile, refuse_unsafe_name

    if not looks_like_chapter(file_path):
        return None
    refuse_unsafe_name(file_path, parent.config.rootpath)
    ensure(parent.config)
    return ChapterFile.from_parent(parent, path=file_path)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A Python test that uses the model runs once per model of the run, as the chapter items do."""
    if MODEL_FIXTURE not in metafunc.fixturenames:
        return
    models = read_settings(metafunc.config).models
    if len(models) > 1:
        from ..model.ref import model_refs, short_ids

        ids = short_ids(model_refs(models))
        metafunc.parametrize(MODEL_FIXTURE, ids, indirect=True, scope="session", ids=ids)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Any:
    if SESSION not in session.config.stash:
        return (yield)
    gotchas = session.config.stash[SESSION]
    gotchas.progress.collecting = True  # our line is pytest's "collecting ..." line, which it rewrites itself
    try:
        with gotchas.clock.phase("collection"):
            return (yield)
    finally:
        gotchas.progress.collecting = False


@pytest.hookimpl(tryfirst=True)  # before pytest groups the items by model, which keeps their order otherwise
def pytest_collection_modifyitems(session: pytest.Session, items: list[pytest.Item]) -> None:
    if SESSION not in session.config.stash:
        return
    from .nodes import chapter_order

    chapter_order(items)


# After pytest's deselection (-k, -m, --deselect, --lf): only the ground truth of what runs is executed.
@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_verify(session: pytest.Session, items: list[pytest.Item]) -> None:
    if SESSION not in session.config.stash:
        return
    from .nodes import verify_selected

    verify_selected(session, items)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Every case this process will run, by model, for the models that read them all at once (vLLM)."""
    if SESSION not in session.config.stash:
        return
    from .nodes import GotchaItem

    session.config.stash[SESSION].plan_run([(item.model, item.planned) for item in session.items
                                           if isinstance(item, GotchaItem)])
    from .frozen import collected

    collected()


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """Nothing of a test runs beside a model loading ahead (plugin/ahead.py): the loop starts once it is loaded."""
    if SESSION in session.config.stash:
        from .ahead import settle

        settle(session.config)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if call.when != "call" or SESSION not in item.config.stash:
        return report
    from ..results.report import result_to_data
    from ..errors import ModelUnavailable
    from .nodes import GotchaItem

    results = item.stash.get(RECORDED, [])
    if isinstance(item, GotchaItem) and item.result is not None:
        from ..report import junit, terminal

        results = [item.result]
        report.gotchas_status = terminal.status_of(item.result)  # plain strings: the report crosses xdist
        item.user_properties.extend(junit.properties(item.result))  # --junitxml carries the numbers
        report.user_properties = list(item.user_properties)
    if results:
        report.gotchas = [result_to_data(result) for result in results]
    if call.excinfo is not None and isinstance(call.excinfo.value, ModelUnavailable):
        item.session.shouldstop = "gotchas: the model could not be loaded"  # one clear error, not one per case
    return report


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    status = getattr(report, "gotchas_status", None)  # set where the case ran (pytest_runtest_makereport)
    if not status or report.when != "call" or report.failed:
        return None
    category, letter, word, colour = status
    return category, letter, (word, {colour: True})


# --collect-only: the refusals of the cases selected, which no run fails; kept from the session's end for its summary.
REFUSED = pytest.StashKey[list[str]]()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A collection that checks the library's ground truth (CI's --collect-only) fails on a refused case, as a run
    of it would, and says which."""
    config = session.config
    if SESSION in config.stash:
        from .ahead import settle

        settle(config)  # a session that ended before its loop leaves no load ahead running
    if SESSION not in config.stash or not config.option.collectonly:
        return
    from .nodes import RefusedItem

    # A twin's refusal is each member's: listed once.
    refused = list(dict.fromkeys(
        message for item in session.items if isinstance(item, RefusedItem) for message in item.planned.refusals))
    config.stash[REFUSED] = refused
    if refused and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    refused = config.stash.get(REFUSED, [])
    if refused:
        from ..report.escape import escape

        terminalreporter.write_sep("=", "gotchas: ground truth refuses these cases", red=True)
        for message in refused:
            terminalreporter.write_line(escape(message, lines=True), red=True)
