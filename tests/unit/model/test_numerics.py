"""numerics.py: the fingerprint is the exact logits of fixed probes, and an xdist worker keeps all threads on a CPU
where the thread count changes the bits (simulated here)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from helpers.tinymodel import build_tiny_model

from pytest_gotchas.model import numerics
from pytest_gotchas.model.load import ModelSpec, load_model
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
    monkeypatch.setattr(numerics, "fingerprint", lambda m: f"threads{torch.get_num_threads()}")
    try:
        torch.set_num_threads(4)
        loaded = load_model(ModelSpec(name=str(model), device="cpu", workers=2), tmp_path)
        assert (loaded.info.threads, loaded.info.numerics, torch.get_num_threads()) == (4, "threads4", 4)
        assert loaded.notes == [
            "on this CPU the number of threads changes bfloat16 logits (2 threads and 4 give other bits): each xdist "
            "worker keeps 4 threads, as a serial run does, so that -n gives the same numbers (set OMP_NUM_THREADS to "
            "choose)"]
        monkeypatch.setattr(numerics, "fingerprint", lambda m: "same bits")
        torch.set_num_threads(4)
        shared = load_model(ModelSpec(name=str(model), device="cpu", workers=2), tmp_path)
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
