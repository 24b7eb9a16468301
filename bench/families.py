"""The library of families at a setting: `pytest --gotchas cases --gotchas-instances N --collect-only` cold (an empty
transcript cache: every snippet executed) and warm, each a whole process (child.py: wall and CPU time, peak memory),
with the count of paired instances it collected, all verified (the run exits 0 only when ground truth refuses
nothing); and, with --score, the scoring run at that setting on the embedded default model.

    python -m bench.families                     # N = 30: cold and warm collection
    python -m bench.families --instances 5       # another setting
    python -m bench.families --score             # and the scoring run (hours on a shared 2-core CPU)

The counts come from the chapters themselves (cases/families.py draws the same instances the plugin does), checked
against the items the run listed: every drawn case must be collected, and none refused.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from pytest_gotchas.cases.chapter import load_chapter
from pytest_gotchas.cases.families import drawn
from pytest_gotchas.results.vocabulary import FamilyKind

from .child import REPO, BenchFailed, Child, log, machine, run_child

FULL = 30  # the library's full setting: docs/cases.md, "Families"


def expected(cases: Path, n: int) -> tuple[int, int, set[str]]:
    """(families, paired instances drawn, every case id the run must list as `cases/<file>::<id>`)."""
    families, pairs, ids = 0, 0, set[str]()
    for path in sorted(cases.glob("*.yaml")):
        chapter = drawn(load_chapter(path), n)
        families += len(chapter.families)
        kinds = {family.id: family.kind for family in chapter.families}
        pairs += sum(1 for instance in chapter.instances if kinds[instance.family] == FamilyKind.PAIR)
        ids.update(f"cases/{path.name}::{case.id}" for case in chapter.cases)
    return families, pairs, ids


def collect(workdir: Path, n: int) -> Child:
    argv = [sys.executable, "-m", "pytest", "--gotchas", "cases", "--gotchas-instances", str(n), "--collect-only",
            "-q", "-p", "no:randomly"]
    child = run_child(argv, workdir)
    if child.returncode != 0:
        raise BenchFailed(f"{' '.join(argv)} exited {child.returncode} (a refusal, or worse):\n{child.stdout[-3000:]}")
    return child


def score(workdir: Path, n: int) -> Child:
    report = workdir / "full.json"
    argv = [sys.executable, "-m", "pytest", "--gotchas", "cases", "--gotchas-instances", str(n), "-p", "no:randomly",
            "--gotchas-json", str(report)]
    return run_child(argv, workdir, report)


def row(what: str, child: Child) -> str:
    return f"| {what} | {child.wall:.1f} | {child.cpu:.1f} | {child.maxrss_mb:.0f} |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.families", description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=FULL, metavar="N")
    parser.add_argument("--score", action="store_true", help="also the scoring run at the setting")
    args = parser.parse_args(argv)
    log(f"machine: {machine()}")
    with tempfile.TemporaryDirectory(prefix="bench-families-") as tmp:
        workdir = Path(tmp)
        shutil.copytree(REPO / "cases", workdir / "cases")
        families, pairs, ids = expected(workdir / "cases", args.instances)
        log(f"{families} families; {pairs} paired instances drawn at --gotchas-instances {args.instances}")
        runs = [("collect, cold", collect(workdir, args.instances)), ("collect, warm", collect(workdir, args.instances))]
        listed = {line for line in runs[0][1].stdout.splitlines() if "::" in line}
        if not ids <= listed:
            raise BenchFailed(f"{len(ids - listed)} drawn cases were not collected, e.g. {sorted(ids - listed)[:3]}")
        if args.score:
            runs.append(("score", score(workdir, args.instances)))
    print(f"{families} families, {pairs} paired instances collected and verified ({len(ids)} cases in all) at "
          f"--gotchas-instances {args.instances}")
    print("| run | wall s | CPU s | peak MB |\n|---|---:|---:|---:|")
    for what, child in runs:
        print(row(what, child))
    return 0


if __name__ == "__main__":
    sys.exit(main())
