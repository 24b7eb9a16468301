"""The one reader of JSON reports: `read_report(path)` gives the typed Report of a file written by --gotchas-json
(or `gotchas merge --json`), or raises UnreadableReport with one message that names the file and says what is wrong
with it. Every reader of a report file goes through here: `gotchas merge`, the benches, another plugin or a CI
script (`from pytest_gotchas import read_report`).

A report of a newer format is refused, naming both format numbers; an older one is migrated where that needs no
guess, and refused, saying which format it is and why, where it would (results/formats.py). Nothing the file states
is trusted to be bounded: only a regular file is read (a FIFO would block for ever, /dev/zero never end), no
further than MAX_BYTES, its nesting is measured before anything recursive walks it, a number JSON has not (NaN)
or one out of float range (1e400) is refused, pydantic names the path of the first value that does not fit, and
results/bounds.py the first value of the right type that no run writes (a level no interval is computed at, a
probability past 1, a pair of three cases, a scored result of a model the report does not describe): the same
checks for `read_report` and `gotchas merge`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..files import TooLarge, read_regular
from .bounds import out_of_bounds
from .formats import FORMAT, migrate, refusal
from .report import NonFiniteNumber, Report, from_data

# Levels of lists and objects a report may nest: a real one needs about 10 (a run's readings' token lists).
MAX_DEPTH = 64
# Bytes a report file may hold, read no further (as chapters are, cases/yamlfile.py): a report holds about 3 kB per
# case (tests/unit/results/older: 5 cases in 16 kB), so this is some 80,000 cases (more with --gotchas-layers or
# patching); past it, the JSON's objects in memory would take gigabytes (a 2 GB file ended in MemoryError).
MAX_BYTES = 256 << 20


class UnreadableReport(ValueError):
    """A file that is not a report this version can read; the message names the file and says why."""


@dataclass
class ReportDocument:
    """One report file as JSON values, as it holds them (its own format), and its name as messages say it."""

    name: str
    data: dict[str, Any]

    @property
    def format(self) -> int:
        return int(self.data["format"])

    def current(self) -> dict[str, Any]:
        """The document in format FORMAT (migrated where it is older; the file's data is left as it is)."""
        return migrate(self.data)  # type: ignore[no-any-return]


def _not_a_number(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON number")


def load_document(path: Path | str) -> ReportDocument:
    """The JSON values of a report file of a format this version reads, or UnreadableReport."""
    name = str(path)
    try:
        text = read_regular(path, MAX_BYTES).decode("utf-8")
    except TooLarge as error:
        raise UnreadableReport(f"{name} is not a gotchas report: {error.size} bytes is more than a report may hold "
                               f"({MAX_BYTES})") from None
    except OSError as error:  # NotARegularFile's words say what it is: a FIFO, a device, a folder
        raise UnreadableReport(f"cannot read {name}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise UnreadableReport(f"{name} is not a gotchas report: it is not UTF-8 text") from None
    too_deep = UnreadableReport(f"{name} is not a gotchas report: it nests more than {MAX_DEPTH} levels deep (a "
                                "report needs about 10)")
    try:
        data = json.loads(text, parse_constant=_not_a_number)  # NaN is no JSON: no report written again could hold it
    except RecursionError:  # the JSON decoder recurses per level: 100,000 levels end here
        raise too_deep from None
    except ValueError as error:
        raise UnreadableReport(f"{name} is not a gotchas report: it is not JSON ({error})") from None
    if depth(data) > MAX_DEPTH:  # before pydantic or anything else walks it recursively
        raise too_deep
    return checked(name, data)


def checked(name: str, data: Any) -> ReportDocument:
    """JSON values as a report document of a format this version reads, or UnreadableReport naming `name`."""
    if (not isinstance(data, dict) or not isinstance(data.get("format"), int) or isinstance(data["format"], bool)
            or not isinstance(data.get("cases"), list)):
        raise UnreadableReport(f"{name} is not a gotchas report: a report written by --gotchas-json has a `format` "
                               "number and a list of `cases`")
    problem = refusal(data["format"])
    if problem is not None:
        raise UnreadableReport(problem.said_of(name))
    return ReportDocument(name, data)


def depth(data: Any) -> int:
    """How many levels of lists and objects `data` nests, found without recursion (stops past MAX_DEPTH)."""
    deepest, level = 0, [data]
    while level and deepest <= MAX_DEPTH:
        deepest += 1
        level = [child for value in level if isinstance(value, (dict, list))
                 for child in (value.values() if isinstance(value, dict) else value)]
    return deepest


def report_of(document: ReportDocument) -> Report:
    """The typed report of a document (migrated to format FORMAT), rolled up, or UnreadableReport naming the first
    value that does not fit and the file."""
    document = checked(document.name, document.data)  # one built by hand is checked too
    name = f"{document.name} is not a gotchas report of format {document.format}"
    try:
        report = from_data(document.data)
        problem = next(out_of_bounds(report.run, report.model_infos, report.chapter_infos, report.results), None)
        if problem is None:  # the rollup would compute with it
            _ = report.chapters  # rolls it up: data that reads back but does not add up fails here, not later
    except NonFiniteNumber as error:
        raise UnreadableReport(f"{document.name} is not a gotchas report: {error.path} is out of float range (a JSON "
                               "number such as 1e400 reads as infinity); a report holds finite numbers only") from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise UnreadableReport(f"{name}: at {where}: {first['msg']}") from None
    except (KeyError, ValueError) as error:
        raise UnreadableReport(f"{name}: its data does not add up ({type(error).__name__}: {error})") from None
    if problem is not None:
        raise UnreadableReport(f"{name}: {problem}")
    return report


def read_report(path: Path | str) -> Report:
    """The typed report of a JSON report file (an older format migrated), or UnreadableReport naming the file."""
    return report_of(load_document(path))


__all__ = ["FORMAT", "MAX_BYTES", "MAX_DEPTH", "ReportDocument", "UnreadableReport", "checked", "depth",
           "load_document", "read_report", "report_of"]
