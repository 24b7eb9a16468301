"""`gotchas merge` at scale: N tiny reports merged into one JSON report and one page, each merge a whole process
(child.py: wall and CPU time, peak memory), so that growth can be read per report at each size.

    python -m bench.merge                          # 20, 200 and 1,000 reports, both layouts
    python -m bench.merge --sizes 20 200           # fewer
    python -m bench.merge --layout checkpoints     # one layout

Two layouts. *checkpoints*: each report is one model (another set of weights, as a training run's checkpoints
are), scoring one chapter of two cases in a pair, merged with `--order` placing each at its step: a series, where
the page draws each chapter across the order and the models are compared each with the next. *shards*: one model,
each report one chapter of two cases (a run split by chapter over CI jobs). The reports are made by hand from the
result types (results/schema.py), as a run would write them. Growth is linear when the CPU time per report at the
largest size is within GROWTH_SLACK of the smallest's (CPU, not wall: the machine is shared), and the page's bytes
per report likewise.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pytest_gotchas.report import json_report
from pytest_gotchas.results.report import Report
from pytest_gotchas.results.schema import CaseResult, ChapterInfo, Invocation, ModelInfo, Reading, Run
from pytest_gotchas.results.verdict import Status, case_verdict, run_verdict

from .child import header, log, machine, run_child
from pytest_gotchas.results.vocabulary import ReadingName

GROWTH_SLACK = 1.25  # per-report cost at the largest size over the smallest's; more than this is superlinear
LAYOUTS = ("checkpoints", "shards")
DATE = "2026-12-07T00:00:00+00:00"


def model(n: int) -> ModelInfo:
    """Checkpoint n: its own weights (so that no two are one model under two names)."""
    return ModelInfo(id=f"step{n}", name=f"/ckpt/step{n}", source=f"/ckpt/step{n}", weights_sha256=f"{n:064x}",
                     dtype="bfloat16", device="cpu", hardware="cpu", torch_version="2.13.0",
                     transformers_version="5.24.0", numerics="0" * 16, threads=2, bos="auto: <bos>")


def result(case_id: str, chapter: str, model_id: str, p_correct: float) -> CaseResult:
    """A scored case of one run, its verdict judged from its probabilities as scoring judges it."""
    p_wrong = round(1 - p_correct - 0.0625, 4)
    reading = Reading(p_correct, p_wrong, run_verdict(p_correct, p_wrong), "plain", "bfloat16", ["1"], ["2"])
    run = Run(primer=None, prompt=">>> x\n", correct="1", wrong="2", readings={ReadingName.TOKEN: reading}, main=ReadingName.TOKEN, top=[],
              batch_size=1, forward_passes=1)
    judged = case_verdict([run.judged()])
    return CaseResult(id=case_id, chapter=chapter, status=Status.SCORED, verdict=judged.verdict, runs=[run],
                      model=model_id, qualifiers=list(judged.qualifiers))


def chapter(name: str) -> ChapterInfo:
    return ChapterInfo(name=name, label=f"ch {name}", title=name, path=f"{name}.yaml", implementation_defined=False,
                       case_ids=["a", "b"], pairs={"ab": ["a", "b"]}, twins={}, sha256="c" * 64)


def report(layout: str, n: int) -> Report:
    """Report n of `layout`: checkpoint n on one chapter, or chapter n of one model. P(correct) drifts with n, so
    the checkpoints differ and their margins move."""
    info = model(n) if layout == "checkpoints" else model(0)
    name = "sets" if layout == "checkpoints" else f"ch{n}"
    p = 0.25 + 0.5 * ((n * 7) % 11) / 10
    results = [result("a", name, info.id, p), result("b", name, info.id, round(0.9375 - p, 4))]
    return Report(results, [chapter(name)], [info], Invocation(command="pytest --gotchas", date=DATE))


def write_reports(folder: Path, layout: str, count: int) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for n in range(count):
        path = folder / f"{layout}-{n}.json"
        json_report.write(path, report(layout, n))
        names.append(path.name)
    return names


@dataclass(frozen=True)
class Measured:
    layout: str
    reports: int
    wall: float
    cpu: float
    rss_mb: float
    json_bytes: int
    page_bytes: int


def merge_args(layout: str, names: list[str]) -> list[str]:
    order = [f"--order=step{n}={n * 100}" for n in range(len(names))] if layout == "checkpoints" else []
    return [*names, *order, "--json", "merged.json", "--html", "merged.html"]


MAIN = "import sys; from pytest_gotchas.cli import main; sys.exit(main())"


def startup() -> float:
    """CPU seconds of `gotchas merge --help`: the imports every merge pays before it reads a report."""
    with tempfile.TemporaryDirectory(prefix="gotchas-merge-") as tmp:
        child = run_child([sys.executable, "-c", MAIN, "merge", "--help"], Path(tmp))
    return child.cpu


def measure(layout: str, count: int, keep: Path | None) -> Measured:
    workdir = Path(tempfile.mkdtemp(prefix=f"gotchas-merge-{layout}-{count}-", dir=keep))
    try:
        names = write_reports(workdir, layout, count)
        argv = [sys.executable, "-c", MAIN, "merge", *merge_args(layout, names)]
        log(f"{layout}: merging {count} reports")
        child = run_child(argv, workdir)
        if child.returncode != 0:
            raise SystemExit(f"gotchas merge failed (exit {child.returncode}):\n{child.stderr[-3000:]}")
        found = Measured(layout, count, child.wall, child.cpu, child.maxrss_mb,
                         (workdir / "merged.json").stat().st_size, (workdir / "merged.html").stat().st_size)
        log(f"{layout}: {count} reports: " + table([found], 0.0)[-1])
        return found
    finally:
        if keep is None:
            shutil.rmtree(workdir, ignore_errors=True)


def table(found: list[Measured], fixed: float) -> list[str]:
    """One row per merge; `fixed`: the CPU seconds of the imports, left out of the cost per report."""
    rows = ["| layout | reports | wall s | CPU s | CPU ms per report, imports left out | peak MB | JSON kB | page kB | "
            "page kB per report |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for m in found:
        rows.append(f"| {m.layout} | {m.reports:,} | {m.wall:.1f} | {m.cpu:.1f} | "
                    f"{1000 * max(m.cpu - fixed, 0.0) / m.reports:.1f} | {m.rss_mb:.0f} | {m.json_bytes / 1000:,.0f} | "
                    f"{m.page_bytes / 1000:,.0f} | {m.page_bytes / 1000 / m.reports:.1f} |")
    return rows


def growth(found: list[Measured], fixed: float) -> list[str]:
    """Per layout: CPU time (the imports left out) and page bytes per report at the largest size over the
    smallest's."""
    lines = []
    for layout in dict.fromkeys(m.layout for m in found):
        sized = sorted((m for m in found if m.layout == layout), key=lambda m: m.reports)
        if len(sized) < 2:
            continue
        small, large = sized[0], sized[-1]
        cpu = (max(large.cpu - fixed, 1e-9) / large.reports) / (max(small.cpu - fixed, 1e-9) / small.reports)
        page = (large.page_bytes / large.reports) / (small.page_bytes / small.reports)
        lines.append(f"{layout}: {small.reports:,} -> {large.reports:,} reports: CPU time per report x{cpu:.2f} "
                     f"({'linear' if cpu <= GROWTH_SLACK else 'SUPERLINEAR'}); page bytes per report x{page:.2f} "
                     f"({'linear' if page <= GROWTH_SLACK else 'SUPERLINEAR'})")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 200, 1000])
    parser.add_argument("--layout", choices=LAYOUTS, action="append", help="default: both")
    parser.add_argument("--keep", type=Path, help="keep the work folders under this folder")
    args = parser.parse_args(argv)
    info = machine()
    fixed = startup()
    found = [measure(layout, size, args.keep) for layout in args.layout or LAYOUTS for size in sorted(args.sizes)]
    print(header("gotchas merge at scale: tiny reports", info,
                 f"{', '.join(f'{s:,}' for s in sorted(args.sizes))} reports of two cases each"))
    print(f"imports (`gotchas merge --help`): {fixed:.2f} CPU s\n")
    print("\n".join(table(found, fixed)))
    print()
    print("\n".join(growth(found, fixed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
