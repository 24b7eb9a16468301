"""The lens checked against the model itself: the logits the model gives at the last position, the lens's last
layer equal to them bit for bit, and random contexts to read."""

from __future__ import annotations

import torch

from pytest_gotchas.scoring.lens import layer_logits


def model_logits(model, contexts, **kwargs) -> torch.Tensor:
    """Exactly what score.py reads: [contexts, vocab]."""
    with torch.inference_mode():
        return model(input_ids=torch.tensor(contexts), logits_to_keep=1, use_cache=False, **kwargs).logits[:, -1, :]


def assert_last_layer_is_the_models(model, contexts) -> dict:
    """The lens's last layer equals the model's own logits bit for bit, recomputed (exact) and not just copied."""
    read = layer_logits(model, contexts, embeddings=True)
    plain = model_logits(model, contexts)
    # Asking for the hidden states does not change the logits.
    assert torch.equal(model_logits(model, contexts, output_hidden_states=True), plain)
    for n, context in enumerate(contexts):
        assert read[context].exact
        assert read[context].logits.dtype == plain.dtype
        assert torch.equal(read[context].at(read[context].last_layer), plain[n])
    return read


def random_contexts(vocab: int, count: int = 3, length: int = 12, seed: int = 0) -> list[tuple[int, ...]]:
    generator = torch.Generator().manual_seed(seed)
    return [tuple(torch.randint(0, vocab, (length,), generator=generator).tolist()) for _ in range(count)]
