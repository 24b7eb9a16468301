"""bench/scale.py's pure parts: the generated chapter loads, with one distinct call per case whose candidates
start apart, within the chapter file's size bound at 5,000 cases; and growth is read per case."""

from __future__ import annotations

from pathlib import Path

from bench.scale import Measured, case_text, chapter_text, growth

from pytest_gotchas.cases import yamlfile
from pytest_gotchas.cases.chapter import load_chapter


def test_the_generated_chapter_loads_with_a_distinct_call_per_case(tmp_path: Path) -> None:
    path = tmp_path / "1-generated.yaml"
    path.write_text(chapter_text(50), encoding="utf-8")
    chapter = load_chapter(path)
    assert [c.id for c in chapter.cases] == [f"call-{n}" for n in range(50)]
    assert len({c.transcript.prompt for c in chapter.cases}) == 50  # a cold collection executes every one
    for n, case in enumerate(chapter.cases):
        assert case.correct and case.wrong and case.correct[0] != case.wrong[0]
        assert case.transcript.prompt.endswith(")\n") and f">>> f{n}(" in case.transcript.prompt


def test_the_correct_candidate_is_what_the_call_returns() -> None:
    # case 8: a = 3 + 8 % 7 = 4, b = 2 + 8 % 5 = 5, the fourth body: (4 + 5) * 8 + 100 = 172
    text = case_text(8)
    assert "return (a + b) * 8 + 100" in text and ">>> f8(4, 5)" in text and 'correct: "172"' in text
    assert 'wrong: "272"' in text


def test_five_thousand_cases_fit_a_chapter_file() -> None:
    assert len(chapter_text(5000).encode("utf-8")) < yamlfile.MAX_BYTES


def test_growth_per_case() -> None:
    found = [Measured("collect, warm", 1000, 99.0, 10.0, 200.0), Measured("collect, warm", 5000, 9.0, 52.0, 300.0),
             Measured("score", 1000, 10.0, 10.0, 200.0), Measured("score", 5000, 10.0, 80.0, 300.0)]
    assert growth(found) == [
        "collect, warm: 1,000 -> 5,000 cases: CPU time per case x1.04 (linear); peak memory 200 -> 300 MB (25.0 MB per "
        "1,000 cases more)",
        "score: 1,000 -> 5,000 cases: CPU time per case x1.60 (SUPERLINEAR); peak memory 200 -> 300 MB (25.0 MB per 1,000 "
        "cases more)",
    ]
