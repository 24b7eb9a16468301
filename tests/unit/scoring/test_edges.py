"""scoring/edges.py, circuits.py and pairedges.py: EAP-IG finds the path a tiny model was built to use (and both
halves of a path split over two edges), the circuit of that path is faithful, exact edge patching agrees with the
component grid where the two measure the same thing, and the runs' checks hold on random Gemma 3 and Llama models.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from pytest_gotchas.results.vocabulary import EdgeInput, EdgeNode  # noqa: E402
from pytest_gotchas.scoring import components as C  # noqa: E402
from pytest_gotchas.scoring.circuits import run_spans  # noqa: E402
from pytest_gotchas.scoring.edgegraph import graph_of, member_writes  # noqa: E402
from pytest_gotchas.scoring.pairedges import EdgeConfig, _aligned, edge_entry  # noqa: E402
from pytest_gotchas.scoring.patching import _metric, member_pass  # noqa: E402
from pytest_gotchas.scoring.align import align  # noqa: E402

from helpers.tinycomponents import component_model, split_model  # noqa: E402
from helpers.tinypatch import BOS, EQ, NO, YES, A, B, X, Y, Z  # noqa: E402
from helpers.tinypatch import C as TC  # noqa: E402
from helpers.tinypatch import D as TD  # noqa: E402

SOURCE = (BOS, TC, X, A, Y, Z, EQ)  # answers YES
TARGET = (BOS, TD, X, B, Y, Z, EQ)  # answers NO
IDS = (NO, YES)
KEY, CUT = 2, 5  # the KEY token's and the cut's index among the aligned positions (1..6 of the target)


def entry(model, source=SOURCE, target=TARGET, ids=IDS, under=False, **config):
    cache: dict = {}

    def writes_of(token_ids, graph):
        if token_ids not in cache:
            cache[token_ids] = member_writes(model, graph, token_ids)
        return cache[token_ids]

    return edge_entry(model, member_pass(model, source), member_pass(model, target), ids, EdgeConfig(**config),
                      writes_of, under)


def named(edge):
    return (edge.node, edge.layer, edge.head, edge.reads, edge.reads_layer, edge.reads_head, edge.position)


EMBED_TO_VALUE = (EdgeNode.EMBED, 0, 0, EdgeInput.VALUE, 1, 0, KEY)
HEAD_TO_MLP = (EdgeNode.HEAD, 1, 0, EdgeInput.MLP, 2, 0, CUT)
OTHER_HEAD_TO_MLP = (EdgeNode.HEAD, 1, 1, EdgeInput.MLP, 2, 0, CUT)
MLP_TO_LOGITS = (EdgeNode.MLP, 2, 0, EdgeInput.LOGITS, 3, 0, CUT)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    torch.set_num_threads(1)


def test_eap_ig_finds_the_one_path_and_its_circuit_is_faithful() -> None:
    found = entry(component_model())
    effect = found.source_value - found.unpatched
    assert found.unpatched > 0 > found.source_value and found.empty == found.source_value
    # The answer goes one way: the KEY token's embedding into the shared value head of layer 1, head 1.0's output
    # at the cut into MLP 2's input, MLP 2's write into the logits. Those are the three top edges, each carrying the
    # whole effect when it alone reads the source.
    assert {named(e) for e in found.top[:3]} == {EMBED_TO_VALUE, HEAD_TO_MLP, MLP_TO_LOGITS}
    assert [e.exact for e in found.top[:3]] == [effect] * 3
    assert all(abs(e.exact) < abs(effect) * 1e-3 for e in found.top[3:])
    by_size = {p.edges: (f, c) for p, f, c in zip(found.curve, found.faithfulness, found.complement_faithfulness)}
    assert by_size[3] == (1.0, 0.0)  # the path alone is the model; the rest of the graph alone carries nothing
    assert by_size[1][0] == by_size[2][0] == 0.0  # a path cut anywhere carries nothing
    assert found.faithfulness[-1] == 1.0 and found.count == found.curve[-1].edges


def test_eap_alone_misses_an_edge_eap_ig_finds() -> None:
    """At the target's own pass the value edge's gradient is 0 (MLP 2's saturating input): EAP scores it 0, the
    integrated gradient does not."""
    found = entry(component_model())
    value = next(e for e in found.top if named(e) == EMBED_TO_VALUE)
    assert value.eap == 0.0 and abs(value.eap_ig) > 0.5 * abs(value.exact)


def test_a_path_split_over_two_edges_finds_both() -> None:
    found = entry(split_model())
    effect = found.source_value - found.unpatched
    top = {named(e): e for e in found.top[:4]}
    assert set(top) == {EMBED_TO_VALUE, HEAD_TO_MLP, OTHER_HEAD_TO_MLP, MLP_TO_LOGITS}
    for half in (HEAD_TO_MLP, OTHER_HEAD_TO_MLP):  # either head alone from the source leaves the flags tied
        assert 0 < top[half].exact / effect < 1
    by_size = {p.edges: f for p, f in zip(found.curve, found.faithfulness)}
    assert by_size[4] == 1.0 and by_size[3] < 1.0


def test_steps_are_a_setting_and_more_of_them_move_the_estimate() -> None:
    few, many = entry(component_model(), steps=1), entry(component_model(), steps=20)
    assert (few.steps, many.steps) == (1, 20)
    assert few.backward_passes == 1 and many.backward_passes == 3  # 21 rows in chunks of 8
    first = lambda found: next(e.eap_ig for e in found.top if named(e) == HEAD_TO_MLP)  # noqa: E731
    assert first(few) != first(many)


def _node_span(model, source, target, node, position):
    """Ranks that put every edge out of ``node`` at aligned ``position`` first, and their span."""
    graph = graph_of(model, align(source, target).pairs)
    exists = graph.exists()
    count = int(exists.sum())
    ranks = torch.full(exists.shape, count, dtype=torch.int64)
    chosen = exists.clone()
    chosen[:, :, :] = False
    chosen[position, :, node] = exists[position, :, node]
    ranks[exists & ~chosen] = count - 1  # inside the graph, outside the span
    ranks[chosen] = 0
    return graph, ranks, [(0, 1)]


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_every_edge_out_of_a_node_is_the_component_patch(kind: str) -> None:
    """Corrupting every edge out of a head at a position is patching that head's output there (under Gemma's
    post-norm too: each reader recomputes the post-norm with the head's slice replaced), as components.py does."""
    model, source, target = (component_model(), SOURCE, TARGET) if kind == "llama" else random_model(kind)
    grid = C.patch_components(model, C.component_pass(model, source), C.component_pass(model, target), IDS,
                              metric="float32")
    heads = grid.heads
    for layer in grid.layers:
        for head in range(heads):
            for position in (KEY, CUT):
                graph, ranks, spans = _node_span(model, source, target, 1 + (layer - 1) * (heads + 1) + head,
                                                 position)
                source_writes = _aligned(graph, member_writes(model, graph, source), 0)
                (reading,), _ = run_spans(model, graph, ranks, spans, source_writes, target, IDS)
                exact = grid.head[layer - 1][head][position]
                # bfloat16 rounds stream + change once where the model adds the head's write in its own order
                assert _metric(reading) == (exact if kind == "llama" else pytest.approx(exact, abs=0.005))


def random_model(kind: str):
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig, LlamaConfig, LlamaForCausalLM

    small = dict(vocab_size=300, hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                 max_position_embeddings=128, num_hidden_layers=3, tie_word_embeddings=False)
    torch.manual_seed(0)
    if kind == "gemma3":
        model = Gemma3ForCausalLM(Gemma3TextConfig(**small, head_dim=16, sliding_window=4))
    else:
        model = LlamaForCausalLM(LlamaConfig(**small))
    return model.to(torch.bfloat16).eval(), (2, 17, 40, 41, 42, 43, 99), (2, 18, 40, 41, 77, 43, 98)


@pytest.mark.parametrize("kind", ["gemma3", "llama"])
def test_random_models_keep_the_checks_and_a_batch_equals_a_pass_per_row(kind: str) -> None:
    model, source, target = random_model(kind)
    found = entry(model, source, target, ids=(5, 6))
    assert found.batched and found.verified == 10 and len(found.top) == 10
    assert found.count == int(graph_of(model, align(source, target).pairs).exists().sum())
    assert found.empty == pytest.approx(found.source_value, abs=0.01)  # every aligned edge from the source
    assert (found.head_gap is not None) == (kind == "gemma3")
    if kind == "gemma3":
        assert found.head_gap > 0  # under the post-norm, single heads' changes do not add up to the layer's
    graph = graph_of(model, align(source, target).pairs)
    from pytest_gotchas.scoring.edges import ranking, scores
    from pytest_gotchas.scoring.edgegraph import deltas

    mine, yours = member_writes(model, graph, source), member_writes(model, graph, target)
    ranks = ranking(scores(model, graph, (5, 6), target, mine, yours, deltas(model, graph, mine, yours)[0], 2))
    spans = [(0, 3), (2, 9), (5, 6), (found.count, found.count)]
    aligned = _aligned(graph, mine, 0)
    assert run_spans(model, graph, ranks, spans, aligned, target, (5, 6))[0] == \
        run_spans(model, graph, ranks, spans, aligned, target, (5, 6), batched=False)[0]


def test_unequal_lengths_read_edges_at_aligned_positions_only() -> None:
    found = entry(component_model(), source=(BOS, TC, TC, X, A, Y, Z, EQ))
    assert {named(e)[:6] for e in found.top[:3]} == {p[:6] for p in (EMBED_TO_VALUE, HEAD_TO_MLP, MLP_TO_LOGITS)}
    assert max(e.position for e in found.top) == 4  # five aligned pairs: (3, 2) .. (7, 6)


def test_a_direction_under_the_floor_is_not_ranked() -> None:
    found = entry(component_model(), under=True)
    assert found.under_floor and found.top == [] and found.curve == [] and found.empty is None
    assert found.faithfulness == [] and found.cpr is None and found.forward_passes == 0
