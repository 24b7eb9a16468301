"""chapterfile.py: a case written into a chapter as YAML text reads back exactly as it was given."""

from __future__ import annotations

import yaml

from pytest_gotchas.cli.chapterfile import case_entry


def test_printed_yaml_reads_back_exactly() -> None:
    text = ">>> s\n'a\\tb'  \n\x1b[0m█"
    entry = case_entry("  ", [("id", "true"), ("transcript", text), ("correct", "1"), ("wrong", "\n"),
                                  ("env", {"PYTHONHASHSEED": "0"})])
    data = yaml.safe_load("cases:\n" + entry)["cases"][0]
    assert data == {"id": "true", "transcript": text, "correct": "1", "wrong": "\n", "env": {"PYTHONHASHSEED": "0"}}
