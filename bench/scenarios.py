"""What the bench runs: the case sets (the spec's chapters, copied, optionally repeated under new names) and the
scenarios, each one command line, grouped into the plans of `bench.run` and `bench.features`.

A Scenario is data: its name (the key of its runs and of its row), the plugin options (or a script), which copy of
the cases it runs in, and its environment. A Group repeats its scenarios, interleaved: every repetition runs each
scenario once, in the group's order for that repetition.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from .child import REPO

SPEC_CHAPTERS = ("0-pep289.yaml", "1-floats.yaml", "2-sets.yaml", "3-bound-methods.yaml", "4-versions.yaml")
NAIVE_SCRIPT = Path(__file__).with_name("naive.py")

COLD = "cold"  # a fresh copy of the cases for each run: empty .pytest_cache, every snippet executed
WARM = "warm"  # the copy of the latest cold run at this scale (caches filled), or one warmed by uncounted runs
NONE = "none"  # no copy of the cases: the bench's own directory (scripts that read no case)


class Paths(Protocol):
    """What a script's command line may name (measure.Context)."""

    model: Path

    def prompts(self) -> Path: ...


@dataclass(frozen=True)
class Scenario:
    name: str
    options: tuple[str, ...] = ()  # after `pytest --gotchas cases --gotchas-json REPORT`
    cache: str = WARM
    scale: int = 1  # the spec's chapters repeated this many times
    env: dict[str, str] = field(default_factory=dict)
    script: Callable[[Paths], list[str]] | None = None  # instead of the plugin: `python ARGS`


@dataclass(frozen=True)
class Group:
    scenarios: tuple[Scenario, ...]
    reps: int
    # Per repetition (cycled): the order of the scenarios named; any other scenario of the group follows, in its
    # listed order. Empty: the listed order every time.
    orders: tuple[tuple[str, ...], ...] = ()

    def order(self, rep: int) -> list[Scenario]:
        if not self.orders:
            return list(self.scenarios)
        named = self.orders[rep % len(self.orders)]
        by_name = {s.name: s for s in self.scenarios}
        return [by_name[n] for n in named if n in by_name] + [s for s in self.scenarios if s.name not in named]


# -- bench.run ----------------------------------------------------------------------------------------------------

NAIVE = Scenario("naive", cache=NONE, script=lambda paths: ["-c", NAIVE_SCRIPT.read_text(), str(paths.model),
                                                             str(paths.prompts())])
COLD_RUN = Scenario("cold", cache=COLD)
WARM_RUN = Scenario("warm")
# Cold always before warm (warm runs in that repetition's cold copy); the naive script at each place in turn.
ORDERS = (("cold", "warm", "naive"), ("naive", "cold", "warm"), ("cold", "naive", "warm"))
# More whole runs to compare with the naive script, interleaved with the three above: a row each (render.comparison).
EXTRA: tuple[Scenario, ...] = ()

BARE = Scenario("bare python", cache=NONE, script=lambda paths: ["-c", "pass"])
IMPORTS = Scenario("imports", cache=NONE, script=lambda paths: ["-c", "import pytest, torch, transformers"])
COLLECT_ONLY = Scenario("collect-only", script=lambda paths: ["-m", "pytest", "--gotchas", "cases", "--collect-only",
                                                               "-q"])
# -n 2 warm, with each worker's share of the cores (the default) and with every core per worker.
XDIST_SHARED = Scenario("-n 2 shared cores", ("-n", "2"))
XDIST_ALL = Scenario("-n 2 all cores", ("-n", "2"), env={"OMP_NUM_THREADS": str(os.cpu_count())})


def batch(size: int) -> Scenario:
    return Scenario(f"batch {size}", ("--gotchas-batch-size", str(size)))


def scaled(scale: int, cache: str) -> Scenario:
    return Scenario(f"{scale}x {cache}", cache=cache, scale=scale)


@dataclass(frozen=True)
class BenchOptions:
    reps: int = 3  # of the main group, the batch sizes and -n 2
    batch_sizes: tuple[int, ...] = (4, 8)
    scales: tuple[int, ...] = (1, 4, 16)
    scale_reps: int = 2  # warm runs per scale above 1x
    xdist: bool = True  # the -n 2 warm runs
    collect_only: bool = True  # the whole --collect-only processes


def cost_only(o: BenchOptions) -> BenchOptions:
    """`--cost-only`: the main group (cold, warm and naive, interleaved, with their same-numbers checks) and the
    interpreter's baseline (two short runs: the memory target's budget), nothing else; the repetitions kept."""
    return dataclasses.replace(o, batch_sizes=(), scales=(1,), xdist=False, collect_only=False)


def bench_plan(o: BenchOptions) -> list[Group]:
    """Every group of `bench.run`, in the order they run (the logged cold runs of bench.executions come after)."""
    plan = [Group((NAIVE, COLD_RUN, WARM_RUN, *EXTRA), o.reps, ORDERS),
            Group((BARE, IMPORTS), 2),
            Group((COLLECT_ONLY,) if o.collect_only else (), 3),
            Group(tuple(batch(size) for size in o.batch_sizes), o.reps),
            Group((XDIST_SHARED, XDIST_ALL) if o.xdist else (), o.reps)]
    for scale in o.scales:
        if scale != 1:  # 1x is the main group's cold and warm runs
            plan += [Group((scaled(scale, COLD),), 1), Group((scaled(scale, WARM),), o.scale_reps)]
    return [group for group in plan if group.scenarios]


# -- bench.features -----------------------------------------------------------------------------------------------

TWO = ("--gotchas-model", "gemma-3-270m", "--gotchas-model", "smollm2-135m")
PLAIN = Scenario("plain")  # the reference of every feature's ratios
FEATURES = [
    PLAIN,
    Scenario("precision check", ("--gotchas-precision-check",)),
    Scenario("layers", ("--gotchas-layers",)),
    Scenario("variants", ("--gotchas-variants",)),
]
TWO_MODELS = Scenario("two models", TWO)
SMOLLM2_ALONE = Scenario("smollm2-135m alone", ("--gotchas-model", "smollm2-135m"))
COLD_ONE = Scenario("cold, one model", cache=COLD)
COLD_TWO = Scenario("cold, two models", TWO, cache=COLD)


def features_warm_up(two_models: bool) -> tuple[tuple[str, ...], ...]:
    """The uncounted runs that fill the warm copy's caches: every variant's transcripts, the second model's cuts."""
    return (("--gotchas-variants",), TWO) if two_models else (("--gotchas-variants",),)


def features_plan(reps: int, two_models: bool) -> list[Group]:
    if not two_models:
        return [Group(tuple(FEATURES), reps)]
    return [Group((*FEATURES, TWO_MODELS), reps), Group((SMOLLM2_ALONE,), 1), Group((COLD_ONE, COLD_TWO), 1)]


# -- case sets ----------------------------------------------------------------------------------------------------


def chapters(all_chapters: bool) -> list[Path]:
    return sorted((REPO / "cases").glob("*.yaml")) if all_chapters else [REPO / "cases" / n for n in SPEC_CHAPTERS]


def renamed_chapter(text: str, copy: int) -> str:
    """The chapter as copy number ``copy`` (0: unchanged): new chapter name, new case ids, pairs and twins
    pointing at them. Transcripts are untouched, so the prompts (and their cache keys) are the same."""
    if copy == 0:
        return text
    suffix = f"-r{copy}"
    out, section = [], None
    for line in text.split("\n"):
        top = re.match(r"^([A-Za-z_]+):", line)
        if top:
            section = top[1]
        if section == "chapter" and top:
            line = re.sub(r"^chapter:\s*(\S+)", lambda m: f"chapter: {m[1]}{suffix}", line)
        elif section == "cases":
            line = re.sub(r"^(\s*-\s*id:\s*)(\S+)", lambda m: f"{m[1]}{m[2]}{suffix}", line)
        elif section in ("pairs", "twins"):
            line = re.sub(r"^(\s+\S+:\s*)\[([^\]]*)\]",
                          lambda m: m[1] + "[" + ", ".join(x.strip() + suffix for x in m[2].split(",")) + "]", line)
        out.append(line)
    return "\n".join(out)


def make_workdir(root: Path, name: str, chapter_files: Sequence[Path], scale: int) -> Path:
    workdir = root / name
    (workdir / "cases").mkdir(parents=True)
    for path in chapter_files:
        text = path.read_text(encoding="utf-8")
        for copy in range(scale):
            target = workdir / "cases" / (path.name if copy == 0 else f"{path.stem}-r{copy}{path.suffix}")
            target.write_text(renamed_chapter(text, copy), encoding="utf-8")
    return workdir
