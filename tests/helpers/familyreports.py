"""Reports whose chapters have families, made by hand: pairs drawn as instances of families (instance zero the
hand-written pair), each pair passed or not under each model as the test says, and the same report with its families
taken away (every unit its own cluster, as before families existed)."""

from __future__ import annotations

from dataclasses import replace

from helpers.results import make_case, make_run

from pytest_gotchas.results.report import Report
from pytest_gotchas.results.schema import ChapterInfo, FamilyInfo, Instance, Invocation, ModelInfo
from pytest_gotchas.results.vocabulary import FamilyKind

PASS = ((0.75, 0.125), (0.625, 0.25))  # both members ok
FAIL = ((0.75, 0.125), (0.125, 0.75))  # the second member a MISS


def model(model_id: str) -> ModelInfo:
    return ModelInfo(id=model_id, name=model_id, source=f"/m/{model_id}", weights_sha256=model_id[-1] * 64,
                     dtype="bfloat16", device="cpu", hardware="cpu AVX512", torch_version="2.13.0",
                     transformers_version="5.25.0", numerics="0" * 16, threads=2, bos="auto: <bos>")


def pair_chapter(name: str, families: dict[str, int], lone: int = 0) -> ChapterInfo:
    """A chapter of pair families (family id -> its pairs, instance zero included) and `lone` pairs in no family.
    Pair "<family>-<i>" has cases "<family>-<i>-a" and "-b"; pair "<family>-0" is instance zero."""
    pairs: dict[str, list[str]] = {}
    infos = {}
    for family, size in families.items():
        instances = []
        for i in range(size):
            pairs[f"{family}-{i}"] = [f"{family}-{i}-a", f"{family}-{i}-b"]
            instances.append(Instance(f"{family}-{i}", {"n": str(i)}, i))
        infos[family] = FamilyInfo(FamilyKind.PAIR, 54, instances)
    for j in range(lone):
        pairs[f"lone-{j}"] = [f"lone-{j}-a", f"lone-{j}-b"]
    cases = [case for members in pairs.values() for case in members]
    return ChapterInfo(name=name, label=f"ch {name}", title=name, path=f"{name}.yaml", implementation_defined=False,
                       case_ids=cases, pairs=pairs, twins={}, sha256="c" * 64, families=infos)


def pair_report(chapters: list[ChapterInfo], passed: dict[str, dict[str, list[bool]]], level: float = 0.05) -> Report:
    """`passed`: model -> chapter -> whether each pair passed, in the chapter's pair order. A passing pair's second
    member reads (0.625, 0.25); a failing one's (0.125, 0.75); every first member (0.75, 0.125), shifted a little per
    pair so that the log ratios vary."""
    results = []
    for model_id, by_chapter in passed.items():
        for info in chapters:
            for n, ((pair, members), ok) in enumerate(zip(info.pairs.items(), by_chapter[info.name])):
                first, second = PASS if ok else FAIL
                shift = (n % 5) / 64 + (0.0625 if model_id.endswith("b") else 0.0)
                results.append(make_case(members[0], info.name, [make_run(first[0] - shift, first[1])],
                                         model=model_id))
                results.append(make_case(members[1], info.name, [make_run(*second)], model=model_id))
    run = Invocation(command="pytest --gotchas", date="2026-12-06T00:00:00+00:00", level=level)
    return Report(results, chapters, [model(m) for m in passed], run)


def without_families(report: Report) -> Report:
    """The same results, every chapter's families dropped: each pair and case its own cluster."""
    return Report(report.results, [replace(i, families={}) for i in report.chapter_infos], report.model_infos,
                  report.run)
