"""scoring/tree.py and model/paths.tree_step: a prompt's chains in one call over its KV cache, under a tree mask.

The layout is pure (a trie with shared prefixes and different depths: nodes, parents, positions, the mask as data);
the call is checked on random tiny Llama and Gemma3 models built from a config (real attention and MLP arithmetic,
a sliding layer in Gemma3's), under eager and sdpa attention, against one-token steps on the same cache and against
separate full passes over each context. Measured on the AMD EPYC (AVX-512 BF16) this project runs on, torch 2.13,
transformers 5.25: in bfloat16 every node was bit for bit both, under eager and sdpa alike, with this tree of 9
nodes; under sdpa, trees of 5 and 17 nodes over other prompts differed from both in 1 or 2 ulps of a logit in some
rows (sdpa's kernel takes another path with a mask and several queries), which the bound below allows. In float32
the tree is another order of the same sums: it differed from both by at most 2.6e-7 of a logit (|logits| < 0.6),
bounded here at 1e-6. A model whose attention takes no tree mask keeps its steps, and says so.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from helpers.attention import OWN, own_attention
from helpers.tinymodel import build_tiny_model
from helpers.treemodels import CHAINS, PROMPT, START, random_model

from pytest_gotchas.model import paths
from pytest_gotchas.model.load import ModelSpec, load_model
from pytest_gotchas.report.wording_paths import stepped_line
from pytest_gotchas.results.onepass import Stepped, TextPathOf
from pytest_gotchas.results.vocabulary import TextPath
from pytest_gotchas.scoring.rows import OnePassRows, Rows
from pytest_gotchas.scoring.tree import Ahead, Tree

# -- the layout, pure ----------------------------------------------------------------------------------------------

PREFIX = (2, 40, 41)


def test_a_trie_with_shared_prefixes_and_different_depths() -> None:
    """Each node sees the kept tokens, its ancestors and itself: never a sibling, a cousin or a descendant. A chain's
    ancestors are nodes too (its row needs them in the same call), each once however many chains share it."""
    contexts = [PREFIX + (10, 12, 13), PREFIX + (20,), PREFIX + (10,), PREFIX + (10, 11)]
    tree = Tree.of(contexts, start=3)
    assert tree.tokens == (10, 20, 11, 12, 13)
    assert tree.parents == (-1, -1, 0, 0, 3)
    assert tree.depths == (1, 1, 2, 2, 3)
    assert tree.positions == (3, 3, 4, 4, 5)
    assert tree.contexts == (PREFIX + (10,), PREFIX + (20,), PREFIX + (10, 11), PREFIX + (10, 12),
                             PREFIX + (10, 12, 13))
    T, F = True, False
    assert tree.mask() == [
        [T, T, T, T, F, F, F, F],  # 10
        [T, T, T, F, T, F, F, F],  # 20: not its sibling 10
        [T, T, T, T, F, T, F, F],  # 10 11
        [T, T, T, T, F, F, T, F],  # 10 12: not its cousin 11
        [T, T, T, T, F, F, T, T],  # 10 12 13
    ]
    assert tree.seen(4) == [0, 3, 4]
    assert Tree.of(reversed(contexts), start=3) == tree  # whatever order the contexts came in
    assert len(Tree.of(contexts + contexts, start=3)) == 5


def test_a_tree_can_start_before_the_contexts_diverge() -> None:
    """Cropped further back (a context that diverges earlier, or tokens fed again), the kept prompt's tokens after
    the crop are nodes too, shared by every chain through them."""
    tree = Tree.of([PREFIX + (10,), PREFIX[:2] + (50, 51)], start=2)
    assert tree.tokens == (41, 10, 50, 51)
    assert tree.parents == (-1, 0, -1, 2)
    assert tree.positions == (2, 3, 2, 3)
    assert tree.contexts[0] == PREFIX  # the prompt's own token, a node: its row is the prompt's next-token row


@pytest.mark.parametrize("contexts", [[PREFIX], [PREFIX + (1,), (9, 40, 41, 1)]])
def test_a_context_that_does_not_extend_the_kept_tokens_is_refused(contexts: list[tuple[int, ...]]) -> None:
    with pytest.raises(ValueError, match="every context must extend the same 3 tokens by at least one"):
        Tree.of(contexts, start=3)


class Held:
    """Rows that hold some contexts: p is 0.5 for every token."""

    def __init__(self, *contexts: tuple[int, ...]) -> None:
        self.main: dict[tuple[int, ...], object] = {c: None for c in contexts}

    def p(self, context: tuple[int, ...], token: int, other: bool = False) -> float:
        assert context in self.main
        return 0.5


def test_ahead_notes_what_a_reading_asks_for_and_bounds_what_it_cannot_know_yet() -> None:
    ahead = Ahead(Held(PREFIX), levels=1)
    ahead.need([PREFIX, PREFIX + (10,), PREFIX + (10, 11)])
    assert ahead.wanted == {PREFIX + (10,), PREFIX + (10, 11)}  # the held one is not wanted
    assert ahead.p(PREFIX, 7) == 0.5  # held: its own probability
    assert ahead.p(PREFIX + (10,), 7) == 1.0  # one level past: every chain through it may be followed
    assert ahead.p(PREFIX + (10, 11), 7) == 0.0  # two levels past: none is, yet
    assert Ahead(Held(PREFIX), levels=0).p(PREFIX + (10,), 7) == 0.0
    assert (ahead.total(PREFIX, [7]), ahead.largest(PREFIX, [7], 3)) == (0.0, [])


# -- the call, on tiny models from a config --------------------------------------------------------------------------


def logits_three_ways(model: torch.nn.Module) -> tuple[Tree, torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
    """The tree's rows, and each node's row from a one-token step chain and from a separate full pass."""
    tree = Tree.of([PROMPT[:START] + chain for chain in CHAINS], START)
    with torch.inference_mode():
        cache = paths.cache_of(model(input_ids=torch.tensor([PROMPT]), use_cache=True, logits_to_keep=1))
    arg = paths.cache_arg(model)
    rows = paths.tree_step(model, cache, len(PROMPT), START, list(tree.tokens), list(tree.positions), tree.mask(), arg)
    steps, fulls = [], []
    for context in tree.contexts:
        steps.append(paths.step(model, cache, len(PROMPT), START, list(context[START:]), arg)[0])
        with torch.inference_mode():
            fulls.append(model(input_ids=torch.tensor([context]), logits_to_keep=1, use_cache=False).logits[0, -1])
    return tree, rows, steps, fulls


def ulp(row: torch.Tensor) -> float:
    """bfloat16's spacing at the row's largest logit (8 significant bits)."""
    return 2.0 ** (math.floor(math.log2(row.float().abs().max().item())) - 7)


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_in_bfloat16_the_tree_is_the_steps_and_the_separate_passes(kind: str, attention: str) -> None:
    model = random_model(kind, attention, torch.bfloat16)
    assert paths.takes_tree(model)
    tree, rows, steps, fulls = logits_three_ways(model)
    assert rows.shape == (len(tree), 128) and len(tree) == 9
    for n in range(len(tree)):
        for other in (steps[n], fulls[n]):
            if attention == "eager":
                assert torch.equal(rows[n], other), tree.contexts[n]
            else:  # bit for bit here too; elsewhere 1 or 2 ulps (the module's docstring)
                assert (rows[n].float() - other.float()).abs().max().item() <= 2 * ulp(other), tree.contexts[n]


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_in_float32_the_tree_differs_in_the_last_bits_only(kind: str, attention: str) -> None:
    tree, rows, steps, fulls = logits_three_ways(random_model(kind, attention, torch.float32))
    differ = max((rows[n] - other).abs().max().item() for n in range(len(tree)) for other in (steps[n], fulls[n]))
    assert 0 < differ <= 1e-6  # 2.6e-7 at most when measured
    # a node that attended to its siblings would be off by far more than that
    flat = paths.tree_step(*_unmasked(random_model(kind, attention, torch.float32), tree))
    assert (flat[1:] - rows[1:]).abs().max().item() > 1e-3


def _unmasked(model: torch.nn.Module, tree: Tree) -> tuple:
    with torch.inference_mode():
        cache = paths.cache_of(model(input_ids=torch.tensor([PROMPT]), use_cache=True, logits_to_keep=1))
    everything = [[True] * (START + len(tree))] * len(tree)
    return (model, cache, len(PROMPT), START, list(tree.tokens), list(tree.positions), everything,
            paths.cache_arg(model))


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_the_rows_of_a_tree_are_computed_in_one_call(attention: str) -> None:
    """OnePassRows on a model that takes a tree: one call for the contexts one `need` asks for on one cache, each row
    (both softmax dtypes) the separate pass's in bfloat16 here."""
    model = random_model("llama", attention, torch.bfloat16)
    rows = OnePassRows(model, "bfloat16", 1, 5)
    assert rows.tree
    rows.need([PROMPT])
    wanted = [PROMPT[:START] + chain for chain in CHAINS]
    rows.need(wanted)
    assert (rows.full, rows.tree_calls, rows.tree_contexts, rows.steps, rows.step_tokens) == (1, 1, 9, 9, 9)
    separate = Rows(model, "bfloat16", 1, 5)
    separate.need(wanted)
    for context in wanted:
        assert torch.equal(rows.main[context], separate.main[context])
        assert torch.equal(rows.other[context], separate.other[context])


# -- a model that takes no tree mask ---------------------------------------------------------------------------------


def test_an_attention_that_takes_no_tree_mask_keeps_the_steps_and_says_so(tmp_path: Path) -> None:
    """An attention implementation of the user's own: the plugin cannot know what it does with a mask."""
    folder = build_tiny_model(tmp_path / "model", {"a": {"b": 1.0}})
    loaded = load_model(ModelSpec(name=str(folder), device="cpu"), tmp_path / "cache")
    assert (loaded.info.text_path, loaded.info.attention) == (TextPath.TREE, "sdpa")
    model = own_attention(random_model("llama", "sdpa", torch.bfloat16))
    assert (paths.attention(model), paths.takes_tree(model)) == (OWN, False)
    rows = OnePassRows(model, "bfloat16", 1, 5)
    rows.need([PROMPT])
    wanted = [PROMPT[:START] + chain for chain in CHAINS]
    rows.need(wanted)
    assert (rows.tree_calls, rows.tree_contexts, rows.steps) == (0, 0, len(wanted))
    stepping = Stepped(1, 1, 6, 1, [TextPathOf("tiny", TextPath.STEPS, OWN)])
    assert stepped_line(stepping) == (
        "one pass per prompt: 1 full forward passes for 1 runs; 6 text-reading contexts in 1 runs read as incremental "
        f"steps on a pass's KV cache (its attention, {OWN}, takes no tree mask), which can differ from separate "
        "passes in their last bits (--gotchas-one-pass-check lists what differs)")


def test_the_line_names_the_tree_and_each_models_way() -> None:
    tree = TextPathOf("gemma", TextPath.TREE, "sdpa")
    assert stepped_line(Stepped(3, 2, 4, 1, [tree])) == (
        "one pass per prompt: 3 full forward passes for 2 runs; 4 text-reading contexts in 1 runs read as one tree "
        "per prompt on its pass's KV cache (every chain in one call, a tree attention mask), which can differ from "
        "separate passes in their last bits (--gotchas-one-pass-check lists what differs)")
    both = stepped_line(Stepped(3, 2, 4, 2, [tree, TextPathOf("own", TextPath.STEPS, OWN)]))
    assert ("read gemma: as one tree per prompt on its pass's KV cache (every chain in one call, a tree attention "
            f"mask); own: as incremental steps on a pass's KV cache (its attention, {OWN}, takes no tree mask), "
            "which") in both
