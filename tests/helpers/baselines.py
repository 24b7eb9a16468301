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


# -- a baseline with entries its reader refuses (hostile input round two) --------------------------------------------

# The model section of a baseline file recorded with HEADER.
HEADER_YAML = """\
model: {device: cpu, dtype: bfloat16, hardware: cpu AVX512, name: tiny, numerics: '0000000000000000',
  softmax_dtype: bfloat16, torch: 2.13.0, transformers: 5.24.0, weights_sha256: %s}
""" % ("a" * 64)
# A baseline whose chapter `sets` ran before this version, with a pair id that had a `/`; chapter `floats` is fine.
PARTLY_UNREADABLE = """\
format: 2
count: {pairs: 2, verdicts: 3}
%spairs:
  floats/ab: pass
  sets/x/y: pass
verdicts:
  floats/a: {p_correct: 0.75, p_wrong: 0.125, verdict: ok}
  floats/b: {p_correct: 0.75, p_wrong: 0.125, verdict: ok}
  sets/c: {p_correct: .nan, p_wrong: 0.125, verdict: MISS}
""" % HEADER_YAML
# What a lenient read of PARTLY_UNREADABLE drops, each with why.
DROPPED = ["pairs: 'sets/x/y': keys are \"<chapter>/<id>\", each of letters, digits, `-`, `_` and `.`",
           "verdicts: sets/c: p_correct must be a probability or a mapping from primer to probability, got nan"]


def sets_chapter() -> ChapterInfo:
    return ChapterInfo(name="sets", label="ch sets", title="sets", path="sets.yaml", implementation_defined=False,
                       case_ids=["c", "d"], pairs={"cd": ["c", "d"]}, twins={})


def sets_results() -> list[CaseResult]:
    return [make_case(case_id, "sets", [make_run(0.75, 0.125)]) for case_id in ("c", "d")]
