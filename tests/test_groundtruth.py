"""groundtruth.py, pure: a prompt is checked against what Python printed, run by run; and `gotchas new`, which
checks a new case in far more runs than collection before it writes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_gotchas.cli import main
from pytest_gotchas.cli.new import AUTHORING_RUNS
from pytest_gotchas.truth.execute import Run

PROMPT = ">>> 1 + 1\n"


def runs(*texts: str, returncode: int = 0, timed_out: bool = False) -> tuple[Run, ...]:
    return tuple(Run(text=t, seed=str(n), returncode=returncode, timed_out=timed_out)
                 for n, t in enumerate(texts, start=1))


def pinned(*texts: str) -> tuple[Run, ...]:
    return tuple(Run(text=t, seed="0", returncode=0, timed_out=False) for t in texts)


COIN = ">>> import random; random.random() < 0.5\n"


# -- authoring: `gotchas new` runs the case far more often than collection does ---------------------------------------


def authored(tmp_path: Path, capsys: pytest.CaptureFixture[str], snippet: str, *args: str) -> tuple[int, str, str]:
    path = tmp_path / "snippet.py"
    path.write_text(snippet)
    code = main(["new", str(path), "--interpreter", "3.12", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_authoring_refuses_a_coin_flip(tmp_path: Path, capsys: pytest.CaptureFixture[str], py312) -> None:
    # Collection's 3 runs let a fair coin through once in 4; 20 runs, once in 2**19.
    code, _, err = authored(tmp_path, capsys, "import random; random.random() < 0.5\n", "--wrong", "maybe")
    assert code == 1
    assert err.startswith(("gotchas new: error: collection would refuse this case, no case was printed:\n",
                           "gotchas new: error: the case does not hold in every run, no case was printed: in 20 runs "
                           "(PYTHONHASHSEED=1..20; --authoring-runs), the answer changes between runs: "))
    # Not the hash seed: run again under one seed, it still varies.
    assert err.endswith("\n(it changes under one hash seed too, PYTHONHASHSEED=0: it depends on something else, "
                        "such as time or randomness; make the snippet deterministic)\n")


def test_authoring_refuses_a_coin_flip_under_a_pinned_seed(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         py312) -> None:
    code, _, err = authored(tmp_path, capsys, "import random; random.random() < 0.5\n", "--wrong", "maybe",
                            "--env", "PYTHONHASHSEED=0")
    assert code == 1
    assert "the answer changes between runs under the same PYTHONHASHSEED=0, so something else varies" in err


def test_authoring_catches_what_three_runs_let_through(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       py312) -> None:
    # True under seeds 1-9, the three that collection uses; False from seed 10 on: only the authoring runs see it.
    snippet = "import os; int(os.environ['PYTHONHASHSEED']) < 10\n"
    code, out, err = authored(tmp_path, capsys, snippet, "--wrong", "maybe")
    assert code == 1 and out.endswith("  wrong   'maybe'      the misreading  'maybe\\n'\n")
    assert err == (
        "gotchas new: error: the case does not hold in every run, no case was printed: in 20 runs "
        "(PYTHONHASHSEED=1..20; --authoring-runs), the answer changes between runs: it holds under PYTHONHASHSEED=1 "
        "but not under PYTHONHASHSEED=10: `correct` 'True' is not what Python prints at the cut; it prints "
        "'False\\n'\n"
        "  at line 2 of the transcript, after \"viron['PYTHONHASHSEED']) < 10\\n\":\n"
        "    transcript: 'True'\n"
        "    python:     'False\\n'\n"
        "(the output changes with the hash seed: pin it with --env PYTHONHASHSEED=0)\n")
    # Fewer authoring runs, down to collection's own, let it through: that is what the option is for.
    code, out, _ = authored(tmp_path, capsys, snippet, "--wrong", "maybe", "--authoring-runs", "9")
    assert code == 0 and "the cut held in all 9 runs (PYTHONHASHSEED=1..9; --authoring-runs)\n" in out


def test_authoring_runs_default_and_validation(tmp_path: Path, capsys: pytest.CaptureFixture[str], py312) -> None:
    assert AUTHORING_RUNS == 20
    code, out, _ = authored(tmp_path, capsys, "sorted({3, 1, 2})\n", "--wrong", "{1, 2, 3}")
    assert code == 0 and "the cut held in all 20 runs (PYTHONHASHSEED=1..20; --authoring-runs)\n" in out
    code, out, _ = authored(tmp_path, capsys, "sorted({3, 1, 2})\n", "--wrong", "{1, 2, 3}",
                            "--env", "PYTHONHASHSEED=0", "--authoring-runs", "5")
    assert code == 0 and "the cut held in all 5 runs (PYTHONHASHSEED=0; --authoring-runs)\n" in out
    with pytest.raises(SystemExit):
        authored(tmp_path, capsys, "1\n", "--wrong", "2", "--authoring-runs", "1")
    assert capsys.readouterr().err.splitlines()[-1] == ("gotchas new: error: argument --authoring-runs: must be at "
                                                        "least 2, got 1")
