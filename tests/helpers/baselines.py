"""Results and baselines built by hand for the tests of baseline/ and of its wording: a chapter of four cases in
two pairs, runs and cases of any probabilities on a tiny model's description, and the baseline recording them."""

from __future__ import annotations

from helpers.results import make_case, make_run

from pytest_gotchas.baseline import compare as cmp
from pytest_gotchas.baseline import store
from pytest_gotchas.results.schema import CaseResult, ChapterInfo, ModelInfo, Run
from pytest_gotchas.results.verdict import Status

SCORED, SKIPPED, UNSCORED = Status.SCORED, Status.SKIPPED, Status.UNSCORED

SHA = "a" * 64
MODEL = ModelInfo(id="tiny", name="tiny", source="/m/tiny", weights_sha256=SHA, dtype="bfloat16", device="cpu",
                  hardware="cpu AVX512", torch_version="2.13.0", transformers_version="5.24.0", numerics="0" * 16)
HEADER = store.Header(name="tiny", weights_sha256=SHA, dtype="bfloat16", softmax_dtype="bfloat16", device="cpu",
                   hardware="cpu AVX512", numerics="0" * 16, torch="2.13.0", transformers="5.24.0")


def info(name: str = "sets", cases: tuple[str, ...] = ("a", "b", "c", "d"),
         pairs: dict[str, list[str]] | None = None) -> ChapterInfo:
    return ChapterInfo(name=name, label=f"ch {name}", title=name, path=f"{name}.yaml", implementation_defined=False,
                       case_ids=list(cases), pairs={"ab": ["a", "b"], "cd": ["c", "d"]} if pairs is None else pairs,
                       twins={})


def run(p_correct: float, p_wrong: float, primer: str | None = None) -> Run:
    return make_run(p_correct, p_wrong, primer)


def case(case_id: str, p_correct: float = 0.75, p_wrong: float = 0.125, chapter: str = "sets",
         runs: list[Run] | None = None, status: str = SCORED, model: str = MODEL.id) -> CaseResult:
    """A result of chapter `chapter` (a key of `infos()`) by model `model` (a key of `models()`)."""
    return make_case(case_id, chapter, runs or [run(p_correct, p_wrong)], status, model)


OK_ = (0.75, 0.125)
MISS_ = (0.125, 0.75)


def all_ok() -> list[CaseResult]:
    return [case("a"), case("b"), case("c"), case("d", *MISS_)]


def infos(*chapters: ChapterInfo) -> dict[str, ChapterInfo]:
    """The chapters results refer to by name: `info()` unless others are given."""
    return {c.name: c for c in chapters or (info(),)}


def recorded(results: list[CaseResult] | None = None, chapters: dict[str, ChapterInfo] | None = None) -> store.Baseline:
    new, _ = cmp.update(None, results or all_ok(), chapters or infos(), HEADER)
    return new
