"""wording.progress_text: the terminal's progress line (plugin/progress.py) says what runs, which of how many, and
how long the rest should take at the pace so far."""

from __future__ import annotations

from pytest_gotchas.report.wording import progress_text


def test_which_of_how_many_and_the_time_left_at_the_pace_so_far() -> None:
    what = "executing ground truth of chapter file"
    assert progress_text(what, 0, 17, 0.0, "cases/0-pep289.yaml") == f"{what} 1/17: cases/0-pep289.yaml"
    assert progress_text(what, 2, 17, 14.0, "cases/2-sets.yaml") == f"{what} 3/17: cases/2-sets.yaml, about 2 min left"
    assert progress_text("patching pair", 3, 4, 30.0) == "patching pair 4/4, about 10 s left"
    assert progress_text("patching pair", 1, 96, 0.2) == "patching pair 2/96, about 19 s left"
    assert progress_text("patching pair", 1, 2, 0.1) == "patching pair 2/2"  # no estimate under a second
    assert progress_text("converting gemma-3-270m: reading the GGUF file", 0, 0, 5.0) == (
        "converting gemma-3-270m: reading the GGUF file")  # uncounted work: what it is, nothing more
