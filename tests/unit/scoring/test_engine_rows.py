"""scoring/engine_rows.py without vLLM: an engine stand-in (a backends/protocol.ContextLogits) that computes each
context's logits row with a separate full pass of a tiny transformers model, as an engine without prefix caching
computes each prompt. The engine rows read
exactly the contexts the one-pass transformers path decides, each once, in as few engine calls as the readings allow
(one, then one per level of the text reading's chains), and their readings are the separate passes' bit for bit.
Through a real engine: tests/e2e/test_vllm.py."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch
from helpers.tinymodel import DEFAULT_MERGES, build_tiny_model

from pytest_gotchas.backends.protocol import Role
from pytest_gotchas.backends.transformers import TransformersBackend
from pytest_gotchas.model.load import LoadedModel, ModelSpec, load_model
from pytest_gotchas.scoring.cut import plan_cut
from pytest_gotchas.scoring.readings import Cut, score_batch
from pytest_gotchas.scoring.rows import OnePassRows
from pytest_gotchas.scoring.engine_rows import EngineRows, Fetcher, NotFetched, one_pass_contexts, prefetch, rows_of
from pytest_gotchas.scoring.vocab import build
from pytest_gotchas.results.vocabulary import ReadingName

MERGES = (*DEFAULT_MERGES, "Tr", "Tru", "True", "Fa", "Fal", "Fals", "False")
RULES = {
    " ": {"1": 3.0, "2": 1.0, "3": 0.5},
    "2": {"),": 1.0, ")]": 2.0, ")": 0.5},
    "{": {"'": 1.0, "'.": 0.5},
    "'": {"k": 3.0, "v": 1.0},
    "\n": {"True": 2.0, "T": 1.0, "Tr": 0.5, "False": 1.5, "F": 1.0, "Fa": 0.5},
    "T": {"r": 2.0, "Tr": 0.5}, "Tr": {"u": 2.0}, "Tru": {"e": 2.0}, "r": {"u": 2.0}, "u": {"e": 3.0},
    "F": {"a": 2.0, "Fa": 1.0}, "Fa": {"l": 2.0}, "a": {"l": 2.0}, "l": {"s": 2.0}, "s": {"e": 2.0},
}
TEXTS = [("x = ", "1", "2"), ("(2, 2)", ",", "]"), ("[{'", "k", "."), (">>> 1 == 1\n", "True", "False")]


class Engine:
    """What EngineRows asks of a backend (backends/protocol.ContextLogits): `logits` and `fetch`."""

    def __init__(self, loaded: LoadedModel) -> None:
        self.model, self.loaded = loaded.model, loaded
        self.logits: dict[tuple[int, ...], Any] = {}
        self.fetched: list[list[tuple[int, ...]]] = []

    def fetch(self, contexts: Any) -> list[tuple[int, ...]]:
        todo = sorted(set(contexts) - self.logits.keys())
        for context in todo:
            with torch.inference_mode():
                out = self.model(input_ids=torch.tensor([context]), logits_to_keep=1, use_cache=False)
            self.logits[context] = out.logits[0, -1].float()  # as the engine returns them: float32, exact
        self.fetched.append(todo)
        return todo


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> LoadedModel:
    root = tmp_path_factory.mktemp("tiny")
    folder = build_tiny_model(root / "model", RULES, merges=MERGES)
    return load_model(ModelSpec(name=str(folder), dtype="bfloat16", device="cpu"), root / "cache")


def cuts(loaded: LoadedModel) -> list[Cut]:
    return [Cut(plan_cut(loaded.tokenizer, *t), *t) for t in TEXTS]


def test_the_contexts_are_the_one_pass_paths(tiny: LoadedModel) -> None:
    plans = [cut.plan for cut in cuts(tiny)]
    one_pass = OnePassRows(tiny.model, "bfloat16", 1, 5)
    one_pass.prompts(plans)
    engine = Engine(tiny)
    rows = EngineRows(Fetcher(engine, "bfloat16"), "bfloat16", 1, 5)
    rows.prompts(plans)
    assert set(rows.main) == set(one_pass.main) == one_pass_contexts(plans)
    assert len(engine.fetched) == 1 and rows.calls == 1 and rows.full == len(rows.main)


@pytest.mark.parametrize("main", [ReadingName.TEXT, ReadingName.TOKEN])
@pytest.mark.parametrize("softmax", [None, "float32"])
def test_the_readings_are_the_separate_passes(tiny: LoadedModel, main: str, softmax: str | None) -> None:
    """Both readings, both softmax dtypes: what the engine rows give equals the check's separate full passes (the
    engine computes each context as a prompt of its own), and so the one-pass readings on this model."""
    engine = Fetcher(Engine(tiny), "bfloat16")
    # what score_batch reads of a Backend whose rows come from context_logits
    loaded = SimpleNamespace(role=Role.ENGINE, dtype="bfloat16", tokenizer=tiny.tokenizer)
    vocab = lambda: build(tiny.tokenizer)  # noqa: E731
    through = score_batch(loaded, cuts(tiny), softmax_dtype=softmax, vocab=vocab, main=main, rows_of=rows_of(engine))
    checked = score_batch(TransformersBackend(tiny), cuts(tiny), softmax_dtype=softmax, vocab=vocab, main=main,
                          check=True)
    for a, b in zip(through, checked):
        assert a.readings == b.checked == b.readings
        assert a.top == b.top
        assert a.incremental_steps == 0
    assert ReadingName.TEXT in through[-1].readings and through[-1].readings[ReadingName.TEXT].p_correct > 0


def test_prefetch_reads_a_whole_run_in_one_call_per_level(tiny: LoadedModel) -> None:
    """Every case's contexts go to the engine together: the first call holds every context the plans name, each
    later one a level of the text reading's chains; scoring afterwards asks the engine for nothing."""
    engine = Engine(tiny)
    fetcher = Fetcher(engine, "bfloat16")
    loaded = SimpleNamespace(role=Role.ENGINE, dtype="bfloat16", tokenizer=tiny.tokenizer)
    table = build(tiny.tokenizer)

    def job(cut: Cut):
        return lambda: score_batch(loaded, [cut], vocab=lambda: table, main=ReadingName.TEXT, rows_of=rows_of(fetcher))

    calls, ran = prefetch(fetcher, [job(c) for c in cuts(tiny)], lambda: torch.inference_mode())
    assert calls == len(engine.fetched) >= 2 and ran == len(engine.logits)
    assert engine.fetched[0] == sorted(one_pass_contexts([c.plan for c in cuts(tiny)]))
    before = len(engine.fetched)
    for cut in cuts(tiny):
        score_batch(loaded, [cut], vocab=lambda: table, main=ReadingName.TEXT, rows_of=rows_of(fetcher))
    assert len(engine.fetched) == before


def test_a_context_not_fetched_stops_a_collecting_read(tiny: LoadedModel) -> None:
    engine = Engine(tiny)
    fetcher = Fetcher(engine, "bfloat16")
    fetcher.collecting = set()
    rows = EngineRows(fetcher, "bfloat16", 1, 5)
    with pytest.raises(NotFetched):
        rows.need([(1, 2, 3)])
    assert fetcher.collecting == {(1, 2, 3)} and not engine.fetched
