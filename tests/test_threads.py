"""CPU threads under pytest-xdist: each worker gets its share of the cores (no timing is asserted here)."""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")

from pytest_gotchas.model.load import share_cpu_threads  # noqa: E402


@pytest.fixture
def threads(monkeypatch: pytest.MonkeyPatch):
    before = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    torch.set_num_threads(8)
    yield monkeypatch
    torch.set_num_threads(before)


def test_xdist_workers_share_the_cores(threads: pytest.MonkeyPatch) -> None:
    assert share_cpu_threads("cpu", 4) == 2
    assert torch.get_num_threads() == 2


@pytest.mark.parametrize("device, workers, omp", [("cpu", 0, None), ("cpu", 1, None), ("cuda:0", 4, None),
                                                  ("cpu", 4, "8")])
def test_left_alone(threads: pytest.MonkeyPatch, device: str, workers: int, omp: str | None) -> None:
    if omp is not None:
        threads.setenv("OMP_NUM_THREADS", omp)
    assert share_cpu_threads(device, workers) is None
    assert torch.get_num_threads() == 8
