"""terminal.py: the summary's first line names the model scored (--gotchas-strict's failure text is
wording_baseline's, tests/unit/report/test_wording.py)."""

from __future__ import annotations

import dataclasses

from helpers.baselines import SKIPPED, case
from helpers.hostile import ESCAPED, HOSTILE, UNSAFE, hostile_report
from helpers.results import TINY_MODEL, report_of

from pytest_gotchas.report import terminal


def test_the_status_pytest_reports_is_plain_strings_decided_from_the_result() -> None:
    ok, skipped = case("a"), case("b", status=SKIPPED)
    assert terminal.status_of(ok) == ("ok", ".", terminal.verbose_word(ok), "green")
    assert terminal.verbose_word(ok).startswith("ok  P(correct) 75.00%")
    assert terminal.status_of(skipped) is None  # pytest's own skip


def test_a_single_model_summary_names_the_model_its_dtype_and_device_first() -> None:
    first = next(iter(terminal.summary_lines(report_of(TINY_MODEL), [])))
    assert first == ("model '/m/tiny': bfloat16, softmax bfloat16, cpu (weights sha256 aaaaaaaaaaaa...)",
                     {"bold": True})
    other = dataclasses.replace(TINY_MODEL, id="other")
    two = report_of(TINY_MODEL)
    two.model_infos.append(other)
    assert not any(text.startswith("model '") for text, _ in terminal.summary_lines(two, []))  # a column each


# -- text from other people's files, escaped (hostile input round two) -----------------------------------------------


def test_the_terminal_summary_shows_titles_primers_reasons_and_outputs_escaped() -> None:
    lines = [text for text, _ in terminal.summary_lines(hostile_report(), [("baseline " + HOSTILE, {})])]
    shown = "\n".join(lines)
    assert not any(char in shown for char in UNSAFE)
    assert f"ch.1 {ESCAPED}" in lines  # the chapter's heading
    assert f"  shown  unscored   why {ESCAPED}" in lines
    assert f"         PYTHONHASHSEED=1: {{'b', 'a'}} {ESCAPED}" in lines
    assert any(line.startswith(f"  a      p{ESCAPED}  ok") for line in lines)  # the primer column
    assert f"baseline {ESCAPED}" in lines


def test_the_verbose_word_is_escaped() -> None:
    result = hostile_report().results[0]
    word = terminal.verbose_word(result)
    assert f"[p{ESCAPED}: ok 75.00%/12.50% | q: ok 75.00%/12.50%]" in word


def test_the_cut_column_is_headed_only_where_a_run_has_a_note() -> None:
    lines = [text for text, _ in terminal.summary_lines(report_of(TINY_MODEL), [])]
    assert "  case  verdict    P(correct)  P(wrong)  coverage   margin" in lines  # no note: no empty "cut" column
    healed = report_of(TINY_MODEL, ((0.75, 0.125), (0.125, 0.75)))
    run = healed.results[0].runs[0]
    run.readings[run.main] = dataclasses.replace(run.reading, kind="healed")
    lines = [text for text, _ in terminal.summary_lines(healed, [])]
    assert "  case  verdict    P(correct)  P(wrong)  coverage   margin  cut" in lines
    assert any(line.startswith("  a  ok") and line.endswith("healed cut: '1' vs '2'") for line in lines), lines
