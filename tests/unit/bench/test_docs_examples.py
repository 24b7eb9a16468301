"""bench/docs_examples.py: the lines a page shows are taken from a run's output, and written between the page's
markers with the machine they came from; nothing is run here."""

from __future__ import annotations

import pytest

from bench import docs_examples
from bench.child import BenchFailed, REPO

OUTPUT = """ch.2 sets
  pair list-vs-set-reversed: FAIL (list-reversed MISS, set-reversed ok)
    patched list-reversed -> set-reversed: layer 4
    patched set-reversed -> list-reversed: layer 1
  pair other: ok
  pair dict-vs-set-int: FAIL (dict-int ok, set-int MISS)
    patched dict-int -> set-int: layer 5
ch.2 sets: 0/3 pairs
"""
MODEL = {"hardware": "cpu AMD EPYC (avx2 avx512f avx512_bf16; torch AVX512)", "torch_version": "2.13.0+cpu",
         "transformers_version": "5.25.0", "threads": 2, "numerics": "0123456789abcdef"}


def test_the_pairs_lines_in_the_pages_order() -> None:
    assert docs_examples.pair_lines(OUTPUT, ("list-vs-set-reversed", "dict-vs-set-int")) == [
        "  pair list-vs-set-reversed: FAIL (list-reversed MISS, set-reversed ok)",
        "    patched list-reversed -> set-reversed: layer 4", "    patched set-reversed -> list-reversed: layer 1",
        "  pair dict-vs-set-int: FAIL (dict-int ok, set-int MISS)", "    patched dict-int -> set-int: layer 5"]
    with pytest.raises(BenchFailed, match="the output has no line for pair gone"):
        docs_examples.pair_lines(OUTPUT, ("gone",))


def test_the_block_names_the_machine_and_replaces_only_its_own() -> None:
    example = docs_examples.EXAMPLES[0]
    page = (REPO / example.page).read_text(encoding="utf-8")
    new = docs_examples.replace(page, example, docs_examples.block(example, ["  pair x: ok"], MODEL))
    before, after = page.split(docs_examples.START.format(name="patching")), new.split(
        docs_examples.START.format(name="patching"))
    assert before[0] == after[0] and before[1].split(docs_examples.END)[1] == after[1].split(docs_examples.END)[1]
    assert ("on cpu AMD EPYC (avx2 avx512f avx512_bf16; torch AVX512), torch 2.13.0+cpu, transformers 5.25.0, 2 "
            "threads, numerics `0123456789abcdef`") in new
    assert "```\n  pair x: ok\n```\n<!-- end generated -->" in new
    with pytest.raises(BenchFailed, match="has no marker"):
        docs_examples.replace("no markers", example, "")
