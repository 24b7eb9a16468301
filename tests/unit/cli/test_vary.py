"""`gotchas vary`, in-process: the kinds of rewriting it tries, and its refusals: a shell case, an unknown kind,
and a rewriting that changes what the program prints (no variant). tests/plugin/test_variants.py collects and
scores the variants it writes."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_vary_refuses_a_shell_case(tmp_path: Path, capsys) -> None:
    from pytest_gotchas.cli import main

    chapter = tmp_path / "demo.yaml"
    chapter.write_text('chapter: demo\ntitle: demo\ncases:\n  - id: sh\n    transcript: |-\n      $ python3.12 -c '
                       '"print(1)"\n      █\n    correct: "1"\n    wrong: "2"\n')
    assert main(["vary", str(chapter), "--id", "sh"]) == 1
    assert capsys.readouterr().err == (f"gotchas vary: error: {chapter}:4: case 'sh': only scored REPL cases can be "
                                       "varied (a shell case's program is one quoted argument)\n")


def test_vary_tries_only_the_kinds_asked_for(capsys) -> None:
    from pytest_gotchas.cli import main
    from pytest_gotchas.cli.rewrite import rewrites

    lines = ("xs = [7, 2]", "xs")
    assert [r.id for r in rewrites(lines, 12, ("rename", "parenthesized"))] == [
        "rename-ys", "rename-items", "rename-data", "rename-p", "parenthesized"]
    with pytest.raises(SystemExit):
        main(["vary", "demo.yaml", "--id", "named", "--kinds", "rename,digits"])
    assert "--kinds: unknown kind(s) digits; choose from rename, integers, unrelated, strings, parenthesized, import" \
        in capsys.readouterr().err


def test_a_rename_that_changes_what_the_program_prints_is_not_a_variant(tmp_path: Path, capsys, py312) -> None:
    """Renaming xs changes what globals().get("xs") finds: the cut would still verify, on another question."""
    from pytest_gotchas.cli import main

    chapter = tmp_path / "demo.yaml"
    chapter.write_text('chapter: demo\ntitle: demo\ninterpreter: "3.12"\ncases:\n  - id: g\n    transcript: |-\n'
                       '      >>> xs = 7\n      >>> globals().get("xs", 0)\n      █\n    correct: "7"\n    wrong: "8"\n')
    assert main(["vary", str(chapter), "--id", "g", "-n", "1", "--kinds", "rename"]) == 1
    captured = capsys.readouterr()
    assert "  rename-ys: skipped: it prints '0\\n', not what the case prints rewritten alike ('7'...): the rewriting " \
           "changed the program\n" in captured.out
    assert captured.err == "gotchas vary: error: no variant of 'g' verifies; nothing was written\n"
