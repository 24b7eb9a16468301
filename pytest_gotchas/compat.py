"""The only private pytest API the plugin and the tools use, in one place (tests/plugin/test_compat.py runs under
every supported pytest, 8.x and 9.x, in .ci/run). A floor of its own under both faces of the roof (plugin/ and cli/),
so that the tools do not import the plugin for the rootdir rule they share.

pytest has no public way for a non-Python item to request fixtures or to carry a parameter: its own DoctestItem
does the first exactly as `take_part_in_fixtures` does, and the second is what `metafunc.parametrize` gives a
Python test's items (CallSpec since pytest 9.1, CallSpec2 before). pytest reorders items and sets up session
fixtures by that parameter, which keeps one model in memory at a time. Nor has it a public way to write on its
current terminal line without moving the column where it prints `[ 40%]`: plugin/progress.py's line does that
through the reporter's writer, as pytest's own "collecting ..." line does.

The authoring tools hide the project as collection does: pytest has no public way to ask which rootdir it would
choose for some paths, so `rootdir` asks its own rule (`determine_setup`, keyword-only since pytest 9).

A case that is not scored is skipped at the case, as pytest's own skip marks are reported at their item
(`skip_at_item`: the skip exception's private `_use_item_location`); and a cache folder that cannot be made is named
where pytest keeps its cache (`cache_folder`: the cache's private `_cachedir`; config.cache.mkdir is the public way
to make one, and its error names only a temporary file).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest


def callspec(fixture: str, value: str, index: int) -> Any:
    """The parameter `value` of session fixture `fixture`, as pytest gives a parametrized test's items."""
    from _pytest import python
    from _pytest.scope import Scope

    kind = getattr(python, "CallSpec", None) or getattr(python, "CallSpec2")
    return kind(params={fixture: value}, indices={fixture: index}, _arg2scope={fixture: Scope.Session},
                _idlist=(value,), marks=[])


def take_part_in_fixtures(item: pytest.Item) -> None:
    """What pytest's doctest items do in their __init__ so that fixtures (usefixtures marks included) are set up
    for them; `fill_fixtures` then fills them at setup."""
    from _pytest.fixtures import TopRequest

    item.obj = item.cls = None  # type: ignore[attr-defined]
    info = item.session._fixturemanager.getfixtureinfo(node=item, func=None, cls=None)
    item._fixtureinfo = info  # type: ignore[attr-defined]
    item.fixturenames = info.names_closure  # type: ignore[attr-defined]
    item.funcargs = {}  # type: ignore[attr-defined]
    item._request = TopRequest(item, _ispytest=True)  # type: ignore[arg-type,attr-defined]


def fill_fixtures(item: pytest.Item) -> None:
    item._request._fillfixtures()  # type: ignore[attr-defined]


def skip_at_item(message: str) -> BaseException:
    """A skip to raise in an item's runtest that `-rs` reports at the item's location (its reportinfo), not at the
    line that raised it."""
    return pytest.skip.Exception(message, _use_item_location=True)


def cache_folder(cache: Any, default: Path) -> Path:
    """The folder pytest's cache writes into (`default` where the cache does not say)."""
    return Path(getattr(cache, "_cachedir", default))


def rootdir(args: list[str], invocation_dir: Path) -> Path:
    """The rootdir pytest chooses when run from `invocation_dir` with the paths `args` (ini files, then setup.py, up
    from their common folder)."""
    from _pytest.config.findpaths import determine_setup

    wanted: dict[str, Any] = dict(inifile=None, override_ini=None, args=args, rootdir_cmd_arg=None,
                                  invocation_dir=invocation_dir)
    accepted = inspect.signature(determine_setup).parameters  # pytest 8 lacks override_ini
    return Path(determine_setup(**{k: v for k, v in wanted.items() if k in accepted})[0])


def line_room(reporter: Any) -> int:
    """How many characters still fit on pytest's current terminal line (its writer counts what it wrote there)."""
    writer = reporter._tw
    return int(writer.fullwidth) - int(writer.width_of_current_line) - 1


def write_around_the_count(reporter: Any, text: str) -> None:
    """`text` on the terminal without counting it on pytest's current line: a transient progress text that is erased
    again (backspaces, or pytest's own rewrite of its collecting line), so pytest's column of `[ 40%]` stays put.
    Newer pytest has TerminalReporter.write_raw for it; 8.0 only its writer's file."""
    write_raw = getattr(reporter, "write_raw", None)
    if write_raw is not None:
        write_raw(text, flush=True)
        return
    reporter._tw._file.write(text)
    reporter._tw.flush()
