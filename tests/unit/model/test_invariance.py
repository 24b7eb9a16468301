"""invariance.py and row_readout.py: kernels that round a row by the shape of its product (simulated here by a
linear that perturbs its output when it computes several rows, as oneDNN's bfloat16 emulation did on an Intel
AVX-512 Xeon) are found at load, the head is then computed one row at a time, a batch is not used, and the run says
so; where the kernels are invariant nothing changes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from helpers.loading import RULES, spec
from helpers.tinymodel import build_tiny_model

from pytest_gotchas.backends.transformers import TransformersBackend
from pytest_gotchas.model import invariance, numerics, row_readout
from pytest_gotchas.model.invariance import INVARIANT, Invariance
from pytest_gotchas.model.load import LoadedModel, ModelLoadError, load_model
from pytest_gotchas.scoring import scorer
from pytest_gotchas.scoring.patching import DEFAULT
from pytest_gotchas.results.vocabulary import PatchMethod

ROWS_NOTE = ("on this CPU the head's bfloat16 product rounds a row otherwise among several rows than alone (measured "
             "at load): each row of the head was computed alone, as the reference pass computes it")
BATCH_NOTE = ("on this CPU a batch of prompts computes other bfloat16 bits than a prompt alone (measured at load): "
              "every prompt ran alone (batch size 1), and patching used one pass per cell (method full)")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", RULES)


def shape_dependent(monkeypatch: pytest.MonkeyPatch, *, head_rows: bool = False, batch: bool = False) -> None:
    """F.linear that moves its output by a few ulps when the head computes more than one row (`head_rows`) or a
    layer computes more than one prompt (`batch`; the tiny model's head is where it shows): what such kernels do,
    on any CPU."""
    real = torch.nn.functional.linear

    def linear(input, weight, bias=None):
        out = real(input, weight, bias)
        rows = input.numel() // input.shape[-1]
        is_head = weight.shape[0] > 100  # the tiny model's vocabulary is larger than its hidden size
        if (head_rows and is_head and rows > 1) or (batch and input.dim() == 3 and input.shape[0] > 1):
            out = out + out.abs() * 2 ** -6 + 2 ** -6
        return out

    monkeypatch.setattr(torch.nn.functional, "linear", linear)


def probe(loaded: LoadedModel) -> list[int]:
    return numerics.probes(*numerics.probe_args(loaded.model))[0]


def test_the_simulated_kernels_are_found(folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = load_model(spec(folder), tmp_path).model
    assert invariance.measure(model) == INVARIANT
    shape_dependent(monkeypatch, head_rows=True)
    assert invariance.measure(model) == Invariance(rows=False, batch=False)  # a batch of two: two head rows
    monkeypatch.undo()
    shape_dependent(monkeypatch, batch=True)
    assert invariance.measure(model) == Invariance(rows=True, batch=False)


def test_a_head_that_rounds_by_rows_is_computed_a_row_at_a_time(folder: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    shape_dependent(monkeypatch, head_rows=True)
    loaded = load_model(spec(folder), tmp_path)
    assert type(loaded.model.get_output_embeddings()).__name__ == "RowByRow"
    assert loaded.invariance == INVARIANT  # both hold once the head computes one row at a time
    assert loaded.notes == [ROWS_NOTE]
    ids = torch.tensor([probe(loaded)])
    with torch.inference_mode():
        every = loaded.model(input_ids=ids, use_cache=False).logits[0, -1]
        kept = loaded.model(input_ids=ids, logits_to_keep=torch.tensor([3, ids.shape[1] - 1]), use_cache=False)
        alone = loaded.model(input_ids=ids, logits_to_keep=1, use_cache=False).logits[0, -1]
    assert torch.equal(every, alone) and torch.equal(kept.logits[0, -1], alone)  # the reference pass's bits


def test_a_batch_that_rounds_otherwise_is_not_used(folder: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    shape_dependent(monkeypatch, batch=True)
    loaded = load_model(spec(folder), tmp_path)
    assert type(loaded.model.get_output_embeddings()) is torch.nn.Linear
    assert loaded.invariance == Invariance(rows=True, batch=False)
    assert loaded.notes == []  # the load knows no batch size: the scorer says what the run asked for
    config = scorer.ScoringConfig(batch_size=8)
    backend = TransformersBackend(loaded)
    assert (scorer.effective_batch_size(backend, config), scorer.patch_method(backend)) == (1, PatchMethod.FULL)


def test_the_batch_note_says_only_what_the_run_asked_for() -> None:
    assert invariance.batch_note("bfloat16", batched=False, patched=False) is None
    assert invariance.batch_note("bfloat16", batched=True, patched=True) == BATCH_NOTE
    head = BATCH_NOTE.split(": every")[0]
    assert invariance.batch_note("bfloat16", batched=True, patched=False) == (
        head + ": every prompt ran alone (batch size 1)")
    assert invariance.batch_note("bfloat16", batched=False, patched=True) == (
        head + ": patching used one pass per cell (method full)")


def test_invariant_kernels_change_nothing(folder: Path, tmp_path: Path) -> None:
    loaded = load_model(spec(folder), tmp_path)
    assert type(loaded.model.get_output_embeddings()) is torch.nn.Linear
    assert (loaded.invariance, loaded.notes) == (INVARIANT, [])
    config = scorer.ScoringConfig(batch_size=8)
    backend = TransformersBackend(loaded)
    assert (scorer.effective_batch_size(backend, config), scorer.patch_method(backend)) == (8, DEFAULT)


def test_a_head_that_stays_shape_dependent_is_a_load_error(folder: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    real = torch.nn.functional.linear

    def by_call_shape(input, weight, bias=None):  # rounds by the input's rank: a row alone cannot help
        out = real(input, weight, bias)
        moved = weight.shape[0] > 100 and input.dim() == 3 and input.shape[1] > 1
        return out + out.abs() * 2 ** -6 + 2 ** -6 if moved else out

    monkeypatch.setattr(torch.nn.functional, "linear", by_call_shape)
    monkeypatch.setattr(row_readout, "apply", lambda model: None)
    with pytest.raises(ModelLoadError) as error:
        load_model(spec(folder), tmp_path)
    assert str(error.value) == (
        f"cannot load model {str(folder)!r}: its head rounds a row otherwise among several rows than alone, even "
        "computed one row at a time; please report this CPU and model")


def test_the_row_by_row_head_keeps_shapes_and_values() -> None:
    head = torch.nn.Linear(4, 6, bias=True)
    x = torch.randn(2, 3, 4)
    with torch.no_grad():  # each row alone, in the shape of a pass that keeps one position
        expected = torch.stack([torch.stack([head(x[b, t].view(1, 1, 4))[0, 0] for t in range(3)]) for b in range(2)])
    model = type("M", (), {"get_output_embeddings": lambda self: head})()
    row_readout.apply(model)
    with torch.no_grad():
        assert torch.equal(head(x), expected)
    with pytest.raises(TypeError, match="the head is a Embedding, not a torch.nn.Linear"):
        row_readout.apply(type("M", (), {"get_output_embeddings": lambda self: torch.nn.Embedding(3, 2)})())


def test_the_precision_checks_float32_copy_is_measured_on_its_own(folder: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = load_model(spec(folder), tmp_path)
    shape_dependent(monkeypatch, head_rows=True)  # float32 kernels that round by shape, the bfloat16 ones did not
    upcast = loaded.float32()
    assert (upcast.dtype, type(upcast.get_output_embeddings()).__name__) == (torch.float32, "RowByRow")
    assert type(loaded.model.get_output_embeddings()) is torch.nn.Linear


def test_bits_are_compared_nan_included() -> None:
    nan = torch.tensor([float("nan"), 1.0], dtype=torch.bfloat16)
    assert invariance.same_bits(nan, nan.clone()) and not torch.equal(nan, nan.clone())
    assert not invariance.same_bits(torch.tensor([0.0]), torch.tensor([-0.0]))  # equal values, other bits
    assert not invariance.same_bits(torch.zeros(2), torch.zeros(3))
