"""check.py, pure: a prompt is checked against what Python printed, run by run: a true prefix, the correct
candidate next, the distractor not; crashes, timeouts and output that changes between runs are told apart."""

from __future__ import annotations

from pytest_gotchas.truth.execute import Execution
from pytest_gotchas.truth.check import CONTEXT, check

PROMPT = ">>> 1 + 1\n"


def runs(*texts: str, returncode: int = 0, timed_out: bool = False) -> tuple[Execution, ...]:
    return tuple(Execution(text=t, seed=str(n), returncode=returncode, timed_out=timed_out)
                 for n, t in enumerate(texts, start=1))


def test_ok() -> None:
    checked = check(PROMPT, "2", "3", runs(">>> 1 + 1\n2\n", ">>> 1 + 1\n2\n"))
    assert (checked.status, checked.message, checked.output) == ("ok", None, ">>> 1 + 1\n2\n")


def test_candidates_may_be_longer_than_one_character() -> None:
    assert check(">>> 1 == 1\n", "True", "False", runs(">>> 1 == 1\nTrue\n") * 2).status == "ok"


def test_prompt_not_a_prefix_shows_where_with_reprs() -> None:
    checked = check(">>> print(' x')\nx", "\n", "y", runs(">>> print(' x')\n x\n") * 2)
    assert checked.status == "mismatch"
    assert checked.message == (
        "the prompt is not what Python printed\n"
        "  at line 2 of the transcript, after \">>> print(' x')\\n\":\n"
        "    transcript: 'x'\n"
        "    python:     ' x\\n'"
    )


def test_whitespace_only_difference_is_visible() -> None:
    # A tab against four spaces: both look blank on a terminal, but the reprs differ.
    checked = check(">>> print('\\ta')\n    a", "\n", "b", runs(">>> print('\\ta')\n\ta\n") * 2)
    assert checked.message.splitlines()[2:] == ["    transcript: '    a'", "    python:     '\\ta\\n'"]


def test_trailing_space_of_a_continuation_prompt_matters() -> None:
    # `... ` (with its space) is what Python prints for the blank line that ends a block
    prompt = ">>> if 1:\n...     print(1)\n...\n"
    actual = ">>> if 1:\n...     print(1)\n... \n1\n"
    checked = check(prompt, "1", "2", runs(actual) * 2)
    assert checked.status == "mismatch"
    assert "    transcript: '\\n'\n    python:     ' \\n1\\n'" in checked.message
    assert "at line 3 of the transcript" in checked.message


def test_divergence_context_is_limited() -> None:
    long = "x" * 100
    prompt = f">>> print('{long}')\n{long}y"
    actual = f">>> print('{long}')\n{long}\n"
    message = check(prompt, "z", "w", runs(actual) * 2).message
    assert message.splitlines()[1] == f"  at line 2 of the transcript, after {'x' * CONTEXT!r}:"
    assert message.splitlines()[2:] == ["    transcript: 'y'", "    python:     '\\n'"]


def test_python_printed_less_than_the_prompt() -> None:
    message = check(">>> 1\n1\n>>> 2\n2", "\n", "x", runs(">>> 1\n1\n") * 2).message
    assert message.splitlines()[2:] == ["    transcript: '>>> 2\\n2'", "    python:     ''"]
    assert "at line 3 of the transcript" in message


def test_correct_is_not_the_next_text() -> None:
    checked = check(PROMPT, "4", "5", runs(">>> 1 + 1\n2\n") * 2)
    assert checked.status == "mismatch"
    assert checked.message == (
        "`correct` '4' is not what Python prints at the cut; it prints '2\\n'\n"
        "  at line 2 of the transcript, after '>>> 1 + 1\\n':\n"
        "    transcript: '4'\n"
        "    python:     '2\\n'"
    )


def test_correct_longer_than_what_follows() -> None:
    message = check(">>> 1 == 1\n", "Truest", "False", runs(">>> 1 == 1\nTrue\n") * 2).message
    assert message.splitlines()[0] == "`correct` 'Truest' is not what Python prints at the cut; it prints 'True\\n'"


def test_distractor_is_the_next_text_and_correct_is_not() -> None:
    checked = check(PROMPT, "3", "2", runs(">>> 1 + 1\n2\n") * 2)
    assert checked.status == "mismatch"
    assert checked.message == (
        "`correct` '3' is not what Python prints at the cut, `wrong` '2' is\n"
        "  at line 2 of the transcript, after '>>> 1 + 1\\n':\n"
        "    transcript: '3'\n"
        "    python:     '2\\n'"
    )


def test_distractor_is_the_next_text_too() -> None:
    # Both match (the chapter loader forbids it, but the check stands alone)
    checked = check(PROMPT, "2", "2\n", runs(">>> 1 + 1\n2\n") * 2)
    assert checked.status == "mismatch"
    assert checked.message == "`wrong` '2\\n' is what Python prints at the cut: it is not a misreading"


def test_nondeterministic_names_the_two_seeds() -> None:
    texts = (">>> s\n{'a', 'b'}\n", ">>> s\n{'b', 'a'}\n", ">>> s\n{'a', 'b'}\n")
    checked = check(">>> s\n{'", "a", "c", runs(*texts))
    assert checked.status == "nondeterministic"
    assert checked.message.splitlines()[0] == (
        "the answer changes between runs: it holds under PYTHONHASHSEED=1 but not under PYTHONHASHSEED=2: "
        "`correct` 'a' is not what Python prints at the cut; it prints \"b', 'a'}\\n\"")


def test_nondeterministic_when_only_a_later_run_holds() -> None:
    texts = (">>> s\n{'b', 'a'}\n", ">>> s\n{'b', 'a'}\n", ">>> s\n{'a', 'b'}\n")
    message = check(">>> s\n{'", "a", "c", runs(*texts)).message
    assert message.startswith("the answer changes between runs: it holds under PYTHONHASHSEED=3 but not under "
                              "PYTHONHASHSEED=1: ")


def pinned(*texts: str) -> tuple[Execution, ...]:
    return tuple(Execution(text=t, seed="0", returncode=0, timed_out=False) for t in texts)


COIN = ">>> import random; random.random() < 0.5\n"


def test_nondeterministic_under_one_pinned_seed_names_the_runs_and_what_differed() -> None:
    # Every run had PYTHONHASHSEED=0: naming the seed twice ("holds under 0 but not under 0") says nothing.
    checked = check(COIN, "True", "maybe", pinned(COIN + "True\n", COIN + "False\n", COIN + "True\n"))
    assert checked.status == "nondeterministic"
    assert checked.message == (
        "the answer changes between runs under the same PYTHONHASHSEED=0, so something else varies (time, "
        "randomness, memory addresses): it holds in run 1 of 3 but not in run 2 of 3: `correct` 'True' is not what "
        "Python prints at the cut; it prints 'False\\n'\n"
        "  at line 2 of the transcript, after 'random; random.random() < 0.5\\n':\n"
        "    transcript: 'True'\n"
        "    python:     'False\\n'\n"
        "  the runs first differ at line 2, after 'random; random.random() < 0.5\\n':\n"
        "    run 1: 'True\\n'\n"
        "    run 2: 'False\\n'")


def test_output_differing_before_the_cut_under_one_seed_shows_where_the_runs_part() -> None:
    # A timestamp before the cut: the prompt holds in one run only, and the runs part long before the candidates.
    texts = (">>> t()\n1700000001\n>>> 1\n1\n", ">>> t()\n1700000002\n>>> 1\n1\n") * 5
    checked = check(">>> t()\n1700000001\n>>> 1\n", "1", "2", pinned(*texts))
    assert checked.message.splitlines()[0].endswith("it holds in run 1 of 10 but not in run 2 of 10: the prompt is "
                                                   "not what Python printed")
    assert checked.message.splitlines()[-3:] == [
        "  the runs first differ at line 2, after '>>> t()\\n170000000':",
        "    run 1: '1\\n>>> 1\\n1\\n'",
        "    run 2: '2\\n>>> 1\\n1\\n'"]


def test_always_wrong_and_varying_under_one_pinned_seed_names_the_runs() -> None:
    checked = check(COIN, "yes", "no", pinned(COIN + "False\n", COIN + "False\n", COIN + "True\n"))
    assert checked.status == "nondeterministic"
    lines = checked.message.splitlines()
    assert lines[0] == ("the output changes between runs under the same PYTHONHASHSEED=0: in run 1 of 3: `correct` "
                        "'yes' is not what Python prints at the cut; it prints 'False\\n'")
    assert lines[4] == "in run 3 of 3: `correct` 'yes' is not what Python prints at the cut; it prints 'True\\n'"


def test_always_wrong_but_varying_is_nondeterministic() -> None:
    texts = (">>> s\n{'a', 'b'}\n", ">>> s\n{'b', 'a'}\n")
    checked = check(">>> s\n{'", "c", "d", runs(*texts))
    assert checked.status == "nondeterministic"
    lines = checked.message.splitlines()
    assert lines[0] == ("the output changes between runs: under PYTHONHASHSEED=1: `correct` 'c' is not what Python "
                        "prints at the cut; it prints \"a', 'b'}\\n\"")
    assert lines[4] == ("under PYTHONHASHSEED=2: `correct` 'c' is not what Python prints at the cut; it prints "
                        "\"b', 'a'}\\n\"")


def test_same_mismatch_in_every_run_is_a_plain_mismatch() -> None:
    assert check(PROMPT, "4", "5", runs(">>> 1 + 1\n2\n") * 3).status == "mismatch"


def test_crash_is_not_a_wrong_answer() -> None:
    crashed = runs("", "", returncode=-11)
    checked = check(PROMPT, "2", "3", crashed)
    assert checked.status == "crash"
    assert checked.message == "the interpreter crashed: killed by SIGSEGV (seed 1)"


def test_crash_in_a_later_run_is_still_a_crash() -> None:
    mixed = runs(">>> 1 + 1\n2\n") + (Execution(text="", seed="2", returncode=-6, timed_out=False),)
    checked = check(PROMPT, "2", "3", mixed)
    assert (checked.status, checked.message) == ("crash", "the interpreter crashed: killed by SIGABRT (seed 2)")


def test_nonzero_exit_is_not_a_crash() -> None:
    # sys.exit(1) or an uncaught exception in a script: what it printed is the ground truth
    assert check(PROMPT, "2", "3", runs(">>> 1 + 1\n2\n", returncode=1) * 2).status == "ok"


def test_timeout() -> None:
    checked = check(PROMPT, "2", "3", runs(">>> 1 + 1\n", returncode=-9, timed_out=True))
    assert checked.status == "timeout"
    assert checked.message == "the snippet did not finish (killed after the timeout, seed 1)"


def test_unscored_output_must_vary() -> None:
    same = runs(">>> 1\n1\n", ">>> 1\n1\n", ">>> 1\n1\n")
    checked = check(">>> 1\n", None, None, same)
    assert checked.status == "mismatch"
    assert checked.message == ("an unscored case must show that its output changes, but it printed the same under "
                               "PYTHONHASHSEED=1, 2, 3; score it with `correct`/`wrong` instead")


def test_unscored_output_that_varies_is_ok() -> None:
    varied = runs(">>> s\n{'a', 'b'}\n", ">>> s\n{'b', 'a'}\n")
    assert check(">>> s\n{'", None, None, varied).status == "ok"


def test_mismatch_before_a_varying_part_is_a_plain_mismatch() -> None:
    # The outputs differ only after the cut (an address): the prompt is simply wrong.
    texts = (">>> o\n<object at 0x7f01>\n", ">>> o\n<object at 0x7f02>\n")
    checked = check(">>> o\n[", "a", "b", runs(*texts))
    assert checked.status == "mismatch"
    assert checked.message.splitlines()[2:] == ["    transcript: '['", "    python:     '<object at 0x7f01>\\n'"]


def test_unscored_prompt_must_still_be_a_prefix() -> None:
    varied = runs(">>> s\n{'a', 'b'}\n", ">>> s\n{'b', 'a'}\n")
    checked = check(">>> s\n[", None, None, varied)
    assert checked.status == "mismatch"
    assert checked.message.startswith("the prompt is not what Python printed\n")


def test_bytes_that_are_not_utf8_never_match_their_escape(py312) -> None:
    """Python wrote the byte 0xff; the transcript spells `\\xff`. Rendered as the text `\\xff`, a cut after the
    backslash was accepted; the byte now stays a character no chapter can hold, and the cut is refused."""
    from helpers.execution import strong
    from pytest_gotchas.truth.execute import Limits, Request, execute

    request = Request(interpreter=py312, repl_input=None, args=("-c", "import sys; sys.stdout.buffer.write(b'a\\xffb')"),
                      shell_text="python3.12 -c ...", env=())
    runs = execute(request, 2, Limits(), strong())
    assert runs[0].text.endswith("a\udcffb")
    checked = check("$ python3.12 -c ...\na\\", "x", "y", runs)
    assert checked.status == "mismatch"
    assert "the prompt is not what Python printed" in checked.message
