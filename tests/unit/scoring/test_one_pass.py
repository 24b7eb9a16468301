"""One full forward pass per prompt: every other context a reading needs is an earlier position of that pass or an
incremental step on its KV cache. On tiny models (the Gemma3 whose logits follow rules, its window and merges
variants, a random Llama that does real arithmetic) the one-pass readings equal separate full passes bit for bit,
passes and steps are counted per run, and the check (--gotchas-one-pass-check) lists a difference when there is one.
Through the plugin: tests/plugin/test_one_pass.py.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch
from helpers.attention import own_attention
from helpers.tinymodel import DEFAULT_MERGES, build_tiny_model, build_tokenizer, save_folder

from pytest_gotchas.backends.transformers import TransformersBackend
from pytest_gotchas.model.load import LoadedModel, ModelSpec, load_model
from pytest_gotchas.results import onepass
from pytest_gotchas.report.wording import one_pass_check_line
from pytest_gotchas.report.wording_paths import stepped_line
from pytest_gotchas.results.report import Report, result_from_data, to_data
from pytest_gotchas.results.schema import CaseResult, ChapterInfo, Reading, Run
from pytest_gotchas.scoring import readings as readings_mod
from pytest_gotchas.scoring.cut import plan_cut
from pytest_gotchas.scoring.readings import Cut, score_batch
from pytest_gotchas.scoring.rows import OnePassRows, Rows, main_positions
from pytest_gotchas.scoring.vocab import build
from pytest_gotchas.results.vocabulary import ReadingName

MERGES = (*DEFAULT_MERGES, "Tr", "Tru", "True", "Fa", "Fal", "Fals", "False")
RULES = {
    " ": {"1": 3.0, "2": 1.0, "3": 0.5},  # "x = ": plain
    "2": {"),": 1.0, ")]": 2.0, ")": 0.5},  # "(2, 2)" + "," / "]": healed to "),", ")]"
    "{": {"'": 1.0, "'.": 0.5},  # "[{'" + "k" / ".": the chain "'" "k" against "'."
    "'": {"k": 3.0, "v": 1.0},
    # "True" / "False" as one token or as chains of shorter ones, past the end of the prompt: the text reading's
    # incremental steps
    "\n": {"True": 2.0, "T": 1.0, "Tr": 0.5, "False": 1.5, "F": 1.0, "Fa": 0.5},
    "T": {"r": 2.0, "Tr": 0.5}, "Tr": {"u": 2.0}, "Tru": {"e": 2.0}, "r": {"u": 2.0}, "u": {"e": 3.0},
    "F": {"a": 2.0, "Fa": 1.0}, "Fa": {"l": 2.0}, "a": {"l": 2.0}, "l": {"s": 2.0}, "s": {"e": 2.0},
}
CUTS = {
    "plain": ("x = ", "1", "2"),
    "healed": ("(2, 2)", ",", "]"),
    "chain": ("[{'", "k", "."),
    "text": (">>> 1 == 1\n", "True", "False"),
}


def load(folder: Path, root: Path) -> LoadedModel:
    return load_model(ModelSpec(name=str(folder), dtype="bfloat16", device="cpu"), root / "cache")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> LoadedModel:
    root = tmp_path_factory.mktemp("tiny")
    return load(build_tiny_model(root / "model", RULES, merges=MERGES), root)


@pytest.fixture(scope="module")
def windowed(tmp_path_factory: pytest.TempPathFactory) -> LoadedModel:
    """Sliding-window attention that reads an "@" among the last 12 tokens: the KV cache carries real values."""
    root = tmp_path_factory.mktemp("windowed")
    folder = build_tiny_model(root / "model", RULES, merges=MERGES, window_rules={"@": {"2": 3.0, "F": 2.0}})
    return load(folder, root)


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> LoadedModel:
    """A random bfloat16 Llama over the tiny tokenizer: every layer's attention and MLP do real arithmetic (sdpa, the
    default attention: a tree of several nodes there is not bit for bit a step: tests/unit/scoring/test_tree.py)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = build_tokenizer(MERGES)
    vocab = tokenizer.get_vocab()
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
                         tie_word_embeddings=False, bos_token_id=vocab["<bos>"], eos_token_id=vocab["<eos>"],
                         pad_token_id=vocab["<pad>"])
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(torch.bfloat16).eval()
    root = tmp_path_factory.mktemp("llama")
    return load(save_folder(model, root / "model", tokenizer), root)


@pytest.fixture(scope="module")
def llama_eager(llama: LoadedModel, tmp_path_factory: pytest.TempPathFactory) -> LoadedModel:
    """The same Llama under eager attention, where its tree of contexts is bit for bit its steps and its separate
    passes in bfloat16."""
    loaded = load(Path(llama.info.source), tmp_path_factory.mktemp("eager"))
    loaded.model.set_attn_implementation("eager")
    return loaded


def cuts(loaded: LoadedModel, *texts: tuple[str, str, str]) -> list[Cut]:
    return [Cut(plan_cut(loaded.tokenizer, *t), *t) for t in texts]


def scored(loaded: LoadedModel, chosen: list[Cut], **kwargs):
    return score_batch(TransformersBackend(loaded), chosen, vocab=lambda: build(loaded.tokenizer), main=ReadingName.TEXT, check=True,
                       **kwargs)


def separate_probs(model, context: tuple[int, ...]) -> torch.Tensor:
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([context]), logits_to_keep=1, use_cache=False).logits[0, -1]
    return torch.softmax(logits, dim=-1)


# -- bit for bit ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["tiny", "windowed", "llama_eager"])
def test_every_reading_equals_separate_full_passes(which: str, request: pytest.FixtureRequest) -> None:
    loaded: LoadedModel = request.getfixturevalue(which)
    texts = [*CUTS.values(), ("@ x = ", "2", "1"), ("@ 1 == 1\n", "False", "True")]
    for s in scored(loaded, cuts(loaded, *texts)):
        assert set(s.checked) == set(s.readings)
        assert s.readings == s.checked


@pytest.mark.parametrize("which", ["tiny", "windowed", "llama"])
@pytest.mark.parametrize("refeed", [1, 2, 4, 8])
def test_each_row_equals_a_separate_pass(which: str, refeed: int, request: pytest.FixtureRequest) -> None:
    """Earlier positions of the main pass and incremental steps on its cache (one call each: the path of a model
    that takes no tree), row by row, through both softmax dtypes, against a separate pass over each context; for
    every refeed from one token on."""
    loaded: LoadedModel = request.getfixturevalue(which)
    plan = plan_cut(loaded.tokenizer, "@ (2, 2)", ",", "]")
    prompt = plan.prompt_ids
    beyond = [prompt + (5,), prompt + (5, 9), plan.context_ids + (7,), prompt[:-2] + (11, 12, 13)]
    rows = OnePassRows(loaded.model, "bfloat16", 1, 5, refeed, tree=False)
    rows.prompts([plan])
    rows.need(beyond)
    assert (rows.full, rows.steps) == (2, len(beyond))  # the prompt, and the back-off the token reading reads
    assert rows.full_contexts == [prompt, plan.context_ids]
    assert set(rows.main) == {prompt[: n + 1] for n in main_positions(plan)} | set(beyond)
    for context, row in rows.main.items():
        logits = _logits(loaded, context)
        assert torch.equal(row, torch.softmax(logits, dim=-1)), len(context)
        assert torch.equal(rows.other[context], torch.softmax(logits.float(), dim=-1)), len(context)


def _logits(loaded: LoadedModel, context: tuple[int, ...]) -> torch.Tensor:
    with torch.inference_mode():
        return loaded.model(input_ids=torch.tensor([context]), logits_to_keep=1, use_cache=False).logits[0, -1]


def test_every_row_of_a_real_model_equals_a_separate_pass(llama: LoadedModel) -> None:
    plan = plan_cut(llama.tokenizer, "(1, 2), (2, 2)", ",", "]")
    rows = OnePassRows(llama.model, "bfloat16", 1, 5)
    rows.prompts([plan])
    prompt = plan.prompt_ids
    assert {len(c) for c in rows.main} == {n + 1 for n in main_positions(plan)}
    for context, row in rows.main.items():
        assert torch.equal(row, separate_probs(llama.model, context)), len(context)
    assert rows.full == 2 and rows.steps == 0
    assert prompt in rows.main and plan.context_ids in rows.main


class EarlierRowsDiffer(torch.nn.Module):
    """A model whose rows before the last differ from a pass over that shorter context, as SmolLM2-135M's do in
    bfloat16 on an AVX2 CPU (a few ulps from the first layer on): logits kept at several positions get 2**-4 on every
    other token of every row but the last."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner
        self.dtype, self.device = inner.dtype, inner.device

    def forward(self, *args, logits_to_keep=1, **kwargs):
        output = self.inner(*args, logits_to_keep=logits_to_keep, **kwargs)
        if isinstance(logits_to_keep, torch.Tensor) and len(logits_to_keep) > 1:
            output.logits[:, :-1, ::2] += 2 ** -4
        return output


@pytest.mark.parametrize("kind", ["healed", "chain"])
def test_the_token_reading_never_reads_an_earlier_position(tiny: LoadedModel, kind: str) -> None:
    """The token reading equals separate passes even where earlier positions of the prompt's pass do not; the text
    reading reads them and the check lists what that moved."""
    differing = LoadedModel(EarlierRowsDiffer(tiny.model), tiny.tokenizer, tiny.info)
    (result,) = scored(differing, cuts(differing, CUTS[kind]))
    (separate,) = scored(tiny, cuts(tiny, CUTS[kind]))
    assert result.readings[ReadingName.TOKEN] == result.checked[ReadingName.TOKEN] == separate.readings[ReadingName.TOKEN]
    assert result.readings.get(ReadingName.PLAIN) == separate.readings.get(ReadingName.PLAIN)


# -- counting ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "passes"), [("plain", 1), ("healed", 2), ("chain", 2)])
def test_one_full_pass_per_run_and_one_per_back_off(tiny: LoadedModel, kind: str, passes: int) -> None:
    (result,) = scored(tiny, cuts(tiny, CUTS[kind]))
    assert result.readings[ReadingName.TOKEN].kind == kind
    assert (result.forward_passes, result.incremental_steps) == (passes, 0)


def test_chains_past_the_prompt_are_one_tree_not_passes(tiny: LoadedModel) -> None:
    """Every context of the text reading past the prompt is a node of one call on the prompt's KV cache: those the
    readings read (the check computes exactly these, a separate pass each) and those it looked ahead to."""
    batch = scored(tiny, cuts(tiny, CUTS["text"]))
    (result,) = batch
    assert result.forward_passes == 1 and result.incremental_steps > 0
    # Its chains are four nodes deep past the prompt ('T'+'r'+'u'+'e'): levels 1 and 2 in one call (AHEAD is one
    # level past what the prompt's row decides), 3 and 4 in the next.
    assert "'T'+'r'+'u'+'e'" in result.readings[ReadingName.TEXT].correct_tokens[1]
    assert (batch.passes, batch.steps, batch.tree_calls) == (1, result.incremental_steps, 2)
    assert batch.step_tokens > batch.steps == batch.tree_contexts  # the second call fed the first two nodes again
    # the check's separate passes: one per context read, counted apart
    assert 1 < batch.check_passes <= 1 + result.incremental_steps
    assert result.readings[ReadingName.TEXT].correct_tokens[:2] == result.checked[ReadingName.TEXT].correct_tokens[:2]


@pytest.mark.parametrize(("ahead", "calls"), [(0, 4), (1, 2), (3, 1)])
def test_looking_further_ahead_makes_fewer_calls_of_more_nodes(tiny: LoadedModel, monkeypatch: pytest.MonkeyPatch,
                                                              ahead: int, calls: int) -> None:
    """A level a call: each reads what the rows so far decide; looking `ahead` levels past that computes every chain
    the readings could follow there, whatever the rows will say, so the same readings from fewer calls."""
    monkeypatch.setattr(readings_mod, "AHEAD", 0)
    level_by_level = scored(tiny, cuts(tiny, CUTS["text"]))
    monkeypatch.setattr(readings_mod, "AHEAD", ahead)
    batch = scored(tiny, cuts(tiny, CUTS["text"]))
    (result,) = batch
    assert batch.tree_calls == calls
    assert result.readings == result.checked == level_by_level[0].readings
    # level by level, the contexts computed are those the readings read (the check's passes less the prompt's);
    # each later call feeds its chains' earlier nodes again
    assert batch.steps >= level_by_level.steps == batch.check_passes - 1
    assert level_by_level.step_tokens > level_by_level.steps


def test_chains_past_the_prompt_are_steps_where_the_model_takes_no_tree(tmp_path: Path) -> None:
    """A model whose attention the plugin cannot hand a tree mask (one registered by the user) steps each context,
    one call each: the contexts the readings read and no more."""
    loaded = load(build_tiny_model(tmp_path / "model", RULES, merges=MERGES), tmp_path)
    own_attention(loaded.model)
    batch = scored(loaded, cuts(loaded, CUTS["text"]))
    (result,) = batch
    assert (batch.tree_calls, batch.tree_contexts) == (0, 0)
    assert batch.check_passes == 1 + result.incremental_steps == 1 + batch.steps
    assert result.readings == result.checked


def test_two_runs_of_a_case_each_count_their_own_pass(tiny: LoadedModel) -> None:
    batch = scored(tiny, cuts(tiny, CUTS["plain"], CUTS["healed"], CUTS["plain"]))
    assert [s.forward_passes for s in batch] == [1, 2, 0]  # the same prompt twice: one pass; a back-off: its own
    assert batch.passes == 3


def test_a_token_chain_past_the_prompt_is_a_full_pass_not_a_step(tmp_path: Path) -> None:
    """The token reading, the write-up's, never reads a KV-cached step: a chain token that is not in the prompt's
    own pass gets a full pass of its own. "'." merges before "{'", so the prompt "[{'" ends in "{'" while the wrong
    side is "{" then "'." (as SmolLM2 tokenizes ch.4's cut)."""
    rules = {"[": {"{'": 1.0, "{": 2.0}, "{'": {"k": 2.0}, "{": {"'.": 1.0, "'": 0.5}}
    loaded = load(build_tiny_model(tmp_path / "model", rules, merges=("'.", "{'")), tmp_path)
    plan = plan_cut(loaded.tokenizer, "[{'", "k", ".")
    assert (plan.correct_tokens, plan.wrong_tokens) == (("{'", "k"), ("{", "'."))
    assert plan.context_ids + plan.wrong_ids[:1] not in [plan.prompt_ids[:n] for n in range(len(plan.prompt_ids) + 1)]
    batch = score_batch(TransformersBackend(loaded), [plan], check=True)
    (result,) = batch
    assert (result.forward_passes, result.incremental_steps) == (3, 0)  # the prompt, its back-off, "{" past it
    assert result.readings == result.checked
    assert result.readings[ReadingName.TOKEN].p_wrong == (separate_probs(loaded.model, plan.context_ids)[plan.wrong_ids[0]].item()
                                              * separate_probs(loaded.model, plan.context_ids + plan.wrong_ids[:1])[
                                                  plan.wrong_ids[1]].item())


def test_a_back_off_that_is_not_a_prefix_of_the_prompt_gets_its_own_pass(tiny: LoadedModel) -> None:
    """BPE can retokenize: the back-off's tokens need not begin the prompt's. Its own full pass, counted."""
    cut = cuts(tiny, CUTS["healed"])[0]
    plan = cut.plan
    other = tiny.tokenizer.convert_tokens_to_ids("(")
    retokenized = replace(plan, context_ids=plan.context_ids[:1] + (other,) + plan.context_ids[1:])
    (result,) = scored(tiny, [replace(cut, plan=retokenized)])
    assert result.forward_passes == 2
    assert result.readings == result.checked


def test_a_context_past_a_sliding_window_is_a_full_pass(windowed: LoadedModel) -> None:
    """A sliding layer's cache keeps only its window and cannot be cropped back past it: a step there would not be
    the full pass's arithmetic, so the context gets a full pass of its own."""
    long = ("@ 1 + 1 == 2 and 1 == 1\n", "True", "False")
    (result,) = scored(windowed, cuts(windowed, long))
    assert result.incremental_steps == 0 and result.forward_passes > 1
    assert result.readings == result.checked


@pytest.mark.parametrize("which", ["tiny", "llama"])
def test_batched_main_passes_are_bit_identical(which: str, request: pytest.FixtureRequest) -> None:
    loaded: LoadedModel = request.getfixturevalue(which)
    texts = [("x = ", "1", "2"), ("y = ", "1", "2"), ("z = ", "3", "2"), ("1 == 1\n", "True", "False"),
             ("2 == 2\n", "True", "False"), CUTS["healed"], CUTS["chain"]]
    one = scored(loaded, cuts(loaded, *texts))
    four = scored(loaded, cuts(loaded, *texts), batch_size=4)
    assert list(four) == list(one)
    assert four.calls < four.passes == one.passes == len(texts) + 2  # the healed cut's and the chain's back-off


# -- the check ------------------------------------------------------------------------------------------------


class Nudged(Rows):
    """Separate passes that read one token 2**-8 higher: a difference the check must list."""

    token = 0

    def p(self, context, token, other=False):
        value = super().p(context, token, other)
        return value + 2 ** -8 if token == self.token and not other else value


def test_the_check_lists_a_reading_that_differs(tiny: LoadedModel, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = plan_cut(tiny.tokenizer, *CUTS["plain"])
    monkeypatch.setattr(Nudged, "token", plan.correct_ids[0])
    monkeypatch.setattr(readings_mod, "Rows", Nudged)
    (result,) = scored(tiny, cuts(tiny, CUTS["plain"]))
    assert result.readings[ReadingName.TOKEN] != result.checked[ReadingName.TOKEN]
    assert result.checked[ReadingName.TOKEN].p_correct == result.readings[ReadingName.TOKEN].p_correct + 2 ** -8


def run_of(readings: dict[str, Reading], primer: str | None = None) -> Run:
    return Run(primer=primer, prompt=">>> x\n", correct="1", wrong="2", readings=readings, main=ReadingName.TOKEN, top=[],
               batch_size=1, forward_passes=1, incremental_steps=2)


def reading(pc: float, pw: float, verdict: str) -> Reading:
    return Reading(pc, pw, verdict, "plain", "bfloat16", ["'1'"], ["'2'"])


def test_the_check_counts_readings_and_case_verdicts() -> None:
    chapter = ChapterInfo("demo", "ch.0 demo", "demo", "cases/demo.yaml", False, ["a", "b"], {}, {})
    same = reading(0.5, 0.25, "ok")
    a = CaseResult("a", "demo", "scored", "ok", runs=[run_of({ReadingName.TOKEN: same, onepass.separate(ReadingName.TOKEN): same})],
                   reading_verdicts={ReadingName.TOKEN: "ok", onepass.separate(ReadingName.TOKEN): "ok"}, model="tiny")
    tie = reading(0.375, 0.375, "tie")
    b = CaseResult("b", "demo", "scored", "ok", runs=[run_of({ReadingName.TOKEN: reading(0.5, 0.375, "ok"),
                                                             onepass.separate(ReadingName.TOKEN): tie,
                                                             ReadingName.PLAIN: same, onepass.separate(ReadingName.PLAIN): same})],
                   reading_verdicts={ReadingName.TOKEN: "ok", onepass.separate(ReadingName.TOKEN): "tie"}, model="tiny")
    checked = onepass.check([a, b])
    assert checked is not None
    assert (checked.readings, checked.case_verdicts) == (3, 2)
    assert [(d.case, d.reading, d.one_pass, d.separate) for d in checked.readings_differ] == [
        ("demo/b", ReadingName.TOKEN, reading(0.5, 0.375, "ok"), tie)]
    assert checked.case_verdicts_differ == [onepass.VerdictDifference("demo/b", "tiny", "ok", "tie")]
    assert one_pass_check_line(checked) == (
        "one pass checked against separate full passes: 1 of 3 readings differ (token 1: demo/b token ok -> tie); "
        "1 of 2 case verdicts would differ: demo/b ok -> tie")
    assert one_pass_check_line(checked, several_models=True).endswith("would differ: tiny:demo/b ok -> tie")
    assert onepass.check([CaseResult("c", "demo", "scored", "ok", runs=[run_of({ReadingName.TOKEN: same})])]) is None
    stepped = onepass.stepped([a, b])
    assert stepped is not None
    assert stepped_line(stepped) == (
        "one pass per prompt: 2 full forward passes for 2 runs; 4 text-reading contexts in 2 runs read as incremental "
        "steps on a pass's KV cache, which can differ from separate passes in their last bits "
        "(--gotchas-one-pass-check lists what differs)")
    # The JSON states the check as a computed section, typed; a report of unchecked runs has none.
    data = to_data(Report([a, b], [chapter]))
    assert data["one_pass_check"]["case_verdicts_differ"] == [
        {"case": "demo/b", "model": "tiny", "one_pass": "ok", "separate": "tie"}]
    assert data["one_pass_check"]["readings_differ"][0]["separate"]["p_correct"] == 0.375
    assert to_data(Report([CaseResult("c", "demo", "scored", "ok", runs=[run_of({ReadingName.TOKEN: same})])],
                          [chapter]))["one_pass_check"] is None
    # the JSON of a run keeps its steps, and an older one without them reads as none
    case = data["cases"][1]
    assert case["runs"][0]["incremental_steps"] == 2
    del case["runs"][0]["incremental_steps"]
    assert result_from_data(case).runs[0].incremental_steps == 0
