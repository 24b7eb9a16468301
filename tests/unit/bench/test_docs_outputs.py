"""bench/docs.py: docs/cases.md's `gotchas new` sample is what the command prints. Every line but the model's is
checked here against the command run now without a model (the model's lines are regenerated with the embedded
model by `python -m bench.docs`); the block is found and replaced whole."""

from __future__ import annotations

import re
from pathlib import Path

from bench import docs


def model_free(block: str) -> str:
    """The sample without the model's part (from "loading model" to the blank line before the case)."""
    return re.sub(r"\nloading model .*?\n\n", "\n", block, flags=re.S)


def test_the_documented_sample_is_what_gotchas_new_prints(tmp_path: Path, py311) -> None:
    args = [arg for arg in docs.COMMAND]
    at = args.index("--model")
    del args[at:at + 2]
    printed = docs.sample(docs.run_new(args, tmp_path), args)
    documented = docs.SAMPLE.findall(docs.CASES_MD.read_text(encoding="utf-8"))
    assert len(documented) == 1
    version = re.compile(r"^python \S+ ", re.M)  # the interpreter's patch version is the machine's
    assert version.sub("python X ", model_free(documented[0])) == version.sub(
        "python X ", printed.replace(docs.shown_command(args), docs.shown_command(docs.COMMAND)))


def test_paths_are_shortened_and_the_block_replaced_whole() -> None:
    assert docs.without_paths("python 3.11.7 (/opt/py/bin/python3.11); no variables set\nx (/a/b)\n") == (
        "python 3.11.7 (.../python3.11); no variables set\nx (/a/b)\n")
    doc = "intro\n\n```\n$ cat late.py\nold\n```\n\nafter\n"
    assert docs.with_sample(doc, "```\n$ cat late.py\nnew\n```\n") == "intro\n\n```\n$ cat late.py\nnew\n```\n\nafter\n"
