"""The rules of merging reports: which results, models and chapters of several reports can be one report, and that
report. `gotchas merge` (cli/merge.py) is their face: it reads the files, words a refusal (report/wording_merge.py)
and prints.

Refused, each as a MergeRefusal naming both reports (the types below carry what is wrong, the wording is the
report/ floor's): whatever would make the merged numbers a mix that no single run could have given: two different
results for one model and case (identical ones, from overlapping shards, are kept once), two versions of one chapter
file (by the sha256 collection records), one model described two ways (other weights, dtype, hardware or library
versions), one model under two names (the same weights run the same way: a report's names can be edited), and a
report whose verdicts, pair results or rollups are not what its probabilities give (an edited file,
results/consistency.py). A document of a format this version cannot read raises results/reading.py's
UnreadableReport. For a series of models or checkpoints (cli/merge_series.py's options): a report's one model
renamed in its JSON data before it is read, and the level and order the inputs recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Union

from .baselines import BaselineOutcome
from .bounds import versioned
from .consistency import Inconsistency
from .formats import FORMAT
from .reading import ReportDocument, report_of
from .report import Report, inconsistencies, result_to_data
from .schema import CaseResult, ChapterInfo, ModelInfo, Invocation
from .stats import LEVEL

# Facts of a run that the merged run states only when every input agrees on them.
SHARED_RUN_FACTS = ("pytest", "python", "platform", "xdist_workers", "isolation")
# A model's description may differ in where it was loaded from (a cache folder of each machine), nothing else.
LOCAL_MODEL_FACTS = ("source",)
# What makes one set of weights another model for a comparison: it was run another way.
RUN_SETTINGS = ("dtype", "device", "numerics", "bos")


class MergeRefusal(Exception):
    """Reports that cannot be one report; each kind below carries what is wrong, report/wording_merge.py words it."""


@dataclass
class NothingToMerge(MergeRefusal):
    """No report was named."""


@dataclass
class Inconsistent(MergeRefusal):
    """A report whose derived fields are not what its numbers give (edited or damaged)."""

    report: str
    found: list[Inconsistency]


@dataclass
class ModelDescribedTwice(MergeRefusal):
    """Two reports describe one model id differently: each fact that differs, as (fact, first's, second's)."""

    first: str
    second: str
    model: str
    differ: list[tuple[str, Any, Any]]


@dataclass
class OneModelTwoNames(MergeRefusal):
    """Two model ids with the same weights run the same way (`first` and `second` may be one report)."""

    first: str
    second: str
    known: ModelInfo
    model: ModelInfo


@dataclass
class ChapterVersions(MergeRefusal):
    """Two reports ran different versions (sha256) of one chapter file."""

    first: str
    second: str
    chapter: ChapterInfo
    known_sha256: str


@dataclass
class ChapterDraws(MergeRefusal):
    """Two reports drew other instances of one chapter's families (another --gotchas-instances): the same chapter
    file, other cases."""

    first: str
    second: str
    chapter: str
    known_drawn: int  # drawn instances (instance zero not counted) in `first`
    drawn: int  # and in `second`


def drawn_count(chapter: ChapterInfo) -> int:
    """The instances a run drew of a chapter's families, the hand-written instance zero of each not counted."""
    return sum(len(family.instances) - 1 for family in chapter.families.values())


@dataclass
class NotOneModel(Exception):
    """A report whose model is to be renamed holds another number of models than one (the command words it, as it
    names the option that asked)."""

    models: int


@dataclass
class FieldDiffers:
    """A field two results of one case differ in; `primer` is the primer of the run it belongs to, if any."""

    key: str
    old: Any
    new: Any
    primer: Any = None
    quoted: bool = False  # values shown as Python writes them (status and verdict are shown bare)


@dataclass
class RunCounts:
    """Two results of one case with different numbers of runs (primers)."""

    old: int
    new: int


@dataclass
class ProbabilitiesDiffer:
    """One run's two probabilities differ between two results of one case."""

    primer: Any
    p_correct: tuple[Any, Any]
    p_wrong: tuple[Any, Any]


Difference = Union[FieldDiffers, RunCounts, ProbabilitiesDiffer]


@dataclass
class DifferentResults(MergeRefusal):
    """Two reports hold different results for one model and case: the first thing they differ in."""

    first: str
    second: str
    model: str | None
    case: str
    difference: Difference


def model_facts(model: ModelInfo) -> dict[str, Any]:
    """A model's description as merging compares it: without where it was loaded from."""
    return {k: v for k, v in vars(model).items() if k not in LOCAL_MODEL_FACTS}


def checked_report(document: ReportDocument) -> Report:
    """The typed report of one document, refused (Inconsistent) when its derived fields are not its numbers'."""
    report = report_of(document)
    found = inconsistencies(document.current(), report, older=document.format < FORMAT)
    if found:
        raise Inconsistent(document.name, found)
    return report


def merged_models(reports: list[tuple[str, Report]]) -> list[ModelInfo]:
    """One short name, one model: a merged report describes each model once, so its results must share it."""
    seen: dict[str, tuple[str, ModelInfo]] = {}
    for name, report in reports:
        for model in report.model_infos:
            if model.id not in seen:
                seen[model.id] = (name, model)
                continue
            first, known = seen[model.id]
            a, b = model_facts(known), model_facts(model)
            differ = [(k, a[k], b.get(k)) for k in a if a[k] != b.get(k)]
            if differ:
                raise ModelDescribedTwice(first, name, model.id, differ)
    one_model_two_names(reports)
    return [model for _, model in seen.values()]


def one_model_two_names(reports: list[tuple[str, Report]]) -> None:
    """Names are only labels (a report's model id and name can be edited): two ids with the same weights, run the
    same way, are one model, and comparing them compares it with itself. Refused, naming both reports and ids."""
    # Keyed by what makes two ids one model, so that each model is looked up once, not against every other.
    seen: dict[tuple[Any, ...], tuple[str, ModelInfo]] = {}
    for name, report in reports:
        softmax: dict[str, set[str]] = {}
        for result in report.results:
            if result.model is not None and result.runs:
                softmax.setdefault(result.model, set()).add(result.runs[0].reading.softmax_dtype)
        for model in report.model_infos:
            key = (model.weights_sha256, frozenset(softmax.get(model.id, ())),
                   *(getattr(model, k) for k in RUN_SETTINGS))
            first, known = seen.setdefault(key, (name, model))
            if known.id != model.id:
                raise OneModelTwoNames(first, name, known, model)


def check_chapters(reports: list[tuple[str, Report]]) -> None:
    """Every chapter file in one version across the reports, or ChapterVersions; with the same instances of its
    families drawn, or ChapterDraws (the file's sha256 does not say how many a run drew)."""
    seen: dict[str, tuple[str, ChapterInfo]] = {}
    for name, report in reports:
        for chapter in report.infos.values():
            if not versioned(chapter):
                continue
            assert chapter.sha256 is not None
            first, known = seen.setdefault(chapter.name, (name, chapter))
            if known.sha256 != chapter.sha256:
                raise ChapterVersions(first, name, chapter, known.sha256 or "")
            if known.families != chapter.families:
                raise ChapterDraws(first, name, chapter.name, drawn_count(known), drawn_count(chapter))


def comparable(result: CaseResult) -> dict[str, Any]:
    """A result as merging compares it: without the keys of its model and chapter, which name it."""
    return {k: v for k, v in result_to_data(result).items() if k not in ("model", "chapter")}


def difference(old: dict[str, Any], new: dict[str, Any]) -> Difference:
    """The first thing two (comparable) results of one case differ in."""
    for key in ("status", "verdict"):
        if old.get(key) != new.get(key):
            return FieldDiffers(key, old.get(key), new.get(key))
    old_runs, new_runs = old.get("runs") or [], new.get("runs") or []
    if len(old_runs) != len(new_runs):
        return RunCounts(len(old_runs), len(new_runs))
    for a, b in zip(old_runs, new_runs):
        if a == b:
            continue
        primer = a.get("primer")
        if (a.get("p_correct"), a.get("p_wrong")) != (b.get("p_correct"), b.get("p_wrong")):
            return ProbabilitiesDiffer(primer, (a.get("p_correct"), b.get("p_correct")),
                                       (a.get("p_wrong"), b.get("p_wrong")))
        key = next(k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k))
        return FieldDiffers(key, a.get(key), b.get(key), primer, quoted=True)
    key = next(k for k in dict.fromkeys([*old, *new]) if old.get(k) != new.get(k))
    return FieldDiffers(key, old.get(key), new.get(key), quoted=True)


def merged_results(reports: list[tuple[str, Report]]) -> list[CaseResult]:
    """Every result once: an identical duplicate (an overlapping shard) is kept once, a different one refused."""
    seen: dict[tuple[str | None, str, str], tuple[str, dict[str, Any]]] = {}
    results = []
    for name, report in reports:
        for result in report.results:
            key = (result.model, result.chapter, result.id)
            data = comparable(result)
            if key not in seen:
                seen[key] = (name, data)
                results.append(result)
                continue
            first, known = seen[key]
            if known != data:
                raise DifferentResults(first, name, result.model, result.key, difference(known, data))
    return results


def merged_run(reports: list[tuple[str, Report]], command: str, date: str) -> Invocation:
    """The merged run: its command and date, the facts every input agrees on, each input's own run, and whether
    any input was interrupted (with the items they did not run)."""
    runs = [report.run for _, report in reports]
    shared = {fact: getattr(runs[0], fact) for fact in SHARED_RUN_FACTS
              if getattr(runs[0], fact) is not None and all(getattr(r, fact) == getattr(runs[0], fact) for r in runs)}
    # A partial input marks the merge partial (docs/report.md): its results are real, and the page says what is
    # missing instead of refusing them.
    return Invocation(command=command, date=date, **shared,
                      merged_from=[replace(report.run, file=name) for name, report in reports],
                      interrupted=any(r.interrupted for r in runs), not_run=[n for r in runs for n in r.not_run])


def merged_baselines(reports: list[tuple[str, Report]]) -> list[BaselineOutcome]:
    """Each input's comparisons with its baselines as that run made them (the baseline files are not read again),
    each naming the report it came from; the same comparison in two inputs is kept once."""
    out: list[BaselineOutcome] = []
    # Compared only with those of the same model and file: each input's own comparison, not every other input's.
    kept: dict[tuple[str, str | None], list[BaselineOutcome]] = {}
    for name, report in reports:
        for baseline in report.baselines:
            bare = replace(baseline, report=None)
            same = kept.setdefault((baseline.model, baseline.path), [])
            if bare not in same:
                same.append(bare)
                out.append(replace(baseline, report=baseline.report or name))
    return out


def merge(documents: list[ReportDocument], command: str, date: str) -> Report:
    """One report of every result of `documents`, or a MergeRefusal (UnreadableReport for a document of a format
    this version cannot read)."""
    if not documents:
        raise NothingToMerge()
    reports = [(document.name, checked_report(document)) for document in documents]
    models = merged_models(reports)
    check_chapters(reports)
    results = merged_results(reports)
    chapters = [info for _, report in reports for info in report.infos.values()]
    return Report(results, chapters, models, merged_run(reports, command, date), merged_baselines(reports))


def rename_model(data: dict[str, Any], new: str) -> None:
    """Give the one model of a report's JSON data the id `new`, before anything reads it (one model run in two dtypes,
    or checkpoints that share a name, become models of their own); NotOneModel when it holds another number."""
    models = data.get("models") or []
    if len(models) != 1 or not isinstance(models[0], dict):
        raise NotOneModel(len(models))
    old = models[0].get("id")
    models[0]["id"] = new
    # Every entry keyed by the model, at any depth (cases, baselines, pairs, rollups and their twins), so that
    # the derived sections still agree with the numbers when merge recomputes them on read.
    pending: list[Any] = [data]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            if node.get("model") == old:
                node["model"] = new
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)


def shared_level(data: list[dict[str, Any]]) -> float:
    """The inputs' level when they all state the same one, else the default."""
    levels = {(d.get("run") or {}).get("level", LEVEL) for d in data}
    return levels.pop() if len(levels) == 1 else LEVEL


def recorded_order(data: list[dict[str, Any]]) -> list[str]:
    """The order the inputs recorded (a merged report merged again), as --order values, each model once."""
    seen: dict[str, str] = {}
    for d in data:
        for label in (d.get("run") or {}).get("order") or []:
            if isinstance(label, dict):
                seen.setdefault(str(label.get("model")), str(label.get("label")))
    return [f"{model}={label}" for model, label in seen.items()]
