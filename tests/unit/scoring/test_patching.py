"""scoring/patching.py: a model whose answer sits at a known token and layer, the exactness checks, unequal lengths, the
batched methods against full passes, and an independent probe written plainly here."""

from __future__ import annotations

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from pytest_gotchas.scoring import patching as P  # noqa: E402
from pytest_gotchas.scoring.align import align  # noqa: E402
from pytest_gotchas.results.effects import spacing  # noqa: E402

from helpers.tinypatch import BOS, EQ, NO, YES, A, B, C, D, X, Y, Z, answer_model
from pytest_gotchas.results.vocabulary import PatchMethod, PatchMetric  # noqa: E402
from pytest_gotchas.scoring.hooks import Hooks  # noqa: E402

SOURCE = (BOS, C, X, A, Y, Z, EQ)  # answers YES: token A is there
TARGET = (BOS, D, X, B, Y, Z, EQ)  # answers NO; also differs at position 1, which the model ignores
TARGET_IDS = (NO, YES)  # the target's (correct, wrong)


@pytest.fixture(scope="module")
def answer():
    torch.set_num_threads(1)  # the machine is shared; these models are tiny
    return answer_model()


def passes(model, *members):
    return [P.member_pass(model, m) for m in members]


# -- (a) the answer is where the model was built to put it ----------------------------------------------------------


@pytest.mark.parametrize("method", P.METHODS)
def test_the_answer_is_restored_at_the_key_token_after_layer_1(answer, method: str) -> None:
    source, target = passes(answer, SOURCE, TARGET)
    result = P.patch(answer, source, target, TARGET_IDS, method)
    assert result.method == method
    assert result.layers == [1, 2]
    assert result.positions == [[1, 1], [2, 2], [3, 3], [4, 4], [5, 5], [6, 6]]
    assert result.unpatched > 0 > result.source_value  # NO ahead on the target, YES on the source
    expected = [[0.0, 0.0, 1.0, 0.0, 0.0, 0.0],  # layer 1: only the KEY token (position 3) carries the answer
                [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]]  # layer 2: only the last position (the final norm reads it)
    assert result.fractions == expected
    # The last layer at the last position is the source's own value, bit for bit.
    assert result.cells[-1][-1] == result.source_value


def test_the_other_direction_mirrors_it(answer) -> None:
    source, target = passes(answer, TARGET, SOURCE)
    result = P.patch(answer, source, target, (YES, NO))
    assert result.fractions[0] == [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    assert result.fractions[1][-1] == 1.0
    assert result.source_value < 0 < result.unpatched


# -- (b) the exactness checks ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", P.METHODS)
def test_the_three_checks_run_and_hold(answer, method: str) -> None:
    source, target = passes(answer, SOURCE, TARGET)
    result = P.patch(answer, source, target, TARGET_IDS, method)
    assert [(c.name, c.ran, c.passed) for c in result.checks] == [
        ("shared-prefix", True, True), ("last-layer", True, True), ("self-patch", True, True)]
    assert "position(s) [0]" in result.checks[0].detail  # BOS is the shared prefix
    assert "position(s) [1, 6]" in result.checks[2].detail


def _spoilt(member: P.MemberPass, states=None, logits=None) -> P.MemberPass:
    return P.MemberPass(member.ids, member.states if states is None else states,
                        member.logits if logits is None else logits)


@pytest.mark.parametrize("method", P.METHODS)
def test_a_patch_that_moves_an_identical_shared_prefix_fails_its_check(answer, method: str, monkeypatch) -> None:
    source, target = passes(answer, SOURCE, TARGET)
    # As an alignment fault would: the check's job patches source position 3 (the key token) into BOS.
    real = P._check_jobs
    monkeypatch.setattr(P, "_check_jobs", lambda alignment: ((3, 0), real(alignment)[1]))
    with pytest.raises(P.CheckError, match="shared-prefix: layer 1 at target position 0") as raised:
        P.patch(answer, source, target, TARGET_IDS, method)
    assert str(raised.value).startswith(
        f"patching check failed (method {method}): shared-prefix: the source's and the target's states there are "
        "identical: the patch itself changed the result; shared-prefix: layer 1 at target position 0 gave ")


@pytest.mark.parametrize("method", P.METHODS)
def test_a_shared_prefix_the_members_computed_differently_is_measured_not_checked(answer, method: str) -> None:
    source, target = passes(answer, SOURCE, TARGET)
    clean = P.patch(answer, source, target, TARGET_IDS, method)
    states = source.states.clone()
    states[:, 0] += 1.0  # BOS: as a pass of another length could round it on some CPUs
    result = P.patch(answer, _spoilt(source, states=states), target, TARGET_IDS, method)
    assert (result.prefix_apart, result.checks[0].ran) == (1.0, False)
    assert 0 < result.prefix_shift
    assert result.checks[0].detail == (
        "not run: the members' own states over the shared prefix differ by up to 1 (lengths 7 and 7: a pass of "
        "another length rounds the shared positions differently on this machine); patching there moved the metric "
        f"by up to {result.prefix_shift:g}")
    assert [c.passed for c in result.checks] == [True, True, True]
    assert result.cells == clean.cells  # no cell is at BOS: the heatmap is the clean one
    assert (clean.prefix_apart, clean.prefix_shift) == (0.0, 0.0)


def test_a_wrong_source_value_fails_the_last_layer_check(answer) -> None:
    source, target = passes(answer, SOURCE, TARGET)
    logits = source.logits.clone()
    logits[NO] += 1.0
    with pytest.raises(P.CheckError, match=r"last-layer: layer 2 at \[6, 6\]"):
        P.patch(answer, _spoilt(source, logits=logits), target, TARGET_IDS)


@pytest.mark.parametrize("method", P.METHODS)
def test_a_target_whose_states_are_not_its_own_fails_the_self_patch_check(answer, method: str) -> None:
    source, target = passes(answer, SOURCE, TARGET)
    states = target.states.clone()
    states[0, 1] = states[0, 3]  # as if the target's states were read from the wrong position
    with pytest.raises(P.CheckError, match="self-patch: layer 1 at target position 1"):
        P.patch(answer, source, _spoilt(target, states=states), TARGET_IDS, method)


def test_not_strict_returns_the_failures_instead(answer) -> None:
    source, target = passes(answer, SOURCE, TARGET)
    logits = source.logits.clone()
    logits[NO] += 1.0
    result = P.patch(answer, _spoilt(source, logits=logits), target, TARGET_IDS, strict=False)
    assert [c.passed for c in result.checks] == [True, False, True]


def test_a_member_patched_into_itself_changes_nothing(answer) -> None:
    (member,) = passes(answer, TARGET)
    for method in P.METHODS:
        result = P.patch(answer, member, member, TARGET_IDS, method)
        assert result.positions == [[6, 6]]  # identical: only the cuts, inside the shared prefix
        assert result.cells == [[result.unpatched], [result.unpatched]]
        assert result.source_value == result.unpatched and result.fractions == [[None], [None]]


def test_no_shared_prefix_says_the_check_did_not_run(answer) -> None:
    source, target = passes(answer, (C, X, A, EQ), (D, X, B, EQ))
    result = P.patch(answer, source, target, TARGET_IDS)
    assert (result.checks[0].ran, result.checks[0].detail) == (False, "not run: the members share no leading token")
    assert result.fractions[0] == [0.0, 0.0, 1.0, 0.0]


# -- (c) unequal lengths ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", P.METHODS)
def test_unequal_lengths_patch_only_what_aligns(answer, method: str) -> None:
    longer = (BOS, C, C, X, A, Y, Z, EQ)  # middle positions 1-4 against the target's 1-3
    source, target = passes(answer, longer, TARGET)
    result = P.patch(answer, source, target, TARGET_IDS, method)
    # The token diff of the middles: X with X, the KEY A with B (a one-token substitution); C, C against D is a
    # substitution of another length, left out. Then the shared suffix, from the end.
    assert result.positions == [[3, 2], [4, 3], [5, 4], [6, 5], [7, 6]]
    assert (result.alignment.unaligned_source, result.alignment.unaligned_target) == ((1, 2), (1,))
    assert "left out source positions 1-2, target positions 1" in result.alignment.unaligned
    # The KEY token aligns, though the members differ in length: layer 1 there restores the effect (all but the
    # difference the source's extra position makes to the uniform attention's weights).
    assert result.fractions[0] == [0.0, pytest.approx(1.0, abs=0.01), 0.0, 0.0, 0.0]
    assert result.fractions[1] == [0.0, 0.0, 0.0, 0.0, 1.0]
    assert result.cells[1][4] == result.source_value


def test_a_source_that_is_a_prefix_of_the_target(answer) -> None:
    source, target = passes(answer, (BOS, D, X, B), TARGET)
    result = P.patch(answer, source, target, (YES, NO))
    assert result.positions == [[3, 6]]  # the source's cut, inside the shared prefix, against the target's
    assert result.alignment.unaligned_target == (4, 5)
    assert result.cells[-1] == [result.source_value]


# -- (d) the batched methods against full passes, on models that compute ----------------------------------------------

SMALL = dict(vocab_size=300, hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
             max_position_embeddings=128)


def uneven_norms(model, seed: int = 2):
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "norm" in name or "ln_" in name:
                parameter.copy_((parameter.float() + 0.5 * torch.randn(parameter.shape, generator=generator)
                                 ).to(parameter.dtype))
    return model


def tiny_llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    return uneven_norms(LlamaForCausalLM(LlamaConfig(**SMALL, num_hidden_layers=4, tie_word_embeddings=False))
                        ).to(torch.bfloat16).eval()


def tiny_gemma3():
    """Sliding-window layers (window 4, far shorter than the contexts) mixed with a full-attention one."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    config = Gemma3TextConfig(**SMALL, num_hidden_layers=4, head_dim=16, sliding_window=4, tie_word_embeddings=False,
                              layer_types=["sliding_attention", "full_attention", "sliding_attention",
                                           "sliding_attention"])
    torch.manual_seed(0)
    return uneven_norms(Gemma3ForCausalLM(config)).to(torch.bfloat16).eval()


def tiny_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=300, n_embd=64, n_layer=3, n_head=4, n_positions=64, bos_token_id=0,
                        eos_token_id=0)
    return uneven_norms(GPT2LMHeadModel(config)).to(torch.bfloat16).eval()


def random_pair(unequal: bool, seed: int = 1) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """BOS, 8 shared tokens, a differing middle, 12 shared tokens: longer than the tiny Gemma's window."""
    ids = torch.randint(4, 300, (20,), generator=torch.Generator().manual_seed(seed)).tolist()
    a = (2, *ids[:8], 11, 12, *ids[8:])
    b = (2, *ids[:8], 13, *ids[8:]) if unequal else (2, *ids[:8], 13, 14, *ids[8:])
    return a, b


BUILDERS = {"llama": tiny_llama, "gemma3-sliding": tiny_gemma3, "gpt2": tiny_gpt2}


@pytest.fixture(scope="module", params=list(BUILDERS))
def computing(request):
    torch.set_num_threads(1)
    return request.param, BUILDERS[request.param]()


@pytest.mark.parametrize("unequal", [False, True], ids=["equal-lengths", "unequal-lengths"])
def test_batched_methods_equal_full_passes_bit_for_bit(computing, unequal: bool) -> None:
    _, model = computing
    a, b = random_pair(unequal)
    pa, pb = passes(model, a, b)
    for source, target in ((pa, pb), (pb, pa)):
        full = P.patch(model, source, target, (5, 6), PatchMethod.FULL)
        assert full.effect != 0
        for method in (PatchMethod.LAYER_BATCH, PatchMethod.FROM_LAYER):
            fast = P.patch(model, source, target, (5, 6), method)
            assert fast.cells == full.cells, method  # floats compared exactly
            assert (fast.unpatched, fast.source_value) == (full.unpatched, full.source_value)


def test_a_batched_method_whose_checks_fail_is_computed_again_one_pass_per_cell(
        computing, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernels that round a batch's rows otherwise (simulated: F.linear moved by a few ulps for a batch of more than
    one row) fail a batched method's checks; patch_exact then gives full's cells, and says so in `method`."""
    _, model = computing
    a, b = random_pair(False)
    pa, pb = passes(model, a, b)
    full = P.patch(model, pa, pb, (5, 6), PatchMethod.FULL)
    assert P.patch_exact(model, pa, pb, (5, 6)).method == P.DEFAULT  # invariant kernels: the method asked for
    real = torch.nn.functional.linear

    def batch_dependent(input, weight, bias=None):
        out = real(input, weight, bias)
        return out + out.abs() * 2 ** -6 + 2 ** -6 if input.dim() == 3 and input.shape[0] > 1 else out

    monkeypatch.setattr(torch.nn.functional, "linear", batch_dependent)
    with pytest.raises(P.CheckError, match=r"^patching check failed \(method from-layer\): "):
        P.patch(model, pa, pb, (5, 6), PatchMethod.FROM_LAYER)
    exact = P.patch_exact(model, pa, pb, (5, 6), PatchMethod.FROM_LAYER)
    assert (exact.method, exact.cells) == (PatchMethod.FULL, full.cells)


# -- (e) an independent probe: one hook, one full pass, two logits --------------------------------------------------


def probe(model, layer_modules, target, layer: int, position: int, vector, ids) -> float:
    """The target with decoder layer ``layer``'s output at ``position`` replaced by ``vector``."""
    def replace(module, args, output):
        hidden = output[0] if isinstance(output, tuple) else output
        hidden = hidden.clone()
        hidden[0, position] = vector
        return (hidden, *output[1:]) if isinstance(output, tuple) else hidden

    handle = layer_modules[layer - 1].register_forward_hook(replace)
    try:
        with torch.inference_mode():
            logits = model(input_ids=torch.tensor([target]), logits_to_keep=1, use_cache=False).logits[0, -1]
    finally:
        handle.remove()
    return float(logits[ids[0]]) - float(logits[ids[1]])


def source_states(model, layer_modules, source):
    kept = {}
    handles = [m.register_forward_hook(lambda mod, args, out, k=k: kept.__setitem__(
        k, (out[0] if isinstance(out, tuple) else out)[0].clone())) for k, m in enumerate(layer_modules, start=1)]
    with torch.inference_mode():
        model(input_ids=torch.tensor([source]), use_cache=False)
    for handle in handles:
        handle.remove()
    return kept


@pytest.mark.parametrize("unequal", [False, True], ids=["equal-lengths", "unequal-lengths"])
def test_an_independent_probe_reproduces_every_cell(computing, unequal: bool) -> None:
    name, model = computing
    layer_modules = model.transformer.h if name == "gpt2" else model.model.layers
    a, b = random_pair(unequal, seed=3)
    kept = source_states(model, layer_modules, a)
    expected = [[probe(model, layer_modules, b, layer, t, kept[layer][s], (5, 6)) for s, t in align(a, b).pairs]
                for layer in range(1, len(layer_modules) + 1)]
    pa, pb = passes(model, a, b)
    for method in P.METHODS:  # full: by construction; the batched methods: as measured, bit for bit here
        assert P.patch(model, pa, pb, (5, 6), method).cells == expected, method


# -- models, outputs, imports ---------------------------------------------------------------------------------------


def test_layers_found_per_layout() -> None:
    assert P.find_layers(tiny_llama())[0] == "model.layers"
    assert P.find_layers(tiny_gpt2())[0] == "transformer.h"


def test_a_model_without_decoder_layers_is_named() -> None:
    class Odd(torch.nn.Module):
        pass

    with pytest.raises(P.PatchingError, match="cannot patch model class Odd: no decoder layers found"):
        P.find_layers(Odd())


def test_a_layer_that_returns_a_tuple_is_patched_in_its_first_element() -> None:
    """Older transformers: a decoder layer returns (hidden, ...)."""
    class Old(torch.nn.Module):
        def forward(self, x):
            return x * 2, "attention weights"

    layer = Old()
    vector = torch.full((3,), 7.0)
    job = P.Job(1, ((1, vector),))
    with Hooks() as hooks:
        P._hooked(hooks, [layer], job, batched=True)
        out = layer(torch.ones(1, 2, 3))
    assert not layer._forward_hooks
    assert out[1] == "attention weights"
    assert torch.equal(out[0], torch.tensor([[[2.0, 2.0, 2.0], [7.0, 7.0, 7.0]]]))
    assert P._hidden(out) is out[0] and P._hidden(out[0]) is out[0]


def test_from_layer_skips_the_layers_up_to_the_patched_one_and_puts_each_forward_back() -> None:
    """Layers 1..L return the given states without running; an instance ``forward`` (as accelerate's hooks set) is
    restored, a class one left as it was; a layer of old transformers gets (hidden,)."""
    class Counting(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return x + 1

    layers = [Counting() for _ in range(3)]
    wrapped = layers[0].forward
    layers[0].forward = wrapped  # an instance attribute, as accelerate leaves it
    hidden = torch.full((1, 2, 3), 5.0)
    with P._StartedAt(layers, 2, hidden, tupled=False):
        out = layers[2](layers[1](layers[0](torch.zeros(1, 2, 3))))
    assert torch.equal(out, hidden + 1) and [m.calls for m in layers] == [0, 0, 1]
    assert layers[0].__dict__["forward"] is wrapped and "forward" not in layers[1].__dict__
    with P._StartedAt(layers, 1, hidden, tupled=True):
        assert layers[0](torch.zeros(1)) == (hidden,)
    assert torch.equal(layers[1](torch.zeros(1)), torch.ones(1)) and layers[1].calls == 1


def test_an_unknown_method_is_refused(answer) -> None:
    source, target = passes(answer, SOURCE, TARGET)
    with pytest.raises(ValueError, match="^method must be one of full, layer-batch, from-layer, not 'fast'$"):
        P.patch(answer, source, target, TARGET_IDS, "fast")


def test_importing_patching_does_not_import_torch() -> None:
    code = ("import sys, pytest_gotchas.scoring.patching; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


# -- the metric's dtype (head.py) -----------------------------------------------------------------------------------


def test_the_metric_says_its_dtype_and_step_and_float32_keeps_the_checks(answer) -> None:
    source, target = passes(answer, SOURCE, TARGET)
    plain = P.patch(answer, source, target, TARGET_IDS)
    wide = P.patch(answer, source, target, TARGET_IDS, metric=PatchMetric.FLOAT32)  # a failed check would raise
    assert (plain.metric_dtype, wide.metric_dtype) == ("bfloat16", "float32")
    top = max(abs(v) for v in (*P._reading(target.logits, TARGET_IDS), *P._reading(source.logits, TARGET_IDS)))
    assert plain.step == spacing(top, "bfloat16") and wide.step == spacing(top, "float32")
    # The tiny model's logits are exact in bfloat16: float32 gives the same cells, the head alone recomputed.
    assert wide.cells == plain.cells and (wide.unpatched, wide.source_value) == (plain.unpatched, plain.source_value)
    assert all(check.passed for check in wide.checks)
