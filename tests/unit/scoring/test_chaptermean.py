"""scoring/chaptermean.py and the mean corruption of pairedges.py: the chapter's mean write, counted back from the
cut over prompts of different lengths, equals a mean computed apart from the product code (numpy, from the model's
own modules' outputs); a circuit whose logits read the mean gives the logits of the chapter's mean final stream; and
with the mean the scores and the exact top edges stay the pair's, only the curve moves."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from pytest_gotchas.results.vocabulary import EdgeCorruption  # noqa: E402
from pytest_gotchas.scoring.align import align  # noqa: E402
from pytest_gotchas.scoring.chaptermean import KEPT, chapter_mean  # noqa: E402
from pytest_gotchas.scoring.circuits import run_spans  # noqa: E402
from pytest_gotchas.scoring.edgegraph import graph_of, member_writes  # noqa: E402
from pytest_gotchas.scoring.pairedges import EdgeConfig, edge_entry  # noqa: E402
from pytest_gotchas.scoring.patching import _metric, member_pass  # noqa: E402

from helpers.tinycomponents import component_model  # noqa: E402
from helpers.tinypatch import BOS, EQ, NO, YES, A, B, X, Y, Z  # noqa: E402
from helpers.tinypatch import C as TC  # noqa: E402
from helpers.tinypatch import D as TD  # noqa: E402

SOURCE = (BOS, TC, X, A, Y, Z, EQ)
TARGET = (BOS, TD, X, B, Y, Z, EQ)
# A chapter of prompts of four lengths (4 to 10 tokens), the pair's two members among them.
CHAPTER = (SOURCE, (BOS, A, Z, EQ), TARGET, (BOS, X, TC, Y, X, B, Y, Z, A, EQ), (BOS, TD, B, X, EQ))
IDS = (NO, YES)


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=16, hidden_size=32, intermediate_size=48, num_attention_heads=4,
                         num_key_value_heads=2, max_position_embeddings=64, num_hidden_layers=2,
                         tie_word_embeddings=False)
    return LlamaForCausalLM(config).eval()


MODELS = {"tiny": lambda: component_model().float(), "random": llama}


def outputs(model, ids):
    """Reference writes of one prompt, read from the modules' outputs by plain hooks (float64 numpy, [positions,
    hidden]): the embeddings, each MLP's output, and the final norm's input (the residual stream the logits read)."""
    got: dict[str, np.ndarray] = {}
    keep = lambda name: lambda m, a, out: got.__setitem__(name, out[0].double().numpy())  # noqa: E731
    handles = [model.model.embed_tokens.register_forward_hook(keep("embed"))]
    handles += [layer.mlp.register_forward_hook(keep(f"mlp{n}")) for n, layer in enumerate(model.model.layers, 1)]
    handles.append(model.model.norm.register_forward_pre_hook(
        lambda m, args: got.__setitem__("stream", args[0][0].double().numpy())))
    with torch.no_grad():
        model(input_ids=torch.tensor([list(ids)]), use_cache=False)
    for handle in handles:
        handle.remove()
    return got


def reference_mean(model, name):
    """[longest, hidden]: row d the mean over the prompts with more than d tokens of their write d before the end."""
    longest = max(len(ids) for ids in CHAPTER)
    total, count = np.zeros((longest, model.config.hidden_size)), np.zeros(longest)
    for ids in CHAPTER:
        write = outputs(model, ids)[name]
        for d in range(len(ids)):
            total[d] += write[len(ids) - 1 - d]
            count[d] += 1
    return total / count[:, None]


@pytest.mark.parametrize("kind", list(MODELS))
def test_the_chapter_mean_is_each_nodes_write_averaged_back_from_the_cut(kind: str) -> None:
    model = MODELS[kind]()
    graph = graph_of(model, align(SOURCE, TARGET).pairs)
    kept: dict = {}
    mean = chapter_mean(model, graph, CHAPTER, kept)
    assert mean.prompts == 5 and mean.count == (5, 5, 5, 5, 4, 3, 3, 1, 1, 1)  # lengths 7, 4, 7, 10, 5
    for name, node in (("embed", 0), ("mlp1", graph.mlp_node(1)), ("mlp2", graph.mlp_node(2))):
        np.testing.assert_allclose(mean.nodes[:, node].double().numpy(), reference_mean(model, name), atol=1e-6)
    assert chapter_mean(model, graph, CHAPTER, kept) is mean  # once per process
    # The target's aligned positions read the rows their distance back from its cut names.
    at = mean.at([t for _, t in graph.positions], len(TARGET))
    back = [len(TARGET) - 1 - t for _, t in graph.positions]
    assert torch.equal(at.nodes[0], mean.nodes[back]) and at.nodes.shape[:2] == (1, len(graph.positions))


def rms(x, weight, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


@pytest.mark.parametrize("kind", list(MODELS))
def test_logits_reading_the_mean_give_the_chapter_means_final_stream(kind: str) -> None:
    """Every edge into the logits reads the mean: the logits then read the mean of the chapter's final streams at
    the cut (the stream is the sum of the nodes' writes), through the final norm and the head."""
    model = MODELS[kind]()
    graph = graph_of(model, align(SOURCE, TARGET).pairs)
    mean = chapter_mean(model, graph, CHAPTER, {})
    ranks = torch.full((len(graph.positions), graph.inputs, graph.nodes), graph.nodes + 1)
    ranks[-1, graph.inputs - 1] = torch.arange(graph.nodes)  # only the logits' edges at the cut are in a span
    (reading,), _ = run_spans(model, graph, ranks, [(0, graph.nodes)],
                              mean.at([t for _, t in graph.positions], len(TARGET)), TARGET, IDS)
    stream = np.mean([outputs(model, ids)["stream"][-1] for ids in CHAPTER], axis=0)
    norm, head = model.model.norm, model.lm_head.weight.detach().double().numpy()
    weight = norm.weight.detach().double().numpy()
    logits = head @ rms(stream, weight, norm.variance_epsilon)
    assert _metric(reading) == pytest.approx(logits[IDS[0]] - logits[IDS[1]], rel=1e-5, abs=1e-5)
    own = outputs(model, TARGET)["stream"][-1]  # and it is not the target's own reading
    mine = head @ rms(own, weight, norm.variance_epsilon)
    assert abs((mine[IDS[0]] - mine[IDS[1]]) - _metric(reading)) > 1e-3


def entry(model, corrupt):
    cache: dict = {}

    def writes_of(token_ids, graph):
        if token_ids not in cache:
            cache[token_ids] = member_writes(model, graph, token_ids)
        return cache[token_ids]

    kept: dict = {}
    mean = None if corrupt is None else (lambda graph: chapter_mean(model, graph, CHAPTER, kept))
    return edge_entry(model, member_pass(model, SOURCE), member_pass(model, TARGET), IDS, EdgeConfig(k=4),
                      writes_of, False, mean)


def test_the_mean_moves_the_curve_and_keeps_the_pairs_scores_and_exact_edges() -> None:
    model = component_model()
    partner, mean = entry(model, None), entry(model, EdgeCorruption.MEAN)
    assert (partner.corrupt, partner.mean_of) == (EdgeCorruption.PARTNER, 0)
    assert (mean.corrupt, mean.mean_of) == (EdgeCorruption.MEAN, 5)
    assert mean.top == partner.top and mean.verified == partner.verified == 4
    assert mean.unpatched == partner.unpatched and mean.source_value == partner.source_value
    assert partner.empty == partner.source_value and mean.empty != partner.empty  # the mean is not the source
    assert [p.edges for p in mean.curve] == [p.edges for p in partner.curve]
    assert mean.curve[-1].metric == mean.unpatched  # the full circuit is the model, whatever the others read
    assert mean.faithfulness[-1] == 1.0


def test_a_process_keeps_the_last_few_means() -> None:
    model = component_model()
    graph = graph_of(model, align(SOURCE, TARGET).pairs)
    kept: dict = {}
    chapters = [CHAPTER[:n] for n in range(1, KEPT + 2)]
    means = [chapter_mean(model, graph, chapter, kept) for chapter in chapters]
    assert list(kept) == chapters[1:] and [m.prompts for m in means] == list(range(1, KEPT + 2))
    assert chapter_mean(model, graph, chapters[-1], kept) is means[-1]
