"""results/report.schema.json is generated from the types (results/report.schema_text): the file in the repository
must be what they generate now, so that a field added to the schema is a field in the published JSON Schema."""

from __future__ import annotations

from pytest_gotchas.results.report import SCHEMA_FILE, schema_text


def test_the_schema_file_is_what_the_types_generate() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(), (
        "regenerate it: python -c 'from pytest_gotchas.results.report import SCHEMA_FILE, schema_text; "
        "SCHEMA_FILE.write_text(schema_text())'")
