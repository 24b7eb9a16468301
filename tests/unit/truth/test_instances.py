"""instances.py: a drawn instance cut where its outputs part, from its runs: each member's wrong answer is its
partner's text there (or the stated misreading), the cut is a character and each candidate the rest of its word or
number, and an instance whose outputs do not part, or part unlike instance zero's, is refused with one message."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from helpers.families import FAMILY_CHAPTER

from pytest_gotchas.cases.chapter import Case, load_chapter
from pytest_gotchas.cases.families import drawn
from pytest_gotchas.truth.execute import Execution
from pytest_gotchas.truth.instances import Cut, Executed, cut_case, cut_unit


def members(tmp_path: Path) -> tuple[Case, Case]:
    path = tmp_path / "fam.yaml"
    path.write_text(FAMILY_CHAPTER, encoding="utf-8")
    chapter = drawn(load_chapter(path, "fam.yaml"), 1)
    return chapter.cases[2], chapter.cases[3]


def ran(case: Case, *outputs: str) -> Executed:
    """The case's prompt and runs that printed `outputs` after it (one run each)."""
    prompt = case.transcript.prompt
    return Executed(prompt, tuple(Execution(prompt + text, str(n), 0, False) for n, text in enumerate(outputs, 1)))


def test_each_member_is_cut_where_the_outputs_part_and_its_wrong_answer_is_its_partners(tmp_path: Path) -> None:
    first, second = members(tmp_path)
    cuts = cut_unit((first, second), {first.id: ran(first, "12, 11, 10]\n"), second.id: ran(second, "0, 1, 12}\n")})
    assert cuts == {first.id: Cut("", "12", "0"), second.id: Cut("", "0", "12")}


def test_the_text_both_print_first_joins_each_prompt(tmp_path: Path) -> None:
    first, second = members(tmp_path)
    cuts = cut_unit((first, second), {first.id: ran(first, "1022: None}\n"), second.id: ran(second, "1024, 1022}\n")})
    assert isinstance(cuts, dict) and cuts[first.id] == Cut("102", "2", "4")
    made = cut_case(first, cuts[first.id])
    assert isinstance(made, Case)
    assert (made.transcript.prompt, made.correct, made.wrong) == (first.transcript.prompt + "102", "2", "4")
    assert made.transcript.repl_input == first.transcript.repl_input and made.drawn == first.drawn


def test_outputs_alike_are_no_instance(tmp_path: Path) -> None:
    first, second = members(tmp_path)
    problem = cut_unit((first, second), {first.id: ran(first, "0]\n"), second.id: ran(second, "0]\n")})
    assert problem == (f"{first.id!r} and {second.id!r} print the same text after the cursor, so nothing is there to "
                       "cut: '0]\\n' against '0]\\n'")


def test_outputs_that_part_unlike_instance_zeros_are_another_trap(tmp_path: Path) -> None:
    first, second = members(tmp_path)
    problem = cut_unit((first, second), {first.id: ran(first, "0]\n"), second.id: ran(second, "0}\n")})
    assert problem == (
        f"case {first.id!r}: its outputs part at ']' against '}}' (another character against another character), "
        "where instance zero's part at '2' against '0' (a digit against a digit): not the family's trap\n"
        f"case {second.id!r}: its outputs part at '}}' against ']' (another character against another character), "
        "where instance zero's part at '0' against '2' (a digit against a digit): not the family's trap")


def test_a_stated_misreading_is_the_wrong_answer(tmp_path: Path) -> None:
    first, second = members(tmp_path)
    assert first.drawn is not None
    alone = replace(first, drawn=replace(first.drawn, partner=None, misreading="7, 6"))
    assert cut_unit((alone,), {alone.id: ran(alone, "8, 7]\n")}) == {alone.id: Cut("", "8", "7")}
    assert cut_unit((alone,), {alone.id: ran(alone, "7, 6]\n")}) == (
        f"case {alone.id!r}: Python's output '7, 6]\\n' goes on where the misreading '7, 6' ends: they never differ at one character; "
        "give the whole output a careless reader expects")


def test_a_template_that_is_not_what_python_printed_is_refused_with_where_it_parts(tmp_path: Path) -> None:
    first, second = members(tmp_path)
    broken = Executed(first.transcript.prompt, (Execution(">>> nothing alike\n", "1", 0, False),))
    problem = cut_unit((first, second), {first.id: broken, second.id: ran(second, "0}\n")})
    assert isinstance(problem, str)
    assert problem.startswith(f"case {first.id!r}: the template is not what Python printed\n  at line 1 of the "
                              "transcript, after '>>> ':")


def test_a_crash_is_said_as_collection_says_it(tmp_path: Path) -> None:
    first, second = members(tmp_path)
    crashed = Executed(first.transcript.prompt, (Execution(first.transcript.prompt, "1", -11, False),))
    problem = cut_unit((first, second), {first.id: crashed, second.id: ran(second, "0}\n")})
    assert problem == f"case {first.id!r}: the interpreter crashed: killed by SIGSEGV (seed 1)"


def test_twins_print_alike_and_are_cut_against_their_stated_misreading(tmp_path: Path) -> None:
    first, second = members(tmp_path)
    assert first.drawn is not None and second.drawn is not None
    one, two = (replace(case, drawn=replace(case.drawn, partner=None, misreading="4, 5")) for case in (first, second))
    cuts = cut_unit((one, two), {one.id: ran(one, "4, 3]\n"), two.id: ran(two, "4, 3]\n")})
    assert cuts == {one.id: Cut("4, ", "3", "5"), two.id: Cut("4, ", "3", "5")}
