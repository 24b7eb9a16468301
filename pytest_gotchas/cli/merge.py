"""`gotchas merge A.json B.json ... [--json OUT] [--html OUT]`: one report from the JSON reports of several runs.

A CI matrix runs one job per model, or per shard of the chapters, each writing `--gotchas-json`; this command puts
their results into one Report, so that the pair rollups per (chapter, model) and the per-chapter model comparisons
are computed by the same code as for a run of all models at once. Nothing is copied from the inputs' own tables:
only their results, their models' descriptions and their baseline sections are read.

It refuses, naming both files, whatever would make the merged numbers a mix that no single run could have given:
two different results for one model and case (identical ones, from overlapping shards, are kept once), two versions
of one chapter file (by the sha256 collection records), one model described two ways (other weights, dtype,
hardware or library versions), one model under two names (the same weights run the same way: a report's names can
be edited), reports of a format this version cannot read (newer, or too old to migrate: results/formats.py), and
files that nest deeper than any report (results/reading.py reads every input). Nothing derived is taken as
written: a report whose verdicts, pair results or rollups are not what its probabilities give (an edited file,
results/consistency.py), or that holds a number out of float range, is refused, each field named.
"""

from __future__ import annotations

import argparse
import datetime
import shlex
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from ..report import html, json_report
from ..report.escape import escape
from ..report.terminal import summary_lines
from ..report.wording import Line, inconsistent_text, outcome_lines, pct
from ..results.baselines import BaselineOutcome
from ..results.formats import FORMAT, MIGRATIONS
from ..results.reading import ReportDocument as Source
from ..results.reading import UnreadableReport, load_document, report_of
from ..results.report import Report, inconsistencies, result_to_data
from ..results.schema import CaseResult, ChapterInfo, ModelInfo, RunInfo
from . import merge_series
from .errors import CLIError

# Facts of a run that the merged run states only when every input agrees on them.
SHARED_RUN_FACTS = ("pytest", "python", "platform", "xdist_workers", "isolation")
# A model's description may differ in where it was loaded from (a cache folder of each machine), nothing else.
LOCAL_MODEL_FACTS = ("source",)

EXAMPLE = """\
examples:
  # one CI job per model, each writing its own report; then one page of both, with their comparisons (the
  # terminal summary of the merged results is printed either way)
  pytest --gotchas cases/ --gotchas-model gemma-3-270m --gotchas-json gemma.json
  pytest --gotchas cases/ --gotchas-model smollm2-135m --gotchas-json smollm.json
  gotchas merge gemma.json smollm.json --json all.json --html all.html

  # only the terminal summary of the merged results
  gotchas merge gemma.json smollm.json
"""


def add_parser(commands: argparse._SubParsersAction) -> None:
    merge = commands.add_parser(
        "merge", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLE,
        help="combine the JSON reports of several runs (models, chapters, shards) into one report",
        description="Combine JSON reports written by --gotchas-json (other models, other chapters, or shards of one "
                    "model's run) into one report: its chapter tables, pairs and per-chapter model comparisons are "
                    "computed from all their results, as for one run of every model. It prints the terminal summary "
                    "of the merged results, and writes --json and --html where asked.\n\n"
                    "Refused: two different results for one model and case (identical duplicates are kept once), "
                    "results of two versions of one chapter file, one model described two ways, one model under two "
                    "names (the same weights run the same way), reports of a newer JSON format or of an older one "
                    f"that cannot be migrated (this version reads format {FORMAT} and migrates "
                    f"{', '.join(f'format {n}' for n in sorted(MIGRATIONS))}), and reports whose verdicts, pair "
                    "results or rollups are not what their probabilities give (edited), or that hold a number out of float range.",
    )
    merge.add_argument("reports", nargs="+", metavar="REPORT.json", help="JSON reports written by --gotchas-json")
    merge.add_argument("--json", metavar="OUT.json", help="write the merged JSON report here")
    merge.add_argument("--html", metavar="OUT.html", help="write the merged HTML page here")
    merge_series.add_arguments(merge)
    merge.set_defaults(run=run_merge)


def read_source(path: Path | str) -> Source:
    """A JSON report of a format this version reads, or a CLIError that says why the file is not one."""
    try:
        return load_document(path)
    except UnreadableReport as error:
        raise CLIError(str(error)) from None


def _report_of(source: Source) -> Report:
    try:
        report = report_of(source)
    except UnreadableReport as error:
        raise CLIError(str(error)) from None
    found = inconsistencies(source.current(), report)
    if found:
        raise CLIError(inconsistent_text(source.name, found))
    return report


def _model_name(model: str | None) -> str:
    return f"model {model!r}" if model is not None else "no model"


def _facts(model: ModelInfo) -> dict[str, Any]:
    return {k: v for k, v in vars(model).items() if k not in LOCAL_MODEL_FACTS}


def _merged_models(reports: list[tuple[Source, Report]]) -> list[ModelInfo]:
    """One short name, one model: a merged report describes each model once, so its results must share it."""
    seen: dict[str, tuple[str, ModelInfo]] = {}
    for source, report in reports:
        for model in report.model_infos:
            if model.id not in seen:
                seen[model.id] = (source.name, model)
                continue
            first, known = seen[model.id]
            a, b = _facts(known), _facts(model)
            differ = [k for k in a if a[k] != b.get(k)]
            if differ:
                detail = "; ".join(f"{k} {a[k]!r} vs {b.get(k)!r}" for k in differ)
                raise CLIError(f"{first} and {source.name} describe {_model_name(model.id)} differently ({detail}): "
                               f"a merged report states one description per model, so its results must come from "
                               f"one set of weights, dtype, hardware and library versions")
    _one_model_two_names(reports)
    return [model for _, model in seen.values()]


# What makes one set of weights another model for a comparison: it was run another way.
RUN_SETTINGS = ("dtype", "device", "numerics", "bos")


def _softmax_dtypes(report: Report, model: str) -> set[str]:
    return {r.runs[0].reading.softmax_dtype for r in report.results if r.model == model and r.runs}


def _one_model_two_names(reports: list[tuple[Source, Report]]) -> None:
    """Names are only labels (a report's model id and name can be edited): two ids with the same weights, run the
    same way, are one model, and comparing them compares it with itself. Refused, naming both files and ids."""
    seen: list[tuple[str, ModelInfo, set[str]]] = []
    for source, report in reports:
        for model in report.model_infos:
            softmax = _softmax_dtypes(report, model.id)
            for first, known, known_softmax in seen:
                if (known.id == model.id or known.weights_sha256 != model.weights_sha256 or known_softmax != softmax
                        or any(getattr(known, k) != getattr(model, k) for k in RUN_SETTINGS)):
                    continue
                files = f"{first} holds" if first == source.name else f"{first} and {source.name} hold"
                raise CLIError(
                    f"{files} one model under two names: {known.id!r} ({known.name}) and {model.id!r} ({model.name}) "
                    f"have the same weights (sha256 {model.weights_sha256[:12]}...), dtype {model.dtype}, device "
                    f"{model.device} and numerics {model.numerics or 'not recorded'}, so comparing them would compare "
                    "the model with itself; merge reports of different models, or of one model run another way "
                    "(another dtype or device)")
            seen.append((source.name, model, softmax))


def _versioned(info: ChapterInfo) -> bool:
    """Whether a chapter is a chapter file whose hash names its version. A chapter that Python tests record into
    (gotchas.case(...)) is no file, so it has no hash."""
    return info.sha256 is not None and info.path.endswith((".yaml", ".yml"))


def _check_chapters(reports: list[tuple[Source, Report]]) -> None:
    seen: dict[str, tuple[str, str]] = {}
    for source, report in reports:
        for chapter in report.infos.values():
            if not _versioned(chapter):
                continue
            sha = chapter.sha256
            assert sha is not None
            first, known = seen.setdefault(chapter.name, (source.name, sha))
            if known != sha:
                raise CLIError(f"{first} and {source.name} ran different versions of chapter {chapter.name!r} "
                               f"({chapter.path}: sha256 {known[:12]}... vs {sha[:12]}...): their results are not "
                               f"of the same cases; run both on the same chapter files")


def _comparable(result: CaseResult) -> dict[str, Any]:
    """A result as merging compares it: without the keys of its model and chapter, which name it."""
    return {k: v for k, v in result_to_data(result).items() if k not in ("model", "chapter")}


def _difference(old: dict[str, Any], new: dict[str, Any]) -> str:
    """The first thing two results of one case differ in, in words."""
    for key in ("status", "verdict"):
        if old.get(key) != new.get(key):
            return f"{key} {old.get(key)} vs {new.get(key)}"
    old_runs, new_runs = old.get("runs") or [], new.get("runs") or []
    if len(old_runs) != len(new_runs):
        return f"{len(old_runs)} vs {len(new_runs)} runs"
    for a, b in zip(old_runs, new_runs):
        if a == b:
            continue
        primer = f"primer {a.get('primer')}: " if a.get("primer") is not None else ""
        if (a.get("p_correct"), a.get("p_wrong")) != (b.get("p_correct"), b.get("p_wrong")):
            return (f"{primer}P(correct) {pct(a.get('p_correct'))} vs {pct(b.get('p_correct'))}, "
                    f"P(wrong) {pct(a.get('p_wrong'))} vs {pct(b.get('p_wrong'))}")
        key = next(k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k))
        return f"{primer}{key} {a.get(key)!r} vs {b.get(key)!r}"
    key = next(k for k in dict.fromkeys([*old, *new]) if old.get(k) != new.get(k))
    return f"{key} {old.get(key)!r} vs {new.get(key)!r}"


def _merged_results(reports: list[tuple[Source, Report]]) -> list[CaseResult]:
    """Every result once: an identical duplicate (an overlapping shard) is kept once, a different one refused."""
    seen: dict[tuple[str | None, str, str], tuple[str, dict[str, Any]]] = {}
    results = []
    for source, report in reports:
        for result in report.results:
            key = (result.model, result.chapter, result.id)
            data = _comparable(result)
            if key not in seen:
                seen[key] = (source.name, data)
                results.append(result)
                continue
            first, known = seen[key]
            if known != data:
                raise CLIError(f"{first} and {source.name} hold different results for {_model_name(result.model)}, "
                               f"case {result.key}: {_difference(known, data)}; only identical duplicates (an "
                               f"overlapping shard) can be merged")
    return results


def _merged_run(reports: list[tuple[Source, Report]], command: str, date: str) -> RunInfo:
    runs = [report.run for _, report in reports]
    shared = {fact: getattr(runs[0], fact) for fact in SHARED_RUN_FACTS
              if getattr(runs[0], fact) is not None and all(getattr(r, fact) == getattr(runs[0], fact) for r in runs)}
    return RunInfo(command=command, date=date, **shared,
                   merged_from=[replace(report.run, file=source.name) for source, report in reports])


def _merged_baselines(reports: list[tuple[Source, Report]]) -> list[BaselineOutcome]:
    """Each input's comparisons with its baselines as that run made them (the baseline files are not read again),
    each naming the report it came from; the same comparison in two inputs is kept once."""
    out: list[BaselineOutcome] = []
    for source, report in reports:
        for baseline in report.baselines:
            named = replace(baseline, report=baseline.report or source.name)
            if not any(replace(b, report=None) == replace(baseline, report=None) for b in out):
                out.append(named)
    return out


def merge(sources: list[Source], command: str = "gotchas merge", date: str | None = None) -> Report:
    """One report of every result of `sources`, or a CLIError naming the two files that cannot be combined."""
    if not sources:
        raise CLIError("nothing to merge: name at least one report")
    reports = [(source, _report_of(source)) for source in sources]
    models = _merged_models(reports)
    _check_chapters(reports)
    results = _merged_results(reports)
    chapters = [info for _, report in reports for info in report.infos.values()]
    date = date or datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return Report(results, chapters, models, _merged_run(reports, command, date), _merged_baselines(reports))


def command_line(args: argparse.Namespace) -> str:
    words = ["gotchas", "merge", *args.reports, *merge_series.command_words(args)]
    for flag in ("json", "html"):
        if getattr(args, flag):
            words += [f"--{flag}", getattr(args, flag)]
    return shlex.join(words)


def baseline_lines(report: Report) -> list[Line]:
    """The baseline outcomes as each input's run found them, under the report they came from."""
    lines: list[Line] = []
    for report_name in dict.fromkeys(b.report for b in report.baselines):
        lines.append((f"baselines as compared by the run of {report_name}:", {}))
        several = len(report.model_ids) > 1
        lines += [(f"  {text.strip()}", {}) for b in report.baselines if b.report == report_name
                  for text, _ in outcome_lines(b, prefix=several) if text.strip()]
    return lines


def run_merge(args: argparse.Namespace, out: TextIO) -> int:
    sources = [read_source(path) for path in args.reports]
    data = [source.data for source in sources]
    merge_series.rename([source.name for source in sources], data, args.rename)
    report = merge(sources, command_line(args))
    merge_series.place(report, args.level if args.level is not None else merge_series.shared_level(data),
                       args.order or merge_series.recorded_order(data))
    models = ", ".join(report.model_ids) or "no model"
    print(escape(f"merged {len(report.results)} results ({models}) from {len(sources)} reports"), file=out)
    writes = [(args.json, json_report.write), (args.html, html.write)]
    for target, write in writes:
        if target is None:
            continue
        try:
            write(Path(target), report)
        except OSError as error:
            raise CLIError(f"cannot write {target}: {error.strerror or error}") from None
        print(escape(f"wrote {target}"), file=out)
    for text, _ in summary_lines(report, baseline_lines(report)):  # with --json/--html too, as a CI log wants it
        print(text, file=out)
    return 0
