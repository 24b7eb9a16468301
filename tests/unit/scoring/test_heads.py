"""scoring/heads.py and model/paths.tree_hidden/head/apart: the text reading's trees of many cases through the decoder
alone, their head in one product, and the same bits, counts and errors as each tree's own call.

On random tiny Llama and Gemma3 models (tests/unit/scoring/test_tree.py's), in bfloat16 and float32, under eager and
sdpa: a tree's hidden rows through the head are tree_step's logits bit for bit, alone and among other rows; a model
whose forward soft-caps its logits after the head is measured as not apart. Through OnePassRows: two cases' trees
wait (rows.Pending), one product keeps them, and every row and count is what a tree's own call gives. Through the
scorer, on the hand-set tiny model: a run whose cases share head products scores every case as a run without, a
case refused for its length among them included.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch
from helpers.chapters import chapter_text
from helpers.tinymodel import build_tiny_model
from helpers.treemodels import CHAINS, PROMPT, START, random_model

from pytest_gotchas.backends.transformers import TransformersBackend
from pytest_gotchas.cases.chapter import load_chapter
from pytest_gotchas.errors import GotchasError
from pytest_gotchas.model import numerics, paths, row_readout
from pytest_gotchas.model.load import LoadedModel, ModelSpec, load_model
from pytest_gotchas.results.verdict import Status
from pytest_gotchas.scoring.heads import Heads
from pytest_gotchas.scoring.rows import OnePassRows, Pending
from pytest_gotchas.scoring.scorer import Scorer, ScoringConfig
from pytest_gotchas.scoring.slot import Clock, ModelSlot
from pytest_gotchas.scoring.tree import Tree
from pytest_gotchas.truth.collect import Planned, chapter_info

OTHER = tuple([2] + [(11 + 17 * n) % 128 for n in range(20)])  # a second case's prompt, as long


def tree_call(model: torch.nn.Module, prompt: tuple[int, ...] = PROMPT) -> tuple[Tree, tuple]:
    tree = Tree.of([prompt[:START] + chain for chain in CHAINS], START)
    with torch.inference_mode():
        cache = paths.cache_of(model(input_ids=torch.tensor([prompt]), use_cache=True, logits_to_keep=1))
    return tree, (model, cache, len(prompt), START, list(tree.tokens), list(tree.positions), tree.mask(),
                  paths.cache_arg(model))


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_the_head_apart_gives_the_trees_own_bits(kind: str, attention: str, dtype: torch.dtype) -> None:
    model = random_model(kind, attention, dtype)
    if not numerics.probe(model).rows:  # as a load does (model/facts.py): float32 here rounds a lone row otherwise
        row_readout.apply(model)
    tree, call = tree_call(model)
    logits, hidden = paths.tree_step(*call), paths.tree_hidden(*call)
    assert hidden.shape == (len(tree), 64)
    assert torch.equal(paths.head(model, hidden), logits)
    assert paths.apart(model, logits, hidden)
    _, other = tree_call(model, OTHER)  # among another tree's rows, in either place
    both = paths.head(model, torch.cat([paths.tree_hidden(*other), hidden]))
    assert torch.equal(both[-len(tree):], logits)
    assert numerics.probe(model).shared_head


def test_a_model_that_caps_its_logits_after_the_head_is_not_apart() -> None:
    model = random_model("gemma3", "sdpa", torch.bfloat16, final_logit_softcapping=0.5)
    _, call = tree_call(model)
    assert not paths.apart(model, paths.tree_step(*call), paths.tree_hidden(*call))
    assert not numerics.probe(model).shared_head


def test_two_cases_trees_wait_and_one_product_keeps_them_as_their_own_calls_would() -> None:
    model = random_model("llama", "sdpa", torch.bfloat16)
    heads = Heads(model)
    shared, alone = [], []
    for prompt in (PROMPT, OTHER):
        wanted = [prompt[:START] + chain for chain in CHAINS]
        rows = OnePassRows(model, "bfloat16", 1, 5, heads=heads)
        rows.need([prompt])
        rows.owner = 0
        with pytest.raises(Pending):
            rows.need(wanted)
        assert not any(context in rows.main for context in wanted) and rows.tree_calls == 0
        shared.append((rows, wanted))
        own = OnePassRows(model, "bfloat16", 1, 5)
        own.need([prompt])
        own.owner = 0
        own.need(wanted)
        alone.append(own)
    assert len(heads.waiting) == 2
    heads.flush()
    assert heads.waiting == []
    for (rows, wanted), own in zip(shared, alone):
        for context in wanted:
            assert torch.equal(rows.main[context], own.main[context])
            assert torch.equal(rows.other[context], own.other[context])
            assert rows.top[context] == own.top[context]
        counts = ("full", "tree_calls", "tree_contexts", "steps", "step_tokens", "caused", "non_finite")
        assert [getattr(rows, name) for name in counts] == [getattr(own, name) for name in counts]
        assert rows.caused == {0: [0, 9]}
        rows.need(wanted)  # kept: nothing waits again


def test_a_non_finite_logit_of_a_shared_product_marks_the_rows_that_asked() -> None:
    model = random_model("llama", "sdpa", torch.bfloat16)
    heads = Heads(model)
    rows = OnePassRows(model, "bfloat16", 1, 5, heads=heads)
    rows.need([PROMPT])
    with pytest.raises(Pending):
        rows.need([PROMPT[:START] + chain for chain in CHAINS])
    with torch.inference_mode():
        heads.waiting[0].hidden[0, 0] = float("nan")  # a node whose decoder gave NaN
    heads.flush()
    assert rows.non_finite


# -- through the scorer ----------------------------------------------------------------------------------------------

RULES = {"[": {"1": 2.0, "2": 1.0}, "1": {"2": 1.0, "1": 0.5}, "2": {"1": 1.0}}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> LoadedModel:
    root = tmp_path_factory.mktemp("tiny")
    return load_model(ModelSpec(name=str(build_tiny_model(root / "tiny", RULES)), device="cpu"), root / "cache")


def chapter(tmp_path: Path) -> list[Planned]:
    """Five cases: three whose candidates the text reading writes through shorter tokens (a tree each), one read
    in one token, and one too long for the tiny model's 1,024 positions between them."""
    long = "a" * 1100
    cases = [("twelve", ">>> [12]\\n[", "12", "21"), ("one", ">>> [1]\\n[", "1", "2"),
             ("long", f">>> print('{long}[1')\\n{long}[", "1", "2"), ("eleven", ">>> [11]\\n[", "11", "21"),
             ("twenty-one", ">>> [21]\\n[", "21", "12")]
    text = chapter_text("".join(f"""
    - id: {name}
      transcript: "{transcript}█"
      correct: "{correct}"
      wrong: "{wrong}"
    """ for name, transcript, correct, wrong in cases))
    path = tmp_path / "a.yaml"
    path.write_text(text, encoding="utf-8")
    loaded = load_chapter(path, "a.yaml")
    info = chapter_info(loaded, "a.yaml")
    return [Planned(case, loaded, info, loaded.prompts(case), Status.SCORED) for case in loaded.cases]


def score_all(loaded: LoadedModel, cases: list[Planned], shared: int) -> tuple[list[object], Clock]:
    clock = Clock()
    scorer = Scorer(model_id="tiny", slot=ModelSlot(lambda: TransformersBackend(loaded), clock),
                    config=ScoringConfig(reading="text"), planned=lambda: cases, shared_cases=shared)
    out: list[object] = []
    for case in cases:
        try:
            result = scorer.score(case)
        except GotchasError as error:
            out.append(str(error))
        else:
            out.append([(run.readings, run.top, run.forward_passes, run.incremental_steps) for run in result.runs])
    assert scorer.shared._entries == {}  # every case's read was taken and let go
    return out, clock


def test_cases_that_share_head_products_score_as_cases_that_do_not(tiny: LoadedModel, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    assert tiny.shared_head
    cases = chapter(tmp_path)
    products: list[int] = []
    head = paths.head
    monkeypatch.setattr(paths, "head", lambda model, hidden: products.append(len(hidden)) or head(model, hidden))
    shared, shared_clock = score_all(tiny, cases, 32)
    assert products == [6]  # the three trees' nodes, one product
    alone, alone_clock = score_all(tiny, cases, 0)
    assert products == [6]  # each tree's own call computes its head
    assert shared == alone
    assert isinstance(shared[2], str) and "positions of model" in shared[2]  # said when that case is scored
    assert [run[0][3] for n, run in enumerate(shared) if n != 2] == [2, 0, 2, 2]  # the trees' contexts, as steps
    assert shared_clock.tree_calls == 3
    counted = ("forward_passes", "forward_calls", "prompt_tokens", "incremental_steps", "incremental_tokens",
               "tree_calls", "tree_contexts")
    assert [getattr(shared_clock, n) for n in counted] == [getattr(alone_clock, n) for n in counted]
    assert json.dumps(shared, default=str) == json.dumps(alone, default=str)


# -- beside collection (a first run: scorer.Scorer.load_ahead) -------------------------------------------------------


def ahead_scorer(loaded: LoadedModel, cases: list[Planned], stop_first: bool = False) -> tuple[Scorer, list[str]]:
    """A scorer whose model loads in a thread and reads `cases` there (as beside collection), joined as the test
    loop joins it; then the ids of the cases its tests read again."""
    load = lambda: TransformersBackend(loaded)  # noqa: E731
    scorer = Scorer(model_id="tiny", slot=ModelSlot(load, Clock(), load), config=ScoringConfig(reading="text"),
                    planned=lambda: cases, shared_cases=32)
    if stop_first:
        scorer.stop_ahead()
    assert scorer.load_ahead(cases)
    scorer.slot.settle()
    again: list[str] = []
    read = scorer._read

    def counted(loaded: object, planned: Planned, *rest: object) -> object:
        again.append(planned.case.id)
        return read(loaded, planned, *rest)  # type: ignore[arg-type]

    scorer._read = counted  # type: ignore[method-assign, assignment]
    return scorer, again


def outcomes(scorer: Scorer, cases: list[Planned]) -> list[object]:
    out: list[object] = []
    for case in cases:
        try:
            out.append([(r.readings, r.top, r.forward_passes, r.incremental_steps) for r in scorer.score(case).runs])
        except GotchasError as error:
            out.append(str(error))
    return out


def test_cases_read_beside_collection_are_scored_from_what_they_gave(tiny: LoadedModel, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    cases = chapter(tmp_path)
    alone, _ = score_all(tiny, cases, 0)
    scorer, again = ahead_scorer(tiny, cases)
    assert outcomes(scorer, cases) == alone
    assert again == ["long"]  # read again only to say why it has no verdict
    products: list[int] = []
    head = paths.head
    monkeypatch.setattr(paths, "head", lambda model, hidden: products.append(len(hidden)) or head(model, hidden))
    stopped, again = ahead_scorer(tiny, cases, stop_first=True)  # collection ended before the model loaded
    assert outcomes(stopped, cases) == alone
    assert products == [6]  # the test loop's own reads share their heads all the same (the stop is collection's)
    # Read by the test loop in two rounds (the second for the three trees), then the long case again to say why.
    assert again == ["twelve", "one", "long", "eleven", "twenty-one", "twelve", "eleven", "twenty-one", "long"]


def test_a_case_whose_texts_changed_after_its_read_ahead_is_read_again(tiny: LoadedModel, tmp_path: Path) -> None:
    cases = chapter(tmp_path)
    scorer, again = ahead_scorer(tiny, cases)
    first = cases[0]
    first.prompts = [dataclasses.replace(prompt, correct="21", wrong="12") for prompt in first.prompts]
    assert scorer.shared.entry(first) is None
    result = scorer.score(first)
    assert again == ["twelve"]
    fresh, _ = score_all(tiny, [first], 0)
    assert [(r.readings, r.top, r.forward_passes, r.incremental_steps) for r in result.runs] == fresh[0]
