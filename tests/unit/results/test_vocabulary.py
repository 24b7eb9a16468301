"""The closed sets on the ground floor (results/vocabulary.py): published in the JSON Schema with their values,
written as the bare strings they replace (the JSON stays byte for byte what it was), and checked when a report or a
baseline is read back."""

from __future__ import annotations

import json
from enum import StrEnum

import pytest
from helpers.results import TINY_MODEL, report_of

from pytest_gotchas.results import vocabulary
from pytest_gotchas.results.reading import ReportDocument, UnreadableReport, report_of as read_back
from pytest_gotchas.results.report import json_schema, to_data, to_json
from pytest_gotchas.results.verdict import Verdict
from pytest_gotchas.results.vocabulary import Cell, ComponentKind

SETS = [v for v in vars(vocabulary).values() if isinstance(v, type) and issubclass(v, StrEnum) and v is not StrEnum]


def test_every_closed_set_in_the_schema_lists_its_values() -> None:
    defs = json_schema()["$defs"]
    published = {name: d["enum"] for name, d in defs.items() if "enum" in d}
    for kind in SETS:
        if kind.__name__ in defs:
            assert published[kind.__name__] == [m.value for m in kind], kind.__name__
    # the sets a report holds: a run's readings, their verdicts, the components and the patching methods
    assert {"ReadingKind", "ComponentKind", "ComponentsMethod", "PatchMethod", "Verdict"} <= set(published)


def test_a_member_is_written_as_the_string_it_replaced() -> None:
    report = report_of(TINY_MODEL)
    reading = report.results[0].runs[0].readings["token"]
    assert isinstance(reading.verdict, Verdict) and isinstance(reading.kind, vocabulary.ReadingKind)
    data = json.loads(to_json(report))
    written = data["cases"][0]["runs"][0]["readings"]["token"]
    assert (written["verdict"], written["kind"]) == ("ok", "plain")
    assert json.dumps(vocabulary.ReadingName.OTHER_SOFTMAX) == '"other-softmax"'


def test_a_report_with_a_value_outside_its_set_is_refused_by_field() -> None:
    data = to_data(report_of(TINY_MODEL))
    data["cases"][0]["runs"][0]["readings"]["token"]["kind"] = "sideways"
    with pytest.raises(UnreadableReport) as error:
        read_back(ReportDocument("r.json", data))
    assert "cases.0.runs.0.readings.token.kind" in str(error.value)
    assert "'text', 'plain', 'healed' or 'chain'" in str(error.value)


def test_cells_sort_by_kind_layer_head_and_position_as_the_tuples_did() -> None:
    cells = [Cell(ComponentKind.MLP, 2, 0, 1), Cell(ComponentKind.HEAD, 1, 3, 0), Cell(ComponentKind.ATTN, 2, 0, 0),
             Cell(ComponentKind.HEAD, 1, 0, 2)]
    as_tuples = sorted((str(c.kind), c.layer, c.head, c.position) for c in cells)
    assert [(str(c.kind), c.layer, c.head, c.position) for c in sorted(cells)] == as_tuples
    assert len({Cell(ComponentKind.ATTN, 1, 0, 0), Cell(ComponentKind.ATTN, 1, 0, 0)}) == 1
