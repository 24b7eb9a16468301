"""bench/device.py's steps without a GPU, a model or vLLM: each step that cannot run says why in place of its figures,
the budget stops further steps, and the children get the device through PYTEST_ADDOPTS. Nothing is run here."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench import device

MACHINE = SimpleNamespace(date="Wed Dec  2 2026", nproc=16, memory="128 GiB", cpu="x86", cuda="True",
                          python="3.12.3", torch="2.11.0", transformers="5.17.0", load="0.00 0.00 0.00")


@pytest.fixture
def stubbed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    ran: list[str] = []
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:randomly")
    monkeypatch.setattr(device, "machine", lambda: MACHINE)
    monkeypatch.setattr(device, "vllm_version", lambda: None)
    monkeypatch.setattr(device, "folder_of", lambda model: (None, "not on this machine (No module named 'gguf')")
                        if model == "smollm2-135m" else (Path("/models/gemma"), ""))
    monkeypatch.setattr(device, "transformers_step", lambda root, model, folder: ran.append(model) or [f"- {model}"])
    monkeypatch.setattr(device, "patching_step", lambda root, folder: ran.append("patch") or ["| patch table |"])
    return ran


def test_each_step_runs_or_says_why_not(stubbed: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    device.main(["--budget", "100"])
    out = capsys.readouterr().out
    assert stubbed == ["gemma-3-270m", "patch"]
    assert os.environ["PYTEST_ADDOPTS"] == "-p no:randomly --gotchas-device cuda"
    assert out.startswith("## On the device (cuda)\n\ndate: Wed Dec  2 2026; 16 cores, 128 GiB, x86; CUDA available: "
                          "True\nsoftware: python 3.12.3, torch 2.11.0, transformers 5.17.0, vLLM not installed; ")
    assert ("- gemma-3-270m\n"
            "- gemma-3-270m through vllm: not run, vLLM is not installed (README: A second backend: vLLM)\n"
            "- smollm2-135m through transformers: not run, the model is not on this machine (No module named "
            "'gguf')\n"
            "- smollm2-135m through vllm: not run, the model is not on this machine (No module named 'gguf')\n"
            "\n| patch table |\n") in out


def test_no_step_starts_once_the_budget_is_spent(stubbed: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    device.main(["--budget", "0", "--device", "cpu", "--steps", "transformers", "patching"])
    out = capsys.readouterr().out
    assert stubbed == []
    assert "- gemma-3-270m through transformers: not run, the budget of 0 s was spent (" in out
    assert "- --gotchas-patch: not run, the budget of 0 s was spent (" in out
    assert "through vllm" not in out
