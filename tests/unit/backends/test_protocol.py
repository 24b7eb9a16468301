"""backends/protocol.py's contract over every backend: each gives what the scorer calls for its role (and nothing else
is called), the transformers backend is a module scoring runs here, the vLLM backend an engine that hands rows by
context (a real engine where vLLM is importable), and a third backend written in one file (helpers/rowsbackend.py)
scores through the scorer and through the plugin with nothing else changed."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
from helpers import rowsbackend
from helpers.chapters import chapter_text
from helpers.cutcache import CHAPTER, RULES
from helpers.results import read_report
from helpers.tinymodel import build_tiny_model

from pytest_gotchas.backends import protocol, transformers, vllm
from pytest_gotchas.backends.protocol import (Asked, EngineBackend, Feature, LoadRequest, Loaded, ModuleBackend, Role,
                                              refusals)
from pytest_gotchas.cases.chapter import load_chapter
from pytest_gotchas.model.load import ModelSpec
from pytest_gotchas.results.verdict import Status
from pytest_gotchas.errors import ModelUnavailable
from pytest_gotchas.scoring.scorer import Scorer, ScoringConfig
from pytest_gotchas.scoring.slot import Clock, ModelSlot
from pytest_gotchas.truth.collect import Planned, chapter_info


def members(cls: type) -> set[str]:
    """What a Protocol class names, its bases' included: its annotated attributes, properties and methods."""
    found: set[str] = set()
    for base in cls.__mro__:
        if base.__module__ != protocol.__name__:
            continue
        found |= {name for name, value in vars(base).items() if not name.startswith("_")
                  and (inspect.isfunction(value) or isinstance(value, property))}
        found |= set(getattr(base, "__annotations__", {}))
    return found


ROLES = {Role.MODULE: members(ModuleBackend), Role.ENGINE: members(EngineBackend)}
BACKEND, ROWS = members(ModuleBackend) | members(EngineBackend), members(protocol.ContextLogits)
# What only a module can do: an engine's backend declares each, so that the run refuses it before the load.
MODULE_ONLY = {Feature.LAYERS, Feature.PRECISION_CHECK, Feature.PATCH, Feature.PATCH_COMPONENTS, Feature.PATCH_SCREEN}


def satisfies(backend: Any, capabilities: protocol.Capabilities) -> None:
    assert backend.role in ROLES
    missing = [name for name in ROLES[backend.role] if not hasattr(backend, name)]
    assert not missing, missing
    assert isinstance(backend.dtype, str) and isinstance(backend.model_type, str)
    assert isinstance(backend.batch_invariant, bool)
    other = ROLES[Role.ENGINE if backend.role is Role.MODULE else Role.MODULE] - members(Loaded) - {"role"}
    assert not [name for name in other if hasattr(backend, name)], "a model to run, or rows by context: exactly one"
    if backend.role is Role.ENGINE:
        assert not [name for name in ROWS if not hasattr(backend.context_logits(), name)]
        assert MODULE_ONLY <= {item.feature for item in capabilities.cannot}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("tiny")
    return build_tiny_model(root / "model", RULES), root / "cache"


def request(folder: Path, cache: Path) -> LoadRequest:
    return LoadRequest(spec=ModelSpec(name=str(folder), dtype="bfloat16", device="cpu"), model_cache=cache)


def planned(tmp_path: Path) -> Planned:
    path = tmp_path / "a.yaml"
    path.write_text(chapter_text("""
    - id: one
      transcript: ">>> print('a7')\\na█"
      correct: "7"
      wrong: "8"
    """), encoding="utf-8")
    chapter = load_chapter(path, "a.yaml")
    case = chapter.cases[0]
    return Planned(case, chapter, chapter_info(chapter, "a.yaml"), chapter.prompts(case), Status.SCORED)


def test_the_scorer_calls_only_the_protocol() -> None:
    """Every attribute the scorer and its model slot read of a backend is a member of the protocol (ast of
    scoring/scorer.py and scoring/slot.py)."""
    import ast

    import pytest_gotchas.scoring.scorer as scorer
    import pytest_gotchas.scoring.slot as slot

    for module in (scorer, slot):
        text = Path(module.__file__).read_text(encoding="utf-8")
        used = {node.attr for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name) and node.value.id == "loaded"}
        assert used and used <= BACKEND, (module.__name__, used - BACKEND)
        assert "getattr(loaded" not in text


def test_the_transformers_backend_runs_its_model_here(tiny: tuple[Path, Path]) -> None:
    import torch

    backend = transformers.load(request(*tiny))
    satisfies(backend, transformers.CAPABILITIES)
    assert backend.role is Role.MODULE and transformers.CAPABILITIES.cannot == ()
    assert backend.dtype == "bfloat16" and backend.model_type.startswith("gemma")
    assert backend.float32().dtype == torch.float32 and backend.tokenizer_loaded
    backend.close()


def test_the_vllm_backend_gives_rows_by_context_without_vllm_installed() -> None:
    """The class alone (the engine is a stand-in): no torch module, rows by context, no float32 twin, and close
    shuts the engine down and gives back torch's threads."""
    shut, restored = [], []

    class Core:
        def shutdown(self) -> None:
            shut.append(True)

    class Engine:
        engine_core = Core()

    class LLM:
        llm_engine = Engine()

    backend = vllm.VllmBackend(LLM(), "bfloat16", "gemma3_text", vocab_size=8, max_len=16,
                               restore=lambda: restored.append(True))
    satisfies(backend, vllm.CAPABILITIES)
    assert backend.role is Role.ENGINE and backend.context_logits() is backend
    backend.close()
    assert shut == restored == [True] and backend.llm is None


@pytest.mark.slow
def test_the_vllm_backend_through_a_real_engine(tmp_path: Path) -> None:
    pytest.importorskip("vllm")
    folder = build_tiny_model(tmp_path / "model", RULES, head_dim=32)  # vLLM's CPU attention takes no head_dim 8
    backend = vllm.load(request(folder, tmp_path / "cache"))
    try:
        satisfies(backend, vllm.CAPABILITIES)
        context = tuple(backend.tokenizer("a")["input_ids"])
        assert backend.fetch([context]) == [context] and backend.logits[context].shape == (backend.vocab_size,)
        assert backend.info is not None and backend.info.backend is not None and backend.info.backend.name == "vllm"
    finally:
        backend.close()


def test_the_refusals_are_the_declared_capabilities() -> None:
    asked = [Asked(Feature.LAYERS, "--gotchas-layers"), Asked(Feature.DEVICE, "--gotchas-device cuda", "cuda"),
             Asked(Feature.DEVICE, "--gotchas-device mps", "mps"), Asked(Feature.WORKERS, "-n 2")]
    assert [m.split(" cannot")[0] for m in refusals("vllm", vllm.CAPABILITIES, ["vllm:x"], asked)] == [
        "--gotchas-layers", "--gotchas-device mps", "-n 2"]
    assert refusals("transformers", transformers.CAPABILITIES, ["x"], asked) == []
    assert refusals("rows", rowsbackend.CAPABILITIES, ["rows:x"], asked[2:3]) == []  # it takes any device
    assert refusals("rows", rowsbackend.CAPABILITIES, ["rows:x"], asked[:1]) == [
        "--gotchas-layers cannot be used with the rows backend (rows:x): a server returns the last layer's logits "
        "only"]


def test_a_backend_in_one_file_scores_as_transformers_does(tiny: tuple[Path, Path], tmp_path: Path) -> None:
    """The third backend's rows by context go through scoring/engine_rows.py: on the tiny model (whose separate
    passes are the one-pass path's bits) every reading is the transformers backend's."""
    third = rowsbackend.load(request(*tiny))
    satisfies(third, rowsbackend.CAPABILITIES)
    plan = planned(tmp_path)
    results = [Scorer(model_id="tiny", slot=ModelSlot(lambda b=b: b, Clock()), config=ScoringConfig(reading="text"),
                      planned=lambda: [plan]).score(plan)
               for b in (third, transformers.load(request(*tiny)))]
    ours, theirs = ([(run.readings, run.top) for run in r.runs] for r in results)
    assert ours == theirs and results[0].verdict == results[1].verdict
    # It takes no tree mask: each context is a prompt of its own to it, and the model it reported says so.
    assert [r.runs[0].incremental_steps for r in results] == [0, results[1].runs[0].incremental_steps]
    assert len(third.fetched[0]) >= 1  # the prefetch put the case's contexts in one call first
    slot = ModelSlot(lambda: third, Clock())
    slot.get()
    slot.release()
    assert third.closed


def test_an_engine_that_does_not_declare_what_only_a_module_does_stops_the_session(tiny: tuple[Path, Path],
                                                                                    tmp_path: Path) -> None:
    """A backend whose CAPABILITIES leave out the logit lens is not refused before the load: the scorer, which
    needs a torch module for it, says so once and the model counts as unavailable."""
    third = rowsbackend.load(request(*tiny))
    plan = planned(tmp_path)
    scorer = Scorer(model_id="tiny", slot=ModelSlot(lambda: third, Clock()), config=ScoringConfig(layers=True))
    with pytest.raises(ModelUnavailable) as raised:
        scorer.score(plan)
    assert str(raised.value) == (
        f"--gotchas-layers needs a torch module to run, and model {str(tiny[0])!r} is read through an engine that "
        "gives logits rows by context; its backend should declare that it cannot (backends/protocol.py's "
        "Capabilities), so that the run refuses it before the load")


def test_a_backend_in_one_file_through_the_plugin(pytester: pytest.Pytester, tiny: tuple[Path, Path],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """`--gotchas-model rows:FOLDER` finds the backend by its module's name; what it declares it cannot do is a
    usage error naming it."""
    monkeypatch.setitem(__import__("sys").modules, "pytest_gotchas.backends.rows", rowsbackend)
    (pytester.path / "demo.yaml").write_text(CHAPTER)
    model = f"rows:{tiny[0]}"
    result = pytester.runpytest_inprocess("--gotchas", "--gotchas-model", model, "--gotchas-json", "out.json",
                                          "-p", "no:randomly", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    data = read_report(pytester.path / "out.json")
    assert {r["model"] for r in data["cases"]} == {"rows-model"}
    # a backend that takes no tree mask: each of the text reading's contexts a prompt of its own, and said
    assert (data["models"][0]["text_path"], data["models"][0]["attention"]) == ("contexts", "")
    assert data["run"]["timings"]["tree_calls"] == 0
    assert [r["verdict"] for r in data["cases"]] == ["ok", "ok"]
    refused = pytester.runpytest_inprocess("--gotchas", "--gotchas-model", model, "--gotchas-layers")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*--gotchas-layers cannot be used with the rows backend (rows:*): a server "
                                  "returns the last layer's logits only*"])
