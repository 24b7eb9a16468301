"""A case to break, and the two ways the tests break its chapter: `refused` loads a chapter text and returns
its refusal; `latin1` is a chapter as an editor set to Latin-1 saves it."""

from __future__ import annotations

import pytest

from pytest_gotchas.cases.chapter import CaseFileError, load_chapter

CASE = """
- id: one
  transcript: |-
    >>> 1 + 1
    █
  correct: "2"
  wrong: "3"
"""


def refused(tmp_path, text: str) -> str:
    path = tmp_path / "a.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CaseFileError) as error:
        load_chapter(path, "a.yaml")
    return str(error.value)


# -- encodings ----------------------------------------------------------------------------------------------------


def latin1(text: str) -> bytes:
    """A chapter saved by an editor set to Latin-1: its é is one byte (the cursor keeps its UTF-8 bytes, as no
    Latin-1 file can hold it)."""
    return text.encode("utf-8").replace("é".encode("utf-8"), b"\xe9")
