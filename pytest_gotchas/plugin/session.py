"""One process's gotchas state, shared by both roles (plugin/controller.py and plugin/worker.py): the settings, the
steps wired from them, and what this process learned (the chapters it collected, the models it loaded).

Nothing touches the disk until it is needed: a pytest run that collects no chapter and asks for no fixture of this
plugin creates no cache folder, and a cache folder that cannot be written is one warning and a run without it.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from ..baseline.gate import Gate, SettingsRefused, make_gate, update_command
from ..baseline.store import BaselineError, checks_of
from ..model.ref import ModelRef, model_refs, short_ids
from ..report import wording, wording_baseline
from ..results.schema import ChapterInfo, ModelInfo, Timings
from ..scoring.scorer import Scorer, process_timings
from ..scoring.slot import Clock
from ..results.verdict import Status
from ..truth import sandbox
from ..truth.collect import Collector, Planned
from ..settings import wiring
from ..settings.options import Settings
from .. import compat
from .progress import Progress
from .warning import GotchasWarning

def worker(config: pytest.Config) -> tuple[str | None, int]:
    """(this xdist worker's id, the number of workers), or (None, 0) outside xdist."""
    info = getattr(config, "workerinput", None)
    return (info["workerid"], int(info.get("workercount") or 0)) if info else (None, 0)


class GotchasSession:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config, self.settings = config, settings
        self.worker_id, self.workers = worker(config)
        refs = model_refs(settings.models)
        self.model_ids = short_ids(refs)
        self.model_refs = dict(zip(self.model_ids, refs))
        self.clock = Clock()
        self.scorers: dict[str, Scorer] = {}
        self.chapters: list[ChapterInfo] = []  # every chapter this process collected or recorded into
        self.chapter_files: dict[str, Path] = {}  # chapter name -> the file that has it
        self.notes: dict[str, list[str]] = {}  # model -> its notes in this process (keep_notes)
        self._pytest_cache: Path | None = None
        self._cache_asked = False
        self._collector: Collector | None = None
        self._isolation: sandbox.Isolation | None = None
        self._progress: Progress | None = None
        self.patch_total: int | None = None  # --gotchas-patch: the pairs this process patches, once known
        self.patch_done = 0
        self.run_plan: dict[str, list[Planned]] = {}  # model -> the scored cases this process will put to it
        asking = config.getoption("help", False) or config.getoption("version", False)  # pytest --help: no probe
        if settings.enabled and not asking:  # confinement is a decision: strong unless asked otherwise, else an error
            refuse_unsupported(config, settings, refs, self.workers)  # what a backend cannot do, before any probe
            self._isolation = self._choose()
        self.gate: Gate | None = make_run_gate(config, settings, self.model_ids) if settings.enabled else None

    def _choose(self) -> sandbox.Isolation:
        try:
            return sandbox.choose(self.settings.isolation, project=self.config.rootpath)
        except sandbox.Unavailable as error:
            raise pytest.UsageError(str(error)) from None

    @property
    def isolation(self) -> sandbox.Isolation:
        """How this run confines every snippet: chosen at configure (a run that cannot have it stops there), and
        given to the collector; nothing process-wide is changed."""
        if self._isolation is None:
            self._isolation = self._choose()
        return self._isolation

    @property
    def pytest_cache(self) -> Path | None:
        """pytest's cache folder for this plugin, made on first use; None without a cache (-p no:cacheprovider) or
        when it cannot be written (said once, as a warning)."""
        if not self._cache_asked:
            self._cache_asked = True
            cache = getattr(self.config, "cache", None)
            if cache is not None:
                try:
                    self._pytest_cache = cache.mkdir("gotchas")
                except OSError as error:
                    # pytest's own cache folder (the error names a temporary file it tried to make there)
                    folder = compat.cache_folder(cache, self.config.rootpath / ".pytest_cache") / "d" / "gotchas"
                    warnings.warn(GotchasWarning(wording.cache_folder_lost(str(folder), error.strerror or str(error))))
        return self._pytest_cache

    @property
    def progress(self) -> Progress:
        """The terminal's progress line (plugin/progress.py), once pytest's terminal reporter is there."""
        if self._progress is None:
            self._progress = Progress.of(self.config, worker=self.worker_id is not None)
        return self._progress

    @property
    def collector(self) -> Collector:
        if self._collector is None:
            cache = self.pytest_cache
            self._collector = wiring.collector(self.settings, cache / "transcripts" if cache else None, self.isolation,
                                               cache / "interpreters.json" if cache else None)
        return self._collector

    def scorer(self, model: str) -> Scorer:
        """The scorer of one model of the run (its model loads on first use)."""
        if model not in self.scorers:
            self.scorers[model] = wiring.scorer(self.settings, model, self.model_refs[model], self.clock,
                                                self.pytest_cache, worker_id=self.worker_id, workers=self.workers,
                                                log=_notice, planned=lambda: self.run_plan.get(model, []),
                                                progress=self.progress)
        return self.scorers[model]

    def plan_run(self, items: list[tuple[str, Planned]]) -> None:
        """The (model, planned case) of every item this process will run, once collection is done: a model read
        through vLLM reads all of its cases' contexts at its first case."""
        self.run_plan = {}
        for model, planned in items:
            if planned.status == Status.SCORED:
                self.run_plan.setdefault(model, []).append(planned)

    def keep_notes(self, scorer: Scorer) -> None:
        """A model's notes (how its load or the run went against what was asked), kept to be said once at the
        run's end (plugin/controller.py), since they are no case's."""
        kept = self.notes.setdefault(scorer.model_id, [])
        kept.extend(note for note in scorer.notes if note not in kept)

    def know(self, chapter: ChapterInfo) -> None:
        self.chapters.append(chapter)

    def model_infos(self) -> list[ModelInfo]:
        """The models this process scored with, in the run's order."""
        return [s.model_info for m in self.model_ids if (s := self.scorers.get(m)) and s.model_info is not None]

    def timings(self) -> Timings:
        collector = self._collector
        return process_timings(self.clock, list(self.scorers.values()), collector.cache if collector else _NoCache)


def refuse_unsupported(config: pytest.Config, settings: Settings, refs: list[ModelRef], workers: int) -> None:
    """A model name that can only be a typo (or a hub id offline and not cached: model/names.py), what a backend of
    the run's models cannot do, a kernel path the dtype has no use for and a softmax dtype the scorer does not
    compute is one usage error at the start, naming the flag and the backend (the capabilities each backend of
    backends/ declares, model/kernels.py, scoring/rows.py)."""
    from ..backends import run_refusals
    from ..model import kernels, names as model_names
    from ..scoring.rows import softmax_refusal

    asked = getattr(config.option, "numprocesses", None) or 0  # the controller's -n; "auto" and "logical" count
    refused = [r for r in (*map(model_names.refusal, refs), kernels.refusal(settings.kernels, settings.dtype),
                           softmax_refusal(settings.softmax_dtype, settings.dtype)) if r]
    problems = refused + run_refusals(refs, wiring.asked(settings, workers=workers or (
        asked if isinstance(asked, int) else 2)))
    if problems:
        raise pytest.UsageError("\n".join(problems))


def make_run_gate(config: pytest.Config, values: Settings, models: list[str]) -> Gate:
    """The baselines this run compares with (read now, so that a bad file is a usage error before anything runs).
    A --gotchas-baseline path is relative to the current directory, the ini option's to the ini file."""
    explicit = values.baseline
    if explicit is not None and not explicit.is_absolute():
        from_cli = config.getoption("gotchas_baseline") is not None
        ini_dir = config.inipath.parent if config.inipath else config.rootpath
        explicit = (config.invocation_params.dir if from_cli else ini_dir) / explicit
    try:
        return make_gate(config.rootpath, explicit, models, values.dtype, values.device, values.softmax_dtype,
                         update=values.update_baseline, any_model=values.baseline_any_model,
                         command=update_command(str(a) for a in config.invocation_params.args),
                         checks=checks_of(values.precision_check, values.variants), reading=values.reading)
    except SettingsRefused as refused:
        raise pytest.UsageError(wording_baseline.refusal_text(refused.refusal)) from None
    except BaselineError as error:
        raise pytest.UsageError(str(error)) from None


class _NoCache:
    hits = misses = 0


def _notice(line: str) -> None:
    """Before slow one-time work (converting a GGUF), say why the run is waiting; stderr reaches the terminal
    from xdist workers too."""
    import sys

    from ..report.escape import escape

    sys.stderr.write(f"gotchas: {escape(line)}\n")
    sys.stderr.flush()
