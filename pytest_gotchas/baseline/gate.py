"""One run's use of its baselines: the per-member check where each case ran, and the comparison (and update) at the
end, on the controller. Built from the settings by the plugin, identical on every xdist process. Facts only: the
results are typed (results/baselines.py) and report/wording.py words them."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from ..results.baselines import (UPDATE_FLAG, BaselineOutcome, BrokenPair, Entry, Header, Refusal, Regression,
                                 entry_of)
from ..results.schema import CaseResult, ChapterInfo, ModelInfo
from ..results.verdict import Verdict
from .compare import (broken_pairs, compare, header_of, mismatch, numerics, run_header, settings_mismatch,
                      update)
from .store import Baseline, BaselineError, default_path, device_kind, obtained_path, read, rewrite, write


def update_command(args: Iterable[str]) -> str:
    """The command that records this run: the same one, with the update flag."""
    args = [a for a in args if a != UPDATE_FLAG]
    return shlex.join(["pytest", *args, UPDATE_FLAG])


@dataclass(frozen=True)
class MemberCheck:
    """What the baseline says of one result where it ran: a regression fails its item; a refusal stops the
    session (the baseline belongs to another model)."""

    regression: Regression | None = None
    refusal: Refusal | None = None


@dataclass(frozen=True)
class CaseFailure:
    """Why a scored case fails its test, as facts (report/wording_baseline.case_failure_text words them): the
    baseline's word where it ran, and under --gotchas-strict its verdict that is not ok."""

    check: MemberCheck = MemberCheck()
    not_ok: Entry | None = None  # --gotchas-strict: the case's verdict, not ok, and its probabilities

    @property
    def stops(self) -> bool:
        """A baseline of another model stops the session."""
        return self.check.refusal is not None


def case_failure(gate: Gate | None, result: CaseResult, model: ModelInfo | None, chapter: ChapterInfo,
                 strict: bool) -> CaseFailure:
    """A scored case's failure, where it ran: a pair that passed in the baseline broke (decided per member), a
    baseline of another model, or --gotchas-strict and a verdict that is not ok."""
    check = gate.check(result, model, chapter) if gate is not None else MemberCheck()
    not_ok = strict and result.scored and result.verdict != Verdict.OK
    return CaseFailure(check, entry_of(result) if not_ok else None)


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

    def check(self, result: CaseResult, model: ModelInfo | None, chapter: ChapterInfo) -> MemberCheck:
        """The baseline's word on one result, where it ran."""
        header = self.header(header_of(result, model))
        if header is None or model is None:
            return MemberCheck()
        path, baseline = self.baseline_for(model.id, header.device)
        if baseline is None:
            return MemberCheck()
        recorded = baseline.recorded_with(chapter.name)
        if recorded is not None:
            fields = mismatch(recorded, header)
            if fields and not self.any_model:
                return MemberCheck(refusal=Refusal(self.shown(path), recorded, fields, now=header))
        broken = broken_pairs(baseline, result, chapter)
        if self.update or not broken:
            return MemberCheck()
        pairs = []
        for pair_id in broken:
            others = {m: _verdict_of(baseline, f"{chapter.name}/{m}") for m in chapter.pairs[pair_id] if m != result.id}
            pairs.append(BrokenPair(f"{chapter.name}/{pair_id}", others))
        other_hardware = recorded is not None and (recorded.device, recorded.hardware) != (header.device,
                                                                                          header.hardware)
        return MemberCheck(regression=Regression(
            path=self.shown(path), case=result.id, broken=pairs, old=baseline.verdicts.get(result.key),
            new=entry_of(result), recorded_hardware=recorded.hardware if other_hardware and recorded else None,
            hardware=header.hardware, command=self.command))

    def finish_all(self, results: list[CaseResult], models: Mapping[str, ModelInfo],
                   chapters: Mapping[str, ChapterInfo]) -> list[BaselineOutcome]:
        """Each model's comparison (and in update mode what to write), on the controller only."""
        by_model: dict[str, list[CaseResult]] = {}
        for result in results:
            by_model.setdefault(str(result.model or self.models[0]), []).append(result)
        return [self.finish(model, by_model.get(model, []), models.get(model), chapters) for model in self.models]

    def finish(self, model: str, results: list[CaseResult], info: ModelInfo | None,
               chapters: Mapping[str, ChapterInfo]) -> BaselineOutcome:
        """One model's comparison with its baseline; in update mode `record` writes it afterwards."""
        header = self.header(run_header(results, info))
        if header is None:
            return BaselineOutcome(model=model, update=self.update, command=self.command, nothing_scored=True)
        path, baseline = self.baseline_for(model, header.device)
        done = BaselineOutcome(model=model, path=self.shown(path), update=self.update, command=self.command,
                               now=header, missing=baseline is None)
        if baseline is None:
            return done
        done.recorded = baseline.header
        fields = mismatch(baseline.header, header) if baseline.header else []
        if fields and not self.any_model:
            done.refusal = Refusal(done.path or "", baseline.header, fields, now=header)  # type: ignore[arg-type]
            return done
        done.across = fields
        if baseline.header is not None and not fields:
            done.numerics = numerics(baseline, results, baseline.header, header, chapters)
        done.comparison = compare(baseline, results, chapters)
        return done

    def record(self, done: BaselineOutcome, results: list[CaseResult], chapters: Mapping[str, ChapterInfo]) -> None:
        """Write what `finish` found into the file as it is when written (see store.rewrite): only the results of
        the model `done` is about. Sets `done.written`, or `done.write_error` when the file cannot be written."""
        assert done.now is not None and self.update and done.refusal is None
        path, _ = self.baseline_for(done.model, done.now.device)
        results = [r for r in results if str(r.model or self.models[0]) == done.model]
        fresh = bool(done.across)  # another model's entries are not this model's: start afresh
        try:
            done.written = rewrite(path, lambda current: update(current, results, chapters, done.now, fresh))  # type: ignore[arg-type]
        except (OSError, BaselineError) as error:
            done.write_error = str(error)

    def obtained(self, done: BaselineOutcome, results: list[CaseResult], chapters: Mapping[str, ChapterInfo]) -> str:
        """On a regression: the baseline as `record` would write it now (the file as this run read it, with this run's
        results over it), written beside the shipped one (store.obtained_path), which is left as it is. Returns its
        path as reports name it; raises OSError when it cannot be written."""
        assert done.now is not None and done.refusal is None
        path, baseline = self.baseline_for(done.model, done.now.device)
        results = [r for r in results if str(r.model or self.models[0]) == done.model]
        new, _ = update(baseline, results, chapters, done.now, bool(done.across))
        target = obtained_path(path)
        write(target, new)
        return self.shown(target)


def _verdict_of(baseline: Baseline, key: str) -> str:
    entry = baseline.verdicts.get(key)
    return entry.verdict if entry else "ok"  # a passing pair's members were ok


def _shown(path: Path, root: Path) -> str:
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return str(path)


def make_gate(root: Path, explicit: Path | None, models: list[str], dtype: str, device: str | None,
              softmax_dtype: str | None, update: bool = False, any_model: bool = False,
              command: str | None = None, checks: str = "", reading: str = "") -> Gate:
    """Read every candidate file that exists; raise BaselineError (words: baseline/store.py's, and
    report/wording_baseline.refusal_text for a baseline of other settings) for one that cannot be used. A relative
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
    # Recording reads leniently: an entry it cannot read is dropped (and said), never a reason to lose the others.
    files = {path: read(path, lenient=update) for path in candidates if path.is_file()}
    for path, baseline in files.items():
        fields = settings_mismatch(baseline.header, dtype, softmax_dtype, checks, reading) if baseline.header else []
        if fields and not any_model and baseline.header is not None:
            raise SettingsRefused(Refusal(_shown(path, root), baseline.header, fields, dtype=dtype,
                                          softmax_dtype=softmax_dtype or dtype, checks=checks, reading=reading))
    return Gate(root=Path(root), explicit=explicit, models=list(models), dtype=dtype, files=files, update=update,
                any_model=any_model, command=command or f"pytest --gotchas {UPDATE_FLAG}", checks=checks)


class SettingsRefused(BaselineError):
    """A baseline recorded with other settings than this run asks for; the plugin words it (report/wording)."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.path)
        self.refusal = refusal
