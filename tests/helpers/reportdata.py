"""A report with every kind of case, made in the test session by the plugin's own steps on tiny models.

The views (HTML, JSON, junit) are tested on it, so their test material is what the code builds today, never a
recorded file that goes stale: ok, MISS, prime-dep, unscored, a healed cut and a multi-token chain, pairs, twins.
`score_models` scores the same chapters with two tiny models that read `a`, `b` and the healed cut the other way
round, for the pages and merges of several models.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from helpers.execution import strong
from helpers.tinymodel import build_tiny_model

from pytest_gotchas.backends.transformers import TransformersBackend
from pytest_gotchas.baseline.compare import compare
from pytest_gotchas.baseline.store import Baseline
from pytest_gotchas.model.load import ModelSpec, load_model
from pytest_gotchas.results.baselines import BaselineOutcome
from pytest_gotchas.results.report import Report
from pytest_gotchas.results.schema import CaseResult, ChapterInfo, ModelInfo, Invocation
from pytest_gotchas.results.verdict import Status
from pytest_gotchas.scoring.scorer import Scorer, ScoringConfig
from pytest_gotchas.scoring.slot import Clock, ModelSlot
from pytest_gotchas.truth.collect import Collector
from pytest_gotchas.truth.execute import Cache, Limits
from pytest_gotchas.truth.interpreters import Finder

RULES = {
    "a": {"7": 2.0, "8": 1.0},  # ok
    "b": {"7": 1.0, "8": 2.0},  # MISS
    "6": {"),": 2.0, ")]": 1.0},  # the healed cut of `[(5, 6)█`
    "{": {"'": 1.0, "'.": 2.0},  # the chain `'` + `k` against `'.`
    "'": {"k": 3.0},
    "\n": {"3": 1.0, "4": 1.0},
}
WINDOW_RULES = {"F": {"3": 2.0}, "T": {"4": 2.0}}  # the last primer answer decides: prime-dep

DEMO = """\
chapter: demo
title: "demo: every kind of cut"
interpreter: "3.11"
env: {PYTHONHASHSEED: "0"}
cases:
  - id: right
    transcript: |-
      >>> print("a7")
      a█
    correct: "7"
    wrong: "8"
    note: "the rule after a prefers 7"
  - id: wrong
    transcript: |-
      >>> print("b7")
      b█
    correct: "7"
    wrong: "8"
  - id: healed
    transcript: |-
      >>> [(5, 6), (7, 8)]
      [(5, 6)█
    correct: ","
    wrong: "]"
  - id: chain
    transcript: |-
      >>> print("[{'k")
      [{'█
    correct: "k"
    wrong: "."
  - id: unseeded
    transcript: |-
      $ python -c "print(set(str(x) for x in range(5)))"
      {█
    unscored: "output changes with the hash seed"
pairs:
  good-pair: [right, healed]
  bad-pair: [right, wrong]
twins:
  spelled-twice: [right, wrong]
"""

PRIMED = """\
chapter: primed
number: 1
title: "primers decide"
interpreter: "3.11"
primers:
  F-last: |
    >>> print("T")
    T
    >>> print("F")
    F
  T-last: |
    >>> print("F")
    F
    >>> print("T")
    T
cases:
  - id: swayed
    transcript: |-
      >>> print(3)
      █
    correct: "3"
    wrong: "4"
  - id: steady
    transcript: |-
      >>> print("a7")
      a█
    correct: "7"
    wrong: "8"
pairs:
  mixed: [swayed, steady]
"""

RUN = {"command": "pytest --gotchas cases/", "date": "2026-11-30T12:00:00+00:00", "pytest": "9.2.0",
       "python": "3.11.7", "platform": "Linux-test", "xdist_workers": 0}
# The second model prefers 8 after `a` (right: MISS), 7 after `b` (wrong: ok) and `)]` after `6` (healed: MISS).
OTHER_RULES = {**RULES, "a": {"7": 1.0, "8": 2.0}, "b": {"7": 2.0, "8": 1.0}, "6": {"),": 1.0, ")]": 2.0}}
MODELS = {"tiny-a": RULES, "tiny-b": OTHER_RULES}
CHAPTERS = (("demo.yaml", DEMO), ("primed.yaml", PRIMED))


@dataclass
class Scored:
    """What a run of the chapters above produced: every model's results, the chapters and the models scored."""

    results: dict[str, list[CaseResult]]  # by model id, in the order they ran
    chapters: list[ChapterInfo]
    models: dict[str, ModelInfo]

    def report(self, models: list[str] | None = None, run: dict | None = None, **values: object) -> Report:
        """The report of a run of `models` (every model by default)."""
        chosen = list(self.results) if models is None else models
        return Report([r for m in chosen for r in self.results[m]], list(self.chapters),
                      [self.models[m] for m in chosen if m in self.models], Invocation(**(RUN if run is None else run)),
                      **values)  # type: ignore[arg-type]


def score_models(folder: Path, models: dict[str, dict[str, dict[str, float]]] = MODELS) -> Scored:
    """Each model's results of the chapters above, collected once and scored as the plugin does."""
    for name, text in CHAPTERS:
        (folder / name).write_text(text, encoding="utf-8")
    collector = Collector(Finder(), Cache(folder / "transcripts", strong()), Limits(), runs=3)
    plans = [collector.plan_chapter(folder / name, name) for name, _ in CHAPTERS]
    assert not [message for plan in plans for message in plan.refused]
    scored = Scored({}, [plan.info for plan in plans], {})
    for model_id, rules in models.items():
        path = build_tiny_model(folder / model_id, rules, window_rules=WINDOW_RULES, window=16)
        slot = ModelSlot(lambda p=path: TransformersBackend(load_model(ModelSpec(name=str(p), device="cpu"),
                                                                       folder / "cache")), Clock())
        scorer = Scorer(model_id=model_id, slot=slot, config=ScoringConfig(top_k=5))
        scored.results[model_id] = [scorer.score(p) if p.status == Status.SCORED else p.result(model=model_id)
                                    for plan in plans for p in plan.planned]
        if scorer.model_info is not None:
            scored.models[model_id] = scorer.model_info
    return scored


def build_report(folder: Path) -> Report:
    """Every chapter above, collected and scored as the plugin does on one model, with a baseline that one pair
    regresses against and one improves on."""
    scored = score_models(folder, {"model": RULES})
    report = scored.report()
    recorded = Baseline(None, pairs={"demo/good-pair": "fail", "demo/bad-pair": "pass", "primed/mixed": "fail"})
    comparison = compare(recorded, report.results, report.infos)
    report.baselines = [BaselineOutcome(model="model", path="baselines/tiny.yaml", comparison=comparison)]
    return report
