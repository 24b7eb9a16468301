"""Are the one-pass readings the separate full passes they replace, bit for bit? Row by row, for several refeeds.

    python -m bench.onepass                                   # a plain run of the spec's chapters first, then compare
    python -m bench.onepass --report out.json [--model smollm2-135m] [--chapters 0-,1-] [--refeeds 1,2,4,8,tree]

Takes the prompts of a plugin run (its JSON report, read as a typed Report by child.read_report; without --report,
a plain `pytest --gotchas cases` run of a fresh copy of the chapters, through child.plugin), plans every cut again
with the model's tokenizer, and for each case (the runs the plugin scores together): computes every reading with
separate full passes (Rows: one pass per context, as before one-pass scoring), then with one pass per prompt
(OnePassRows) once for each refeed, sharing the main passes: `tree` computes the contexts past the prompt as one tree
per `need` (scoring/tree.py, the default where the model's attention takes one), each number a refeed of per-context
steps. Every context the separate passes computed is compared bit for bit with the one-pass row for it, split into
the main pass's earlier positions and the contexts past them (steps, or the tree's nodes); and every reading and run
verdict. One process, the model in bfloat16 on the CPU, torch's default threads.
"""

from __future__ import annotations

import argparse
import collections
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_gotchas.results.report import Report
from pytest_gotchas.results.schema import CaseResult, Run

from . import scenarios
from .child import BenchFailed, log, model_folder, plugin, read_report
from .measure import Context

DEFAULT_MODEL = "gemma-3-270m"
TREE = "tree"  # among the refeeds: the tree instead of steps
Way = int | str  # a refeed of steps, or TREE


def cases_of(report: Report, prefixes: Sequence[str], model: str) -> list[CaseResult]:
    """The scored cases of one model (every model's when the report names none) in chapters whose file name starts
    with one of `prefixes` (every chapter when there is none)."""
    models = report.model_ids
    chosen = model if model in models else models[0] if models else None

    def chapter_file(result: CaseResult) -> str:
        info = report.infos.get(result.chapter)
        return Path(info.path).name if info else ""

    return [r for r in report.results if r.runs and (chosen is None or r.model in (None, chosen))
            and (not prefixes or any(chapter_file(r).startswith(p) for p in prefixes))]


def run_label(case: CaseResult, run: Run) -> str:
    return case.key + (f"[{run.label}]" if run.label else "")


@dataclass
class Tally:
    """What the comparison found, over every case; `lines` words it."""

    refeeds: tuple[Way, ...]
    cases: int = 0
    runs: int = 0
    readings: int = 0
    rows_total: collections.Counter[str] = field(default_factory=collections.Counter)  # "earlier" | "step"
    rows_differ: dict[Way, collections.Counter[str]] = field(default_factory=dict)
    readings_differ: dict[Way, list[str]] = field(default_factory=dict)
    verdicts_differ: dict[Way, list[str]] = field(default_factory=dict)
    passes: dict[str, int] = field(default_factory=lambda: {"separate": 0, "main": 0, "full": 0})
    steps: dict[Way, int] = field(default_factory=dict)
    calls: dict[Way, int] = field(default_factory=dict)  # the calls that computed them
    seconds: dict[str, float] = field(default_factory=lambda: {"separate": 0.0, "main": 0.0})

    def __post_init__(self) -> None:
        for r in self.refeeds:
            self.rows_differ.setdefault(r, collections.Counter())
            self.readings_differ.setdefault(r, [])
            self.verdicts_differ.setdefault(r, [])
            self.steps.setdefault(r, 0)
            self.calls.setdefault(r, 0)
            self.seconds.setdefault(f"steps@{r}", 0.0)

    def lines(self, header: str) -> list[str]:
        p, s, total = self.passes, self.seconds, self.rows_total
        out = [f"{header}; {self.cases} cases, {self.runs} runs",
               f"separate passes: {p['separate']} full passes ({s['separate']:.1f} s); one pass: {p['main']} full "
               f"passes ({s['main']:.1f} s: one per prompt, and the token readings' contexts outside them), "
               f"{p['full']} more over the refeeds (contexts no cache could be extended to)",
               f"contexts compared: {total['earlier']} at earlier positions of a main pass (the last included), "
               f"{total['step']} as incremental steps; {self.readings} readings"]
        for r in self.refeeds:
            differ = self.rows_differ[r]
            way, what = ("tree", "contexts in trees") if r == TREE else (f"refeed {r}", "steps")
            out.append(f"{way}: rows differing: earlier positions {differ['earlier']}/{total['earlier']}, steps "
                       f"{differ['step']}/{total['step']} ({self.steps[r]} {what} in {self.calls[r]} calls, "
                       f"{s[f'steps@{r}']:.1f} s); readings "
                       f"differing {len(self.readings_differ[r])}/{self.readings}; verdicts differing "
                       f"{len(self.verdicts_differ[r])}")
            out += [f"    reading: {line}" for line in self.readings_differ[r]]
            out += [f"    verdict: {line}" for line in self.verdicts_differ[r]]
        return out


class Comparer:
    """The model, its tokenizer and vocabulary, loaded once; `case` compares one case's runs into a Tally."""

    def __init__(self, model: str, reading: str) -> None:
        from pytest_gotchas.model.load import ModelSpec, load_model
        from pytest_gotchas.settings.options import Settings
        from pytest_gotchas.scoring.vocab import build

        self.loaded = load_model(ModelSpec(name=model, dtype="bfloat16", device="cpu"), Settings().model_cache)
        self.tokenizer = self.loaded.tokenizer
        self.table = build(self.tokenizer)
        self.reading = reading
        self.decoded: dict[int, str] = {}

    def decode(self, token: int) -> str:
        if token not in self.decoded:
            self.decoded[token] = self.tokenizer.decode([token])
        return self.decoded[token]

    def read(self, cuts: list[Any], rows: Any) -> list[Any]:
        from pytest_gotchas.scoring.readings import read_cut

        return [read_cut(c, rows, "bfloat16", rows.other_dtype, self.table, self.decode, self.reading) for c in cuts]

    def case(self, case: CaseResult, tally: Tally) -> None:
        from pytest_gotchas.scoring.cut import plan_cut
        from pytest_gotchas.scoring.readings import Cut
        from pytest_gotchas.scoring.rows import OnePassRows, Rows

        model, dtype = self.loaded.model, "bfloat16"
        cuts = [Cut(plan_cut(self.tokenizer, r.prompt, r.correct, r.wrong), r.prompt, r.correct, r.wrong)
                for r in case.runs]
        tally.cases, tally.runs = tally.cases + 1, tally.runs + len(cuts)
        started = time.perf_counter()
        separate = Rows(model, dtype, 1, 5)
        expected = self.read(cuts, separate)
        tally.seconds["separate"] += time.perf_counter() - started
        tally.passes["separate"] += separate.full
        started = time.perf_counter()
        base = OnePassRows(model, dtype, 1, 5)
        base.prompts([c.plan for c in cuts])
        tally.seconds["main"] += time.perf_counter() - started
        tally.passes["main"] += base.full
        earlier = set(base.main)
        for context in separate.main:
            tally.rows_total["earlier" if context in earlier else "step"] += 1
        for refeed in tally.refeeds:
            tree = refeed == TREE
            rows = OnePassRows(model, dtype, 1, 5, 1 if tree else int(refeed), tree=tree)
            rows.main, rows.other, rows.top = dict(base.main), dict(base.other), dict(base.top)
            rows.caches, rows.full_contexts, rows.full = dict(base.caches), list(base.full_contexts), base.full
            started = time.perf_counter()
            got = self.read(cuts, rows)
            rows.need(list(separate.main))  # every context the separate passes computed, also those not read here
            tally.seconds[f"steps@{refeed}"] += time.perf_counter() - started
            tally.steps[refeed] += rows.steps
            tally.calls[refeed] += rows.tree_calls + rows.steps - rows.tree_contexts
            tally.passes["full"] += rows.full - base.full
            self.compare(case, separate, rows, earlier, (got, expected), tally, refeed)
        tally.readings += sum(len(e) for e in expected)

    @staticmethod
    def compare(case: CaseResult, separate: Any, rows: Any, earlier: set[Any], readings: tuple[list[Any], list[Any]],
                tally: Tally, refeed: Way) -> None:
        import torch

        for context, row in separate.main.items():
            if not (torch.equal(rows.main[context], row) and torch.equal(rows.other[context], separate.other[context])):
                tally.rows_differ[refeed]["earlier" if context in earlier else "step"] += 1
        for run, a, b in zip(case.runs, *readings):
            label = run_label(case, run)
            for name in b:
                if a[name] != b[name]:
                    tally.readings_differ[refeed].append(f"{label} {name}")
                    if a[name].verdict != b[name].verdict:
                        tally.verdicts_differ[refeed].append(f"{label} {name} {a[name].verdict} -> {b[name].verdict}")


def plain_report(model: str, all_chapters: bool) -> Report:
    """A plain plugin run of a fresh copy of the chapters (measure.Context, child.plugin), for its prompts."""
    root = Path(tempfile.mkdtemp(prefix="gotchas-onepass-"))
    try:
        ctx = Context(root, scenarios.chapters(all_chapters), model_folder())
        log("a plain plugin run, for its prompts")
        options = () if model == DEFAULT_MODEL else ("--gotchas-model", model)
        report = plugin(ctx.fresh(1), "prompts", *options).report
        assert report is not None
        return report
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.onepass", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report", type=Path, help="a plugin run's JSON report (its prompts); default: run one")
    parser.add_argument("--all-chapters", action="store_true", help="without --report: every chapter in cases/")
    parser.add_argument("--model", default=DEFAULT_MODEL, help="embedded model name, hub id or folder")
    parser.add_argument("--chapters", default="", help="comma-separated chapter file prefixes (default: every one)")
    parser.add_argument("--refeeds", default="1,2,4,8,tree", help="refeeds of per-context steps, and `tree`")
    parser.add_argument("--reading", default="text", choices=("text", "token"))
    args = parser.parse_args(argv)
    try:
        report = read_report(args.report) if args.report else plain_report(args.model, args.all_chapters)
    except BenchFailed as failed:
        sys.exit(f"bench: {failed}")
    import torch

    comparer = Comparer(args.model, args.reading)
    tally = Tally(tuple(r if r == TREE else int(r) for r in args.refeeds.split(",") if r))
    for case in cases_of(report, [p for p in args.chapters.split(",") if p], args.model):
        comparer.case(case, tally)
    print("\n".join(tally.lines(f"model {args.model}; torch {torch.__version__}, {torch.get_num_threads()} threads, "
                                f"cpu capability {torch.backends.cpu.get_cpu_capability()}")))


if __name__ == "__main__":
    main()
