"""`gotchas merge A.json B.json ... [--json OUT] [--html OUT]`: one report from the JSON reports of several runs.

A CI matrix runs one job per model, or per shard of the chapters, each writing `--gotchas-json`; this command puts
their results into one Report, so that the pair rollups per (chapter, model) and the per-chapter model comparisons
are computed by the same code as for a run of all models at once. Nothing is copied from the inputs' own tables:
only their results, their models' descriptions and their baseline sections are read.

What it refuses, and why, is results/merging.py's (the rules) and report/wording_merge.py's (their words); this
module is the command: its arguments, reading the files (results/reading.py), printing and writing.
"""

from __future__ import annotations

import argparse
import datetime
import shlex
from pathlib import Path
from typing import TextIO

from ..report import html, json_report
from ..report.escape import escape
from ..report.terminal import summary_lines
from ..report.wording import Line
from ..report.wording_baseline import outcome_lines
from ..report.wording_merge import merge_refusal_text
from ..results import merging
from ..results.formats import FORMAT, MIGRATIONS
from ..results.merging import MergeRefusal
from ..results.reading import ReportDocument as Source
from ..results.reading import UnreadableReport, load_document
from ..results.report import Report
from . import merge_series
from .errors import CLIError

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


def merge(sources: list[Source], command: str = "gotchas merge", date: str | None = None) -> Report:
    """One report of every result of `sources` (results/merging.py), or a CLIError naming the two files that cannot
    be combined."""
    date = date or datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    try:
        return merging.merge(sources, command, date)
    except UnreadableReport as error:
        raise CLIError(str(error)) from None
    except MergeRefusal as refusal:
        raise CLIError(merge_refusal_text(refusal)) from None


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
    merge_series.place(report, args.level if args.level is not None else merging.shared_level(data),
                       args.order or merging.recorded_order(data))
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
