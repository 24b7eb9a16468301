"""cases/imported.py, pure: the records `gotchas import` reads (each refusal word for word, with its line and id) and
what two executed programs make: a pair cut where their outputs part, a twin, nothing, or why not. The sessions here
are written by hand as Python prints them; tests/unit/cli/test_import.py executes real ones."""

from __future__ import annotations

import json

import pytest

from pytest_gotchas.cases.imported import Cut, Member, NotCut, Refusal, make, read_records, unstable


def line(**record: object) -> str:
    return json.dumps(record)


def test_records_are_read_with_their_lines_and_defaults() -> None:
    text = "\n".join([line(id="one", a="print(1)", b="print(2)", note="n", interpreter="3.12"), "",
                      line(id="two", a="$ python3.12 -c 'print(1)'", b="print(2)", env={"PYTHONHASHSEED": "1"})])
    records, refused = read_records(text, {"PYTHONHASHSEED": "0", "LANG": "C"})
    assert refused == []
    assert [(r.line, r.id, r.interpreter, r.note) for r in records] == [(1, "one", "3.12", "n"), (3, "two", None, None)]
    assert records[0].env == {"PYTHONHASHSEED": "0", "LANG": "C"}
    assert records[1].env == {"PYTHONHASHSEED": "1", "LANG": "C"}  # the record's own value wins
    assert records[0].snippets[0].repl_lines == ("print(1)",)
    # a shell command takes its variables on its command line, as `gotchas new --env` puts them
    assert records[1].snippets[0].command == "PYTHONHASHSEED=1 LANG=C python3.12 -c 'print(1)'"


@pytest.mark.parametrize(("text", "refusal"), [
    ("{\"id\": \"x\", \"a\": ", Refusal(1, None, "not JSON: Expecting value at column 18")),
    ("[1, 2]", Refusal(1, None, "a record is a JSON object with keys id, a, b; this line holds a list")),
    (line(id="x", a="print(1)"), Refusal(1, "x", "missing key 'b'")),
    (line(a="print(1)"), Refusal(1, None, "missing keys 'id', 'b'")),
    (line(id="x", a="1", b="2", python="3.12"), Refusal(1, "x", "unknown key 'python' (a record has id, a, b, "
                                                                "interpreter, env, note, wrong)")),
    (line(id="x", a=1, b="2"), Refusal(1, "x", "'a' must be a string, not int")),
    (line(id="x y", a="1", b="2"), Refusal(1, "x y", "the id 'x y': use letters, digits, `-`, `_` and `.`, starting "
                                                     "with a letter or digit")),
    (line(id="x", a="1", b="2", interpreter="3"), Refusal(1, "x", "'interpreter' expects a version such as 3.12, got "
                                                                  "'3'")),
    (line(id="x", a="1", b="2", env=["A=1"]), Refusal(1, "x", "'env' must map names to strings, e.g. "
                                                              "{\"PYTHONHASHSEED\": \"0\"}")),
    (line(id="x", a="1", b="   "), Refusal(1, "x", "program 'b' is empty")),
    (line(id="x", a="1", b="2", wrong=""), Refusal(1, "x", "'wrong' is empty: give the output a careless reader "
                                                           "expects of both programs")),
    (line(id="x", a="$ python3.12 -c 'print(1", b="2"),
     Refusal(1, "x", "program 'a': the snippet is not a command collection can run: the command's quotes are "
                     "never closed before the cursor")),
])
def test_each_record_that_cannot_be_read_is_refused_naming_its_line(text: str, refusal: Refusal) -> None:
    records, refused = read_records("\n\n" + text)
    assert records == [] and refused == [Refusal(3, refusal.record, refusal.reason)]


def test_a_variable_that_changes_how_python_starts_is_refused() -> None:
    _, refused = read_records(line(id="x", a="1", b="2", env={"PYTHONPATH": "/tmp"}))
    assert refused == [Refusal(1, "x", "the variable PYTHONPATH cannot be set for a snippet: it changes how Python "
                                       "starts or where it imports from, which collection sets itself; a case's "
                                       "variables may change what the program does, not how a process starts "
                                       "(docs/cases.md)")]


def test_a_taken_id_is_refused_and_the_first_kept() -> None:
    records, refused = read_records(line(id="x", a="1", b="2") + "\n" + line(id="x", a="3", b="4"))
    assert [r.line for r in records] == [1]
    assert refused == [Refusal(2, "x", "the id 'x' is taken by an earlier record")]


def record(**extra: str):
    records, _ = read_records(line(id="r", a="f(1)", b="g(1)", **extra))
    return records[0]


def session(code: str, output: str) -> Member:
    text = f">>> {code}\n"
    return Member(text + output, len(text))


def test_two_outputs_that_part_make_a_pair_cut_there() -> None:
    made = make(record(), (session("f(1)", "[1, 2, 3]\n"), session("g(1)", "[1, 4, 3]\n")))
    assert made.kind == "pair"
    assert made.cuts == (Cut(">>> f(1)\n[1, ", "2", "4"), Cut(">>> g(1)\n[1, ", "4", "2"))


def test_the_cut_is_at_the_first_character_that_differs_as_gotchas_new_cuts() -> None:
    """Inside a number: "2" against "20" part after the 2; a tokenizer that merges "20" reads it healed (scoring/
    cut.py), and one that cannot read it refuses the record (with --model, tests/unit/cli/test_import.py)."""
    made = make(record(), (session("f(1)", "[1, 2, 3]\n"), session("g(1)", "[1, 20, 3]\n")))
    assert made.cuts == (Cut(">>> f(1)\n[1, 2", ",", "0"), Cut(">>> g(1)\n[1, 2", "0", ","))


def test_a_traceback_against_a_value_is_a_pair() -> None:
    made = make(record(), (session("f(1)", "Traceback (most recent call last):\n"), session("g(1)", "(1, 2)\n")))
    assert made.cuts[0] == Cut(">>> f(1)\n", "Traceback", "(")


def test_the_same_output_makes_a_twin_cut_where_the_misreading_parts() -> None:
    made = make(record(wrong="[3, 1, 2]"), (session("f(1)", "[1, 2, 3]\n"), session("g(1)", "[1, 2, 3]\n")))
    assert made.kind == "twin"
    assert made.cuts == (Cut(">>> f(1)\n[", "1", "3"), Cut(">>> g(1)\n[", "1", "3"))


def test_the_same_output_without_a_misreading_is_refused() -> None:
    with pytest.raises(NotCut) as refusal:
        make(record(), (session("f(1)", "3\n"), session("g(1)", "3\n")))
    assert str(refusal.value) == ("both programs print '3\\n': they make a twin, which is cut where a misreading parts "
                                  "from that output; give it as the record's \"wrong\"")


def test_a_misreading_that_is_the_output_is_refused() -> None:
    with pytest.raises(NotCut, match=r"^both programs print the same, a twin: the misreading '3' is exactly what "
                                     r"Python prints: it is not a misreading$"):
        make(record(wrong="3"), (session("f(1)", "3\n"), session("g(1)", "3\n")))


def test_one_program_written_twice_makes_nothing() -> None:
    records, _ = read_records(line(id="r", a="print(1)", b="print(1)\n"))
    assert make(records[0], (session("print(1)", "1\n"), session("print(1)", "1\n"))).kind == "same"


def test_an_output_that_only_starts_the_other_is_refused() -> None:
    with pytest.raises(NotCut) as refusal:
        make(record(), (session("f(1)", "ab"), session("g(1)", "abc")))
    assert str(refusal.value) == ("program 'a' prints the start of what program 'b' prints (a: 'ab', b: 'abc'): the "
                                  "two never print different text at one point")


def test_runs_that_differ_before_the_end_of_the_candidates_are_unstable() -> None:
    assert unstable(["a1b\nx", "a1b\ny"], 3) is None  # they part after what the case reads
    assert unstable(["a1b\n", "a2b\n"], 3) == ("its output changes between runs: one run prints '1b', another '2b', at "
                                               "character 1 of its session")
