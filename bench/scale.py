"""A library of any size: a generated chapter of N cases (one call each, cut in the output), collected cold and
warm and scored, each run a whole process (child.py: wall and CPU time, peak memory), so that growth can be read as
seconds and megabytes per case at each size.

    python -m bench.scale                           # 1,000 and 5,000 cases; 1,000 scored on a tiny model
    python -m bench.scale --score 250 1000          # scoring's growth from 250 to 1,000 cases
    python -m bench.scale --real 1000               # and the 1,000-case chapter scored on gemma-3-270m
    python -m bench.scale --runs 2                  # each snippet executed twice, not three times (the least)

Cold means an empty .pytest_cache (every snippet executed); warm reads the transcript cache. Scoring 5,000 cases is
too slow for a shared 2-core CPU, so the sizes named by --score are scored on the tests' tiny model (a one-layer
Gemma3 whose logits are set by hand: the plugin's whole path, a model whose forward costs little), and --real scores the
chapter of one size on the embedded default model. Growth is linear when the cost per case at the largest size is
within GROWTH_SLACK of the smallest's, in CPU seconds (the process and the snippets' interpreters it waited for): on
a shared machine wall time measures the other work as much as this.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .child import Child, header, log, machine, model_folder, read_report, run_child

GROWTH_SLACK = 1.25  # per-case cost at the largest size over the smallest's; more than this is superlinear
# After a newline (the cut is at the start of the output line) the tiny model prefers 1 and 2 over every other
# token: its verdicts are beside the point, its forward passes are the real thing.
TINY_RULES = {"\n": {"1": 2.0, "2": 1.0}}
# The function bodies, and the same arithmetic in Python to know what each call prints.
OPERATIONS: tuple[tuple[str, Callable[[int, int, int], int]], ...] = (
    ("a * b + {k}", lambda a, b, k: a * b + k),
    ("(a + {k}) * b", lambda a, b, k: (a + k) * b),
    ("a * a + b + {k}", lambda a, b, k: a * a + b + k),
    ("(a + b) * {k} + 100", lambda a, b, k: (a + b) * k + 100),
    ("a + b * {k}", lambda a, b, k: a + b * k),
)


def case_text(n: int) -> str:
    """Case n of the generated chapter: a small function and one call of it, cut before the printed result; the
    misreading is the result with another first digit."""
    a, b = 3 + n % 7, 2 + n % 5
    body, compute = OPERATIONS[n % len(OPERATIONS)]
    correct = str(compute(a, b, n))
    wrong = ("1" if correct[0] == "9" else str(int(correct[0]) + 1)) + correct[1:]
    return (f"  - id: call-{n}\n"
            f"    transcript: |-\n"
            f"      >>> def f{n}(a, b):\n"
            f"      ...     return {body.format(k=n)}\n"
            f"      ... \n"
            f"      >>> f{n}({a}, {b})\n"
            f"      █\n"
            f"    correct: \"{correct}\"\n"
            f"    wrong: \"{wrong}\"\n")


def chapter_text(cases: int) -> str:
    """A chapter of `cases` generated cases; every snippet differs, so a cold collection executes each."""
    head = ("chapter: generated\nnumber: 1\ntitle: \"generated: one call each\"\ninterpreter: \"3.12\"\n"
            "env: {PYTHONHASHSEED: \"0\"}\ncases:\n")
    return head + "".join(case_text(n) for n in range(cases))


@dataclass(frozen=True)
class Measured:
    what: str
    cases: int
    wall: float
    cpu: float  # user + system seconds, snippets' interpreters included
    rss_mb: float
    collection: float | None = None  # the run's own collection phase (a scoring run's JSON report)
    forward: float | None = None


def _run(workdir: Path, what: str, cases: int, args: list[str], report: bool) -> Measured:
    path = workdir / f"{what}.json" if report else None
    argv = [sys.executable, "-m", "pytest", "--gotchas", "cases", "-p", "no:randomly", "-q", *args]
    if path is not None:
        argv += ["--gotchas-json", str(path)]
    log(f"{what}: {cases} cases")
    child: Child = run_child(argv, workdir, path)
    if child.returncode not in (0, 1) or (report and child.report is None):
        raise SystemExit(f"{' '.join(argv)} failed (exit {child.returncode}):\n{child.stdout[-3000:]}\n"
                         f"{child.stderr[-3000:]}")
    seconds = child.timings.seconds
    found = Measured(what, cases, child.wall, child.cpu, child.maxrss_mb, seconds.get("collection"),
                     seconds.get("forward"))
    log(f"{what}: {cases} cases: " + table([found])[-1])  # each figure as soon as it is measured
    return found


def measure(sizes: list[int], scored: list[int], real: int, runs: int, tiny: Path, keep: Path | None
            ) -> list[Measured]:
    """Every size collected cold then warm; the sizes in `scored` then scored on the tiny model, and the size `real`
    on gemma-3-270m, each after its warm collection (the transcript cache filled)."""
    found = []
    for size in sorted(set(sizes) | set(scored) | ({real} if real else set())):
        workdir = Path(tempfile.mkdtemp(prefix=f"gotchas-scale-{size}-", dir=keep))
        (workdir / "cases").mkdir()
        (workdir / "cases" / "1-generated.yaml").write_text(chapter_text(size), encoding="utf-8")
        (workdir / "pytest.ini").write_text(f"[pytest]\ngotchas_runs = {runs}\n", encoding="utf-8")
        found.append(_run(workdir, "collect, cold", size, ["--collect-only"], report=False))
        found.append(_run(workdir, "collect, warm", size, ["--collect-only"], report=False))
        if size in scored:
            found.append(_run(workdir, "score, tiny model", size, ["--gotchas-model", str(tiny)], report=True))
        if size == real:
            found.append(_run(workdir, "score, gemma-3-270m", size, [], report=True))
        if keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return found


def table(found: list[Measured]) -> list[str]:
    rows = ["| run | cases | wall s | CPU s | CPU s per 1,000 cases | peak MB | collection s | forward s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for m in found:
        phase = f"{m.collection:.1f}" if m.collection is not None else ""
        forward = f"{m.forward:.1f}" if m.forward is not None else ""
        rows.append(f"| {m.what} | {m.cases:,} | {m.wall:.1f} | {m.cpu:.1f} | {1000 * m.cpu / m.cases:.1f} | "
                    f"{m.rss_mb:.0f} | {phase} | {forward} |")
    return rows


def growth(found: list[Measured]) -> list[str]:
    """Per run: the CPU time per case at the largest size over the smallest's (CPU, not wall: the machine is shared),
    and the peak memory added per case (memory is mostly the interpreter and the model)."""
    lines = []
    for what in dict.fromkeys(m.what for m in found):
        sized = sorted((m for m in found if m.what == what), key=lambda m: m.cases)
        if len(sized) < 2:
            continue
        small, large = sized[0], sized[-1]
        ratio = (large.cpu / large.cases) / (small.cpu / small.cases)
        verdict = "linear" if ratio <= GROWTH_SLACK else "SUPERLINEAR"
        lines.append(f"{what}: {small.cases:,} -> {large.cases:,} cases: CPU time per case x{ratio:.2f} ({verdict}); "
                     f"peak memory {small.rss_mb:.0f} -> {large.rss_mb:.0f} MB "
                     f"({(large.rss_mb - small.rss_mb) / (large.cases - small.cases) * 1000:.1f} MB per 1,000 "
                     "cases more)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--score", type=int, nargs="*", default=[1000], metavar="N",
                        help="the sizes also scored on the tiny model (default 1000)")
    parser.add_argument("--real", type=int, default=0, metavar="N",
                        help="also score the chapter of N cases on gemma-3-270m (0: none)")
    parser.add_argument("--runs", type=int, default=3, help="--gotchas-runs of the generated chapter")
    parser.add_argument("--keep", type=Path, help="keep the work folders under this folder")
    args = parser.parse_args(argv)
    info = machine()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.helpers.tinymodel import build_tiny_model

    with tempfile.TemporaryDirectory(prefix="gotchas-tiny-") as tmp:
        tiny = build_tiny_model(Path(tmp) / "model", TINY_RULES)
        if args.real:
            model_folder()  # converted before anything is timed
        found = measure(args.sizes, args.score, args.real, args.runs, tiny, args.keep)
    print(header("pytest-gotchas at scale: a generated chapter", info,
                 f"{', '.join(f'{s:,}' for s in sorted(args.sizes))} generated cases, --gotchas-runs {args.runs}"))
    print("\n".join(table(found)))
    print()
    print("\n".join(growth(found)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
