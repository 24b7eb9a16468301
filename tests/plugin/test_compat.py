"""The private pytest API of compat.py, through the plugin: chapter items carry the model as a session
parameter (pytest groups them by it, one model in memory at a time) and take part in fixtures as pytest's own
doctest items do. .ci/run runs this module under the oldest pytest 8 and under the pytest 9 it installs."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.chapters import PAIR_CHAPTER
from helpers.tinymodel import build_tiny_model

CHAPTER = PAIR_CHAPTER
# A user's conftest: an autouse fixture logs each item it is set up for, with the model parameter the item carries
# (pytest computes an item's fixtures when it is made, as for its doctest items, so marks added later do not count).
CONFTEST = """\
import pytest

LOG = []


@pytest.fixture(autouse=True)
def logged(request):
    LOG.append((request.node.name, request.node.callspec.params["gotchas_model"].rsplit("/", 1)[-1]))


def pytest_sessionfinish(session):
    with open("log.txt", "w") as out:
        out.write("\\n".join(" ".join(entry) for entry in LOG))
"""
RULES = {"a": {"7": 2.0, "8": 1.0}, "b": {"7": 2.0, "8": 1.0}}


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("models")
    return build_tiny_model(root / "left", RULES), build_tiny_model(root / "right", RULES)


def test_items_carry_the_model_and_take_part_in_fixtures(pytester: pytest.Pytester, models: tuple[Path, Path],
                                                        py312) -> None:
    (pytester.path / "demo.yaml").write_text(CHAPTER, encoding="utf-8")
    pytester.makeconftest(CONFTEST)
    result = pytester.runpytest_subprocess("--gotchas", "--gotchas-model", str(models[0]), "--gotchas-model",
                                           str(models[1]), "--gotchas-cache-dir", str(pytester.path / "cache"),
                                           "-p", "no:randomly", "-p", "no:xdist", "-v")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert result.parseoutcomes() == {"ok": 4}
    # Grouped by the session parameter: every item of the first model, then every item of the second.
    result.stdout.fnmatch_lines(["*demo.yaml::one?left? ok*", "*demo.yaml::two?left? ok*",
                                 "*demo.yaml::one?right? ok*", "*demo.yaml::two?right? ok*"])
    assert (pytester.path / "log.txt").read_text(encoding="utf-8").splitlines() == [
        "one[left] left", "two[left] left", "one[right] right", "two[right] right"]


def test_the_model_fixture_is_set_up_once_per_model(pytester: pytest.Pytester, models: tuple[Path, Path],
                                                   py312) -> None:
    (pytester.path / "demo.yaml").write_text(CHAPTER, encoding="utf-8")
    result = pytester.runpytest_subprocess("--gotchas", "--gotchas-model", str(models[0]), "--gotchas-model",
                                           str(models[1]), "--gotchas-cache-dir", str(pytester.path / "cache"),
                                           "-p", "no:randomly", "-p", "no:xdist", "--setup-show")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    shown = [line.strip() for line in result.outlines if " S gotchas_model" in line]
    assert shown == ["SETUP    S gotchas_model['left']", "TEARDOWN S gotchas_model['left']",
                     "SETUP    S gotchas_model['right']", "TEARDOWN S gotchas_model['right']"], result.stdout.str()


@pytest.mark.parametrize("ini", ["pyproject.toml", "pytest.ini", None])
def test_the_rootdir_the_tools_hide_is_the_one_pytest_collects_under(pytester: pytest.Pytester, ini: str | None,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """`gotchas new` run from cases/ hides the rootdir pytest run there would have: the project's, where it has a
    configuration file; with none, pytest's rule takes the folder it runs in."""
    from pytest_gotchas import compat

    if ini is not None:
        pytester.path.joinpath(ini).write_text("[tool.pytest.ini_options]\n" if ini.endswith(".toml") else "[pytest]\n")
    cases = pytester.mkdir("cases")
    monkeypatch.chdir(cases)
    result = pytester.runpytest_inprocess("--collect-only", "-p", "no:cacheprovider", ".")
    shown = next(line for line in result.outlines if line.startswith("rootdir: ")).split(", ")[0]
    expected = pytester.path if ini is not None else cases
    assert shown == f"rootdir: {expected}"
    assert compat.rootdir([str(cases)], cases) == expected


def test_progress_writes_on_the_terminal_line_without_moving_pytests_column(pytestconfig: pytest.Config) -> None:
    """plugin/progress.py's line: written through the reporter's writer without being counted on pytest's line, so
    that the `[ 40%]` column stays where pytest puts it; the room left is the writer's width less that line."""
    import io

    from _pytest.terminal import TerminalReporter

    from pytest_gotchas import compat

    out = io.StringIO()
    reporter = TerminalReporter(pytestconfig, out)
    reporter.write("first.yaml ..")
    room = compat.line_room(reporter)
    assert room == reporter._tw.fullwidth - len("first.yaml ..") - 1
    compat.write_around_the_count(reporter, " [patching pair 1/2]\b\b\b")
    assert out.getvalue() == "first.yaml .. [patching pair 1/2]\b\b\b"
    assert compat.line_room(reporter) == room


def test_the_cache_folder_is_where_pytests_cache_makes_its_folders(pytestconfig: pytest.Config) -> None:
    """A cache folder that cannot be made is named where pytest would have made it (plugin/session.py)."""
    from pytest_gotchas import compat

    made = pytestconfig.cache.mkdir("gotchas-compat")  # type: ignore[union-attr]
    assert compat.cache_folder(pytestconfig.cache, Path("/nowhere")) / "d" / "gotchas-compat" == made
    assert compat.cache_folder(object(), Path("/nowhere")) == Path("/nowhere")
