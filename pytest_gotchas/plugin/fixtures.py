"""The fixtures: the model under test (session scope, one per model), and a probe for users' own Python tests
(plugin/probe.py). Registered on every run; they build the plugin's state only when a test asks for them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from .state import ensure

if TYPE_CHECKING:
    from ..scoring.scorer import Scorer
    from .probe import Probe


@pytest.fixture(scope="session")
def gotchas_model(request: pytest.FixtureRequest) -> Iterator[Scorer]:
    """The model under test, loaded on first use and released at the end of its session (with several
    --gotchas-model, one instance per model, in sequence: one model in memory at a time).

    `.slot.get()` is the loaded model (`.model`, the transformers model; `.tokenizer`); `.score(planned)` scores a
    planned case. Chapter items and the `gotchas` fixture use it; a test rarely needs it directly.
    """
    gotchas = ensure(request.config)
    scorer = gotchas.scorer(getattr(request, "param", gotchas.model_ids[0]))
    yield scorer
    scorer.slot.release()


@pytest.fixture
def gotchas(request: pytest.FixtureRequest, gotchas_model: Scorer) -> Probe:
    """Probe the model from a Python test: `gotchas.case(transcript, correct, wrong, id=..., chapter=...,
    pair=...)` or `gotchas.new(snippet, wrong, ...)` return the CaseResult a YAML case would give (`.verdict`,
    `.runs[0].p_correct` ...); `gotchas.record(result)` puts it in the report's tables, JSON, page and baseline.
    Asserting on it is the test's own choice: `assert result.verdict == "ok"`."""
    from .probe import Probe

    return Probe(request, gotchas_model)
