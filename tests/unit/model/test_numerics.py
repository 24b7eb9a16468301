"""numerics.py: the fingerprint is the exact bits of every numeric path a reading takes on fixed probes (a change in
one path, simulated by moving its output one ulp, changes that path's part and the fingerprint, and no other part),
and an xdist worker keeps all threads on a CPU where the thread count changes the bits (simulated here)."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from helpers.tinymodel import build_tiny_model

from pytest_gotchas.model import float32_matmul, numerics, paths, row_readout
from pytest_gotchas.model.load import ModelSpec, load_model
from helpers.attention import own_attention
from helpers.numerics import RULES


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", RULES)


def test_a_worker_keeps_all_threads_where_the_thread_count_changes_the_bits(tmp_path: Path, model: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """As measured on an Intel AMX CPU; simulated here: the fingerprint depends on the thread count."""
    before = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(4)), raising=False)
    def by_threads(model):
        return numerics.Probe(parts=(("full", f"threads{torch.get_num_threads()}"),), rows=True, batch=True)

    monkeypatch.setattr(numerics, "probe", by_threads)
    try:
        torch.set_num_threads(4)
        loaded = load_model(ModelSpec(name=str(model), device="cpu", workers=2), tmp_path / "a")
        expected = numerics.Probe(parts=(("full", "threads4"),), rows=True, batch=True).fingerprint
        assert (loaded.info.threads, loaded.info.numerics, torch.get_num_threads()) == (4, expected, 4)
        assert loaded.notes == [
            "on this CPU the number of threads changes bfloat16 logits (2 threads and 4 give other bits): each xdist "
            "worker keeps 4 threads, as a serial run does, so that -n gives the same numbers (set OMP_NUM_THREADS to "
            "choose)"]
        monkeypatch.setattr(numerics, "probe", lambda m: numerics.Probe(parts=(), rows=True, batch=True))
        torch.set_num_threads(4)
        shared = load_model(ModelSpec(name=str(model), device="cpu", workers=2), tmp_path / "b")
        assert (shared.info.threads, torch.get_num_threads(), shared.notes) == (2, 2, [])
    finally:
        torch.set_num_threads(before)


def test_the_fingerprint_is_the_exact_logits_of_fixed_probes(model: Path, tmp_path: Path) -> None:
    loaded = load_model(ModelSpec(name=str(model), device="cpu"), tmp_path)
    first = numerics.fingerprint(loaded.model)
    assert numerics.fingerprint(loaded.model) == first
    nudged = loaded.float32()  # other bits: float32 logits
    assert numerics.fingerprint(nudged) != first
    assert [len(p) for p in numerics.probes(100, 2)] == [17, 321]
    # A model with learned positions has none past its last: the probes stop there.
    assert [len(p) for p in numerics.probes(100, 2, positions=64)] == [17, 64]
    assert numerics.max_positions(SimpleNamespace(n_positions=64)) == 64
    assert numerics.max_positions(SimpleNamespace()) is None


def ulp(tensor: torch.Tensor, every: bool = False) -> torch.Tensor:
    """`tensor` with its first element (or `every` element) one ulp up: the smallest change a path's kernels can
    make."""
    if every:
        return torch.nextafter(tensor, torch.full_like(tensor, float("inf")))
    out = tensor.clone()
    flat = out.view(-1)
    flat[0] = torch.nextafter(flat[0], torch.tensor(float("inf"), dtype=flat.dtype))
    return out


@pytest.fixture
def plain(model: Path, tmp_path: Path) -> torch.nn.Module:
    return load_model(ModelSpec(name=str(model), device="cpu"), tmp_path).model


def nudged_forward(monkeypatch: pytest.MonkeyPatch, model: torch.nn.Module, when) -> None:
    """The model's forward moving its logits by one ulp on the passes `when(input_ids, kwargs)` picks: a library or
    kernel change on that path alone."""
    real = model.forward

    @functools.wraps(real)  # the cache's argument is found by the signature
    def forward(*args, **kwargs):
        out = real(*args, **kwargs)
        if when(kwargs["input_ids"], kwargs):
            out.logits = ulp(out.logits)
        return out

    monkeypatch.setattr(model, "forward", forward)


def changed(before: numerics.Probe, after: numerics.Probe) -> set[str]:
    return {path for (path, a), (_, b) in zip(before.parts, after.parts) if a != b}


def test_the_probe_hashes_every_path_and_is_stable(plain: torch.nn.Module) -> None:
    first = numerics.probe(plain)
    assert [path for path, _ in first.parts] == list(numerics.PATHS)
    assert numerics.probe(plain) == first  # nothing changed: no path changes
    assert (first.rows, first.batch) == (True, True)
    empty = hashlib.sha256().hexdigest()
    assert all(digest != empty for _, digest in first.parts)  # every path ran (the tiny model's cache extends)


@pytest.mark.parametrize(("path", "when"), [
    ("full", lambda ids, kw: ids.shape == (1, 321)),  # the long probe's full pass
    ("batch", lambda ids, kw: ids.shape[0] > 1),
    ("steps", lambda ids, kw: (kw.get("past_key_values") is not None or kw.get("cache") is not None)
     and kw.get("attention_mask") is None),
    ("tree", lambda ids, kw: kw.get("attention_mask") is not None),  # only the tree passes a mask
])
def test_a_change_in_one_passs_path_changes_that_part_and_the_fingerprint(
        plain: torch.nn.Module, monkeypatch: pytest.MonkeyPatch, path: str, when) -> None:
    before = numerics.probe(plain)
    nudged_forward(monkeypatch, plain, when)
    after = numerics.probe(plain)
    assert changed(before, after) == {path}
    assert after.fingerprint != before.fingerprint


def test_a_change_in_the_kv_cache_step_changes_the_fingerprint(plain: torch.nn.Module,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """As transformers 5.24 -> 5.25 moved seven text readings and no token reading: the step the text reading takes
    (scoring/rows.py calls the same function)."""
    before = numerics.probe(plain)
    real = paths.step
    monkeypatch.setattr(paths, "step", lambda *args: ulp(real(*args)))
    after = numerics.probe(plain)
    assert changed(before, after) == {"steps"} and after.fingerprint != before.fingerprint


def test_a_change_in_the_tree_changes_the_fingerprint(plain: torch.nn.Module, monkeypatch: pytest.MonkeyPatch) -> None:
    """The text reading's chains of a prompt in one call (scoring/rows.py calls the same function)."""
    before = numerics.probe(plain)
    real = paths.tree_step
    monkeypatch.setattr(paths, "tree_step", lambda *args: ulp(real(*args)))
    after = numerics.probe(plain)
    assert changed(before, after) == {"tree"} and after.fingerprint != before.fingerprint


def test_a_model_that_takes_no_tree_has_no_tree_part(plain: torch.nn.Module) -> None:
    """Its fingerprint is the one it had before the tree was a path: its baselines still compare as the same
    kernels."""
    taking = numerics.probe(plain)
    own_attention(plain)
    assert not paths.takes_tree(plain)
    stepping = numerics.probe(plain)
    assert [path for path, _ in stepping.parts] == [path for path in numerics.PATHS if path != "tree"]
    assert stepping.parts == taking.parts[:-1]
    assert stepping.fingerprint == numerics.Probe(parts=taking.parts[:-1], rows=True, batch=True).fingerprint


def test_a_change_in_the_float32_softmax_changes_the_fingerprint(plain: torch.nn.Module,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    before = numerics.probe(plain)
    real = paths.softmax32
    monkeypatch.setattr(paths, "softmax32", lambda logits: ulp(real(logits)))
    after = numerics.probe(plain)
    assert changed(before, after) == {"softmax"} and after.fingerprint != before.fingerprint


def test_a_change_in_the_float32_matmul_kernels_changes_the_fingerprint(plain: torch.nn.Module,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    before = numerics.probe(plain)
    real = float32_matmul.linear32
    monkeypatch.setattr(float32_matmul, "linear32", lambda *args: ulp(real(*args)))
    after = numerics.probe(plain)
    assert changed(before, after) == {"float32-matmul"} and after.fingerprint != before.fingerprint


def test_on_the_float32_matmul_path_its_kernels_are_in_every_pass(model: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = load_model(ModelSpec(name=str(model), device="cpu", kernels="float32-matmul"), tmp_path).model
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():  # the tiny model's layers add zeros to the residual stream: make them count
        for module in path.modules():
            if type(module).__name__ == "Float32Matmul":
                module.weight.copy_(torch.randn(module.weight.shape, generator=generator) * 0.05)
    before = numerics.probe(path)
    real = float32_matmul.linear32
    monkeypatch.setattr(float32_matmul, "linear32", lambda *args: ulp(real(*args), every=True))
    assert changed(before, numerics.probe(path)) == set(numerics.PATHS)


def test_a_change_in_the_heads_rows_changes_the_fingerprint(plain: torch.nn.Module,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The head over several positions (the text reading's main pass), and the same head a row at a time."""
    before = numerics.probe(plain)
    real = torch.nn.functional.linear
    head = plain.get_output_embeddings().weight

    def linear(input, weight, bias=None):  # the head's product of several rows, one ulp off
        out = real(input, weight, bias)
        return ulp(out) if weight is head and input.numel() // input.shape[-1] > 1 else out

    monkeypatch.setattr(torch.nn.functional, "linear", linear)
    after = numerics.probe(plain)
    assert changed(before, after) == {"head-rows", "batch", "tree"}  # a batch, a tree: several rows of the head
    monkeypatch.undo()

    row_readout.apply(plain)
    by_rows = numerics.probe(plain)
    assert by_rows == before  # invariant kernels: a row at a time gives the same bits
    real_row = row_readout.row_product
    monkeypatch.setattr(row_readout, "row_product", lambda *args: ulp(real_row(*args)))
    moved = numerics.probe(plain)
    assert "head-rows" in changed(before, moved) and moved.fingerprint != before.fingerprint
    assert "float32-matmul" not in changed(before, moved)
