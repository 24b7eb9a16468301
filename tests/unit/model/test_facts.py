"""facts.py: what a load measures beyond the weights (the numerics probe, the shape invariance, the threads an xdist
worker keeps) is measured once and read back from the cache folder, and measured again when anything it depends on
changes: the model's files, the machine, the kernels, the threads, the library versions, the probe's code."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from helpers.loading import RULES, spec
from helpers.tinymodel import build_tiny_model

from pytest_gotchas.model import facts, numerics, row_readout
from pytest_gotchas.model.load import load_model


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", RULES)


@pytest.fixture
def probes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the probes run (each one numerics.probe call)."""
    calls: list[int] = []
    real = numerics.probe

    def counted(model):
        calls.append(1)
        return real(model)

    monkeypatch.setattr(numerics, "probe", counted)
    return calls


def test_a_second_load_reads_the_facts_and_runs_no_probe(folder: Path, tmp_path: Path, probes: list[int]) -> None:
    first = load_model(spec(folder), tmp_path)
    assert len(probes) == 1
    second = load_model(spec(folder), tmp_path)
    assert len(probes) == 1
    assert (second.info, second.invariance, second.notes) == (first.info, first.invariance, first.notes)
    kept = list((tmp_path / facts.FOLDER).glob("*.json"))
    assert len(kept) == 1 and json.loads(kept[0].read_text())["facts"]["fingerprint"] == first.info.numerics


@pytest.mark.parametrize("change", ["torch", "transformers", "cpu flags", "kernel variable", "threads", "kernels",
                                    "model files", "probe code"])
def test_a_change_in_what_the_facts_depend_on_measures_them_again(folder: Path, tmp_path: Path, probes: list[int],
                                                                  monkeypatch: pytest.MonkeyPatch, change: str,
                                                                  tmp_path_factory: pytest.TempPathFactory) -> None:
    model = folder
    if change == "model files":  # a copy of the model whose config differs: other facts
        model = tmp_path_factory.mktemp("copy") / "model"
        build_tiny_model(model, RULES)
        config = json.loads((model / "config.json").read_text())
        (model / "config.json").write_text(json.dumps({**config, "unused_setting": 1}))
    load_model(spec(folder), tmp_path)
    kinds = {"kernels": "float32-matmul"} if change == "kernels" else {}
    if change == "torch":
        monkeypatch.setattr(torch, "__version__", "0.0.0")
    elif change == "transformers":
        # the module the load imports (another test may have imported transformers afresh since this file did)
        monkeypatch.setattr(sys.modules["transformers"], "__version__", "0.0.0")
    elif change == "cpu flags":
        name, flags = numerics._cpuinfo()
        monkeypatch.setattr(numerics, "_cpuinfo", lambda: (name, flags ^ {"avx512_bf16"}))
    elif change == "kernel variable":
        monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    elif change == "probe code":
        monkeypatch.setattr(facts, "_code_digest", lambda: "edited")
    before = torch.get_num_threads()
    try:
        if change == "threads":
            torch.set_num_threads(max(1, before - 1) if before > 1 else 2)
        load_model(spec(model, **kinds), tmp_path)
        assert len(probes) == 2
        load_model(spec(model, **kinds), tmp_path)  # kept under the new key
        assert len(probes) == 2
    finally:
        torch.set_num_threads(before)


def test_equal_files_under_a_new_mtime_are_the_same_model(folder: Path, tmp_path: Path, probes: list[int]) -> None:
    load_model(spec(folder), tmp_path)
    config = folder / "config.json"
    config.write_text(config.read_text())  # the same bytes, a new mtime: hashed again, the same key
    load_model(spec(folder), tmp_path)
    assert len(probes) == 1


def test_kept_facts_put_the_row_at_a_time_head_back(folder: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    real = torch.nn.functional.linear

    def by_rows(input, weight, bias=None):  # rounds the head's rows otherwise among several (test_invariance.py)
        out = real(input, weight, bias)
        rows = input.numel() // input.shape[-1]
        return out + out.abs() * 2 ** -6 + 2 ** -6 if weight.shape[0] > 100 and rows > 1 else out

    monkeypatch.setattr(torch.nn.functional, "linear", by_rows)
    first = load_model(spec(folder), tmp_path)
    monkeypatch.setattr(numerics, "probe", lambda model: pytest.fail("the kept facts were not read"))
    second = load_model(spec(folder), tmp_path)
    assert type(second.model.get_output_embeddings()) is row_readout._row_by_row()
    assert (second.notes, second.invariance, second.info) == (first.notes, first.invariance, first.info)


def test_damaged_or_foreign_facts_are_measured_again(tmp_path: Path) -> None:
    parts = {"model": "m"}
    kept = facts.Facts("abc", 2, False, True, True, True)
    facts.write(tmp_path, parts, kept)
    assert facts.read(tmp_path, parts) == kept
    path = tmp_path / facts.FOLDER / f"{facts.key(parts)}.json"
    older = json.loads(path.read_text())
    del older["facts"]["shared_head"]  # kept by a version that did not measure it
    path.write_text(json.dumps(older))
    assert facts.read(tmp_path, parts) is None
    path.write_text(json.dumps({"environment": {"model": "other"}, "facts": {}}))
    assert facts.read(tmp_path, parts) is None
    path.write_text("{")
    assert facts.read(tmp_path, parts) is None
