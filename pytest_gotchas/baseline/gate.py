"""One run's use of its baseline: the per-member check where each case ran, and the comparison (and update) at the
end, on the controller. Built from the settings by plugin/hooks.py, identical on every xdist process."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..report.wording import (Line, comparison_lines, hardware_note, notes, numerics_lines, refusal,
                                 regression_message, update_line)
from ..results.schema import CaseResult
from .compare import (Comparison, Numerics, UpdateStats, compare, header_of, mismatch, numerics, run_header,
                      settings_mismatch, update)
from .store import (ANY_MODEL_FLAG, UPDATE_FLAG, Baseline, BaselineError, Header, default_path, device_kind, read,
                    rewrite)


def update_command(args: Iterable[str]) -> str:
    """The command that records this run: the same one, with the update flag."""
    args = [a for a in args if a != UPDATE_FLAG]
    return shlex.join(["pytest", *args, UPDATE_FLAG])


@dataclass
class Finished:
    """The end of a run's use of its baseline: what the summary says, what the reports show, what to write."""

    lines: list[Line] = field(default_factory=list)
    model: str | None = None  # the model (short name) whose results these are
    path: str | None = None  # as reports name it
    recorded: dict[str, str] | None = None  # the baseline's header
    comparison: Comparison | None = None
    numerics: Numerics | None = None  # the same model, dtypes and libraries: are the kernels the baseline's?
    update: bool = False
    to_record: tuple[Path, Header, bool] | None = None  # update mode: the file, this run's header, start afresh

    def to_dict(self) -> dict[str, Any]:
        """The report's `baseline` section."""
        return {"model": self.model, "path": self.path, "recorded": self.recorded, "update": self.update,
                "comparison": self.comparison.to_dict() if self.comparison else None,
                "numerics": self.numerics.to_dict() if self.numerics else None,
                "lines": [text.strip() for text, _ in self.lines if text.strip()]}


@dataclass
class Gate:
    """Each model compares with its own file, found from the device the model actually loaded on (unless a path was
    given, for a run of one model), so it is chosen at the model's first scored result. `files` holds every
    candidate that existed at start, already read (so a corrupt file is a usage error before anything runs)."""

    root: Path
    explicit: Path | None
    models: list[str]  # the short names of the run's models
    dtype: str
    files: dict[Path, Baseline]
    update: bool = False
    any_model: bool = False
    command: str = f"pytest --gotchas {UPDATE_FLAG}"
    checks: str = ""  # store.checks_of: the opt-in checks this run's verdicts include

    def baseline_for(self, model: str, device: str) -> tuple[Path, Baseline | None]:
        path = self.explicit or default_path(self.root, model, self.dtype, device, self.checks)
        return path, self.files.get(path)

    def header(self, found: Header | None) -> Header | None:
        """A result's header with this run's checks, which the result itself cannot tell (a case with no variants
        runs alike with and without --gotchas-variants)."""
        return None if found is None else replace(found, checks=self.checks)

    def shown(self, path: Path) -> str:
        """The path as reports name it: relative to the rootdir when it is under it, as pytest names files."""
        return _shown(path, self.root)

    def check(self, result: CaseResult) -> tuple[str | None, bool]:
        """(failure message or None, whether the session should stop) for one result, where it ran."""
        header = self.header(header_of(result))
        if header is None:
            return None, False
        path, baseline = self.baseline_for(str(result.model_id or self.models[0]), header.device)
        if baseline is None:
            return None, False
        note = None
        if baseline.header is not None:
            fields = mismatch(baseline.header, header)
            if fields and not self.any_model:
                return refusal(self.shown(path), baseline.header, header.describe(), fields), True
            note = hardware_note(baseline.header, header)
        if self.update:
            return None, False
        return regression_message(baseline, self.shown(path), result, self.command, note), False

    def finish_all(self, results: list[CaseResult]) -> list[Finished]:
        """Each model's comparison (and in update mode what to write), on the controller only."""
        by_model: dict[str, list[CaseResult]] = {}
        for result in results:
            by_model.setdefault(str(result.model_id or self.models[0]), []).append(result)
        done = [self.finish(model, by_model.get(model, [])) for model in self.models]
        prefix = len(self.models) > 1
        for finished in done:
            if prefix:
                finished.lines = [(f"[{finished.model}] {text.strip()}" if text.strip() else text, markup)
                                  for text, markup in finished.lines]
        return done

    def finish(self, model: str, results: list[CaseResult]) -> Finished:
        """One model's comparison with its baseline, and in update mode what to write."""
        header = self.header(run_header(results))
        if header is None:
            if self.update:
                return Finished([("baseline: nothing was scored, so nothing was recorded", {"yellow": True})],
                                model=model)
            return Finished(model=model)
        path, baseline = self.baseline_for(model, header.device)
        shown = self.shown(path)
        done = Finished(model=model, path=shown, update=self.update)
        fields = mismatch(baseline.header, header) if baseline and baseline.header else []
        if baseline is not None and baseline.header is not None:
            done.recorded = {k: str(v) for k, v in vars(baseline.header).items()}
        if fields and not self.any_model:
            refused = refusal(shown, baseline.header, header.describe(), fields)  # type: ignore[union-attr]
            done.lines.append((f"baseline: not used: {refused}", {"red": True}))
            return done
        if baseline is None:
            if not self.update:
                done.lines.append((f"baseline: none at {shown}; record one with: {self.command}", {"yellow": True}))
                return done
        else:
            verb = "recorded over" if self.update else "compared with"
            described = baseline.header.describe() if baseline.header else "no header"
            done.lines.append((f"baseline {shown}: {verb} {described}", {"bold": True}))
            if fields:
                done.lines.append((f"  compared ACROSS MODELS ({ANY_MODEL_FLAG}): they differ in {', '.join(fields)}; "
                                   f"this run uses {header.describe()}", {"yellow": True}))
            done.lines.extend(notes(baseline.header, header))
            if baseline.header is not None and not fields:
                done.numerics = numerics(baseline, results, baseline.header, header)
                done.lines.extend(numerics_lines(done.numerics, baseline.header, header))
            done.comparison = compare(baseline, results)
            done.lines.extend(comparison_lines(done.comparison, baseline, self.command, self.update))
        if self.update:
            done.to_record = (path, header, bool(fields))  # another model's entries are not this model's: afresh
        return done

    def record(self, done: Finished, results: list[CaseResult]) -> str:
        """Write what `finish` decided into the file as it is when written (see store.rewrite); the summary line.
        Only the results of the model `done` is about are written."""
        assert done.to_record is not None
        path, header, fresh = done.to_record
        results = [r for r in results if str(r.model_id or self.models[0]) == done.model]

        def change(current: Baseline | None) -> tuple[Baseline, UpdateStats]:
            return update(None if fresh else current, results, header)

        return update_line(rewrite(path, change), self.shown(path), fresh)


def _shown(path: Path, root: Path) -> str:
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return str(path)


def make_gate(root: Path, explicit: Path | None, models: list[str], dtype: str, device: str | None,
              softmax_dtype: str | None, update: bool = False, any_model: bool = False,
              command: str | None = None, checks: str = "") -> Gate:
    """Read every candidate file that exists; raise BaselineError for one that cannot be used. A relative
    `explicit` path is taken relative to `root`."""
    if explicit is not None and not explicit.is_absolute():
        explicit = Path(root) / explicit
    if explicit is not None and len(models) > 1:
        raise BaselineError(f"--gotchas-baseline names one file, but this run probes {len(models)} models "
                            f"({', '.join(models)}); leave it out and each model compares with its own "
                            "baselines/<model>-<dtype>-<device>.yaml")
    if explicit is not None:
        candidates = [explicit]
        if not explicit.exists() and not update:
            raise BaselineError(f"baseline {explicit} does not exist; record it with --gotchas-baseline "
                                f"{explicit} {UPDATE_FLAG}")
    else:
        kinds = [device_kind(device)] if device else ["cpu", "cuda"]  # the default device is cuda when there is one
        candidates = [default_path(root, model, dtype, kind, checks) for model in models for kind in kinds]
    files = {path: read(path) for path in candidates if path.is_file()}
    for path, baseline in files.items():
        fields = settings_mismatch(baseline.header, dtype, softmax_dtype, checks) if baseline.header else []
        if fields and not any_model:
            now = f"dtype {dtype}, softmax {softmax_dtype or dtype}, " + (
                f"with {checks.replace(',', ' and ')}" if checks else "without opt-in checks")
            raise BaselineError(refusal(_shown(path, root), baseline.header, now, fields))  # type: ignore[arg-type]
    return Gate(root=Path(root), explicit=explicit, models=list(models), dtype=dtype, files=files, update=update,
                any_model=any_model, command=command or f"pytest --gotchas {UPDATE_FLAG}", checks=checks)
