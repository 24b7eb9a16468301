"""Baselines, pure (no torch, no pytest): read, compare a run with, update, write.

A baseline stores what one model, at one dtype, answered: each pair's `pass`/`fail` and each scored case's verdict
and probabilities. CI compares every run with it. The gate is decided per member, so it holds under pytest-xdist
where the two members of a pair may run on different workers: when the baseline says a pair passed (both members
were ok) and a member's verdict is now anything but ok, that member's test fails. Everything else that differs from
the baseline (improvements, other verdict changes, new and vanished pairs and cases) is listed, never failed.

The file is small, sorted and diff-friendly, one line per pair and per case:

    format: 1
    model: {device: cpu, dtype: bfloat16, name: ..., softmax_dtype: bfloat16, torch: ..., transformers: ...,
            weights_sha256: ...}                                   (a block mapping in the file)
    pairs:
      sets/list-vs-set-reversed: fail
    verdicts:
      floats/exact-sum: {p_correct: {False-first: 0.4296875, True-first: 0.45703125}, p_wrong: {...}, verdict: ok}
      sets/list-reversed: {p_correct: 0.0498046875, p_wrong: 0.134765625, verdict: MISS}

Probabilities are stored exactly (the shortest repr that reads back to the same float); a case run under several
primer orders stores one probability per primer. There is no top-level `cases:` or `chapter:` key, so the file is
never collected as a chapter even when it sits among the chapter files.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import yaml

from .files import write_atomic
from .results import SCORED, UNSCORED, CaseResult
from .rollup import PairResult, rollup
from .verdict import OK, VERDICTS

FORMAT = 1
PASS, FAIL = "pass", "fail"
UPDATE_FLAG = "--gotchas-update-baseline"
ANY_MODEL_FLAG = "--gotchas-baseline-any-model"
DEFAULT_DIR = "baselines"
EMBEDDED_SLUG = "gemma-3-270m"  # the slug of the embedded default model (no --gotchas-model)
HEADER_FIELDS = ("name", "weights_sha256", "dtype", "softmax_dtype", "device", "hardware", "torch", "transformers")
# A different value in one of these makes the verdicts incomparable: the comparison is refused.
IDENTITY_FIELDS = ("weights_sha256", "dtype", "softmax_dtype")
COMMENT = """\
# pytest-gotchas baseline: the pair verdicts `pytest --gotchas` compares every run with.
# A pair that is `pass` here and no longer passes fails the run. Record intended changes with
# --gotchas-update-baseline (only the pairs and cases that ran are rewritten).
"""

Line = tuple[str, dict[str, bool]]
Probability = float | dict[str, float]  # one run, or {primer: probability}


class BaselineError(Exception):
    """A baseline file that cannot be used; the message names the file and says what to do."""


@dataclass(frozen=True)
class Header:
    """Who produced the verdicts. `device` is the kind only (cpu, cuda, mps ...): xdist workers spread over GPUs.
    `hardware` is what decides how the kernels round: "cpu AVX512", "cpu AVX2", "NVIDIA H200 (sm_90)"."""

    name: str
    weights_sha256: str
    dtype: str
    softmax_dtype: str
    device: str
    hardware: str
    torch: str
    transformers: str

    def describe(self) -> str:
        return (f"model {self.name!r} (weights sha256 {self.weights_sha256[:12]}..., {self.dtype}, "
                f"softmax {self.softmax_dtype}, {self.device})")


@dataclass(frozen=True)
class Entry:
    """One case's recorded verdict and probabilities."""

    verdict: str
    p_correct: Probability
    p_wrong: Probability


@dataclass
class Baseline:
    header: Header | None
    pairs: dict[str, str] = field(default_factory=dict)  # "<chapter>/<pair id>" -> pass | fail
    verdicts: dict[str, Entry] = field(default_factory=dict)  # "<chapter>/<case id>" -> Entry


# -- where it lives ---------------------------------------------------------------------------------------------


def model_slug(model: str | None) -> str:
    """A file-name-safe name for the model: the last part of a hub id or path, without .gguf."""
    if model is None:
        return EMBEDDED_SLUG
    base = re.split(r"[/\\]+", model.strip().rstrip("/\\"))[-1]
    base = base[: -len(".gguf")] if base.lower().endswith(".gguf") else base
    return re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-.") or "model"


def device_kind(device: str) -> str:
    """"cuda:1" -> "cuda"; "auto:cuda:0,cuda:1" -> "auto"."""
    return device.split(":", 1)[0]


def default_path(root: Path, model: str | None, dtype: str, device: str) -> Path:
    """baselines/<model slug>-<dtype>-<device kind>.yaml under the rootdir."""
    return Path(root) / DEFAULT_DIR / f"{model_slug(model)}-{dtype}-{device_kind(device)}.yaml"


# -- reading and writing ----------------------------------------------------------------------------------------


def read(path: Path) -> Baseline:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise BaselineError(f"cannot read baseline {path}: {error}") from None
    return loads(text, str(path))


def loads(text: str, source: str = "<baseline>") -> Baseline:
    def bad(where: str, problem: str) -> BaselineError:
        return BaselineError(
            f"baseline {source} is not a pytest-gotchas baseline: {where}: {problem}. Fix or delete the file, "
            f"then record it again with {UPDATE_FLAG}."
        )

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "the file"
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise bad(where, f"invalid YAML ({problem})") from None
    if not isinstance(data, dict):
        raise bad("the file", f"expected a mapping with keys format, model, pairs, verdicts; got {_kind(data)}")
    unknown = sorted(str(k) for k in data if k not in ("format", "model", "pairs", "verdicts"))
    if unknown:
        raise bad("top level", f"unknown key(s) {', '.join(unknown)} (expected format, model, pairs, verdicts)")
    if data.get("format") != FORMAT:
        raise bad("format", f"expected {FORMAT}, got {data.get('format')!r}")
    header = _read_header(data.get("model"), bad)
    pairs = _mapping(data.get("pairs"), "pairs", bad)
    for key, value in pairs.items():
        _check_key(key, "pairs", bad)
        if value not in (PASS, FAIL):
            raise bad(f"pairs: {key}", f"expected pass or fail, got {value!r}")
    verdicts = {}
    for key, value in _mapping(data.get("verdicts"), "verdicts", bad).items():
        _check_key(key, "verdicts", bad)
        verdicts[key] = _read_entry(value, f"verdicts: {key}", bad)
    return Baseline(header, dict(pairs), verdicts)


def _kind(value: Any) -> str:
    return "nothing (an empty file)" if value is None else f"a {type(value).__name__}"


def _mapping(value: Any, where: str, bad: Any) -> dict[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise bad(where, f"expected a mapping, got {_kind(value)}")
    return value


def _check_key(key: Any, where: str, bad: Any) -> None:
    if not isinstance(key, str) or key.count("/") != 1 or not all(key.split("/")):
        raise bad(f"{where}: {key!r}", "keys are \"<chapter>/<id>\"")


def _read_header(value: Any, bad: Any) -> Header | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise bad("model", f"expected a mapping, got {_kind(value)}")
    missing = [name for name in HEADER_FIELDS if not isinstance(value.get(name), str)]
    if missing:
        raise bad("model", f"missing or not a string: {', '.join(missing)}")
    extra = sorted(str(k) for k in value if k not in HEADER_FIELDS)
    if extra:
        raise bad("model", f"unknown key(s) {', '.join(extra)}")
    return Header(**{name: value[name] for name in HEADER_FIELDS})


def _read_entry(value: Any, where: str, bad: Any) -> Entry:
    if not isinstance(value, dict) or set(value) != {"verdict", "p_correct", "p_wrong"}:
        raise bad(where, "expected {verdict: ..., p_correct: ..., p_wrong: ...}")
    if value["verdict"] not in VERDICTS:
        raise bad(where, f"verdict {value['verdict']!r} is not one of {', '.join(VERDICTS)}")
    probabilities = []
    for name in ("p_correct", "p_wrong"):
        p = value[name]
        numbers = list(p.values()) if isinstance(p, dict) and p else [p]
        if not all(_is_probability(x) for x in numbers) or (isinstance(p, dict) and not all(
                isinstance(k, str) for k in p)):
            raise bad(where, f"{name} must be a probability or a mapping from primer to probability, got {p!r}")
        probabilities.append(dict(p) if isinstance(p, dict) else float(p))
    return Entry(value["verdict"], probabilities[0], probabilities[1])


def _is_probability(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and 0 <= x <= 1


class _Flow(dict):  # type: ignore[type-arg]
    """A mapping written on one line."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Flow, lambda dumper, data: dumper.represent_mapping(
    "tag:yaml.org,2002:map", data, flow_style=True))


def dumps(baseline: Baseline) -> str:
    data: dict[str, Any] = {"format": FORMAT}
    if baseline.header is not None:
        data["model"] = {name: getattr(baseline.header, name) for name in HEADER_FIELDS}
    data["pairs"] = dict(baseline.pairs)
    data["verdicts"] = {key: _Flow(verdict=e.verdict, p_correct=e.p_correct, p_wrong=e.p_wrong)
                        for key, e in baseline.verdicts.items()}
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=True, default_flow_style=False, allow_unicode=True,
                     width=100_000)
    return COMMENT + body


def write(path: Path, baseline: Baseline) -> None:
    """Atomic: the file is the old one or the new one, never half of either."""
    write_atomic(path, dumps(baseline), durable=True)


# -- from results -----------------------------------------------------------------------------------------------


def header_of(result: CaseResult) -> Header | None:
    """The header a scored result implies; None for results that were not scored."""
    if result.status != SCORED or not result.model or not result.runs:
        return None
    m = result.model
    return Header(name=str(m["name"]), weights_sha256=str(m["weights_sha256"]), dtype=str(m["dtype"]),
                  softmax_dtype=str(result.runs[0].softmax_dtype), device=device_kind(str(m["device"])),
                  hardware=str(m.get("hardware", "unknown")),
                  torch=str(m["torch_version"]), transformers=str(m["transformers_version"]))


def run_header(results: Iterable[CaseResult]) -> Header | None:
    return next((h for h in map(header_of, results) if h is not None), None)


def entry_of(result: CaseResult) -> Entry:
    if len(result.runs) == 1:
        return Entry(str(result.verdict), result.runs[0].p_correct, result.runs[0].p_wrong)
    names = [r.primer or f"run{n}" for n, r in enumerate(result.runs, start=1)]
    return Entry(str(result.verdict), {n: r.p_correct for n, r in zip(names, result.runs)},
                 {n: r.p_wrong for n, r in zip(names, result.runs)})


def mismatch(recorded: Header, now: Header) -> list[str]:
    """The identity fields that differ: non-empty means the verdicts are not comparable."""
    return [name for name in IDENTITY_FIELDS if getattr(recorded, name) != getattr(now, name)]


def settings_mismatch(recorded: Header, dtype: str, softmax_dtype: str | None) -> list[str]:
    """What can be checked before the model is loaded: the dtypes the run asks for."""
    wrong = []
    if recorded.dtype != dtype:
        wrong.append("dtype")
    if recorded.softmax_dtype != (softmax_dtype or dtype):
        wrong.append("softmax_dtype")
    return wrong


def refusal(path: Path | str, recorded: Header, now: str, fields: list[str]) -> str:
    return (
        f"baseline {path} was recorded with {recorded.describe()}; this run uses {now}. "
        f"They differ in {', '.join(fields)}, so their verdicts are not comparable. "
        f"Record a baseline for this model with --gotchas-baseline OTHER.yaml {UPDATE_FLAG}, "
        f"or compare anyway with {ANY_MODEL_FLAG}."
    )


# -- the per-member gate (runs where the case ran: an xdist worker, or the only process) ---------------------------


def broken_pairs(baseline: Baseline, result: CaseResult) -> list[str]:
    """Ids of the pairs that passed in the baseline and that this result, a member, no longer lets pass."""
    if result.status != SCORED or result.verdict == OK:
        return []
    chapter = result.chapter.name
    return [pair_id for pair_id, members in result.chapter.pairs.items()
            if result.id in members and baseline.pairs.get(f"{chapter}/{pair_id}") == PASS]


def regression_message(baseline: Baseline, path: Path | str, result: CaseResult, command: str,
                       note: str | None = None) -> str | None:
    """The failure text for a member that broke a pair which passed in the baseline; None when it broke none."""
    broken = broken_pairs(baseline, result)
    if not broken:
        return None
    chapter = result.chapter.name
    old = baseline.verdicts.get(result.key)
    lines = [f"regression against the baseline {path}:"]
    for pair_id in broken:
        others = [m for m in result.chapter.pairs[pair_id] if m != result.id]
        other = "; ".join(f"other member {m}: {_verdict_of(baseline, f'{chapter}/{m}')} in the baseline"
                          for m in others)
        lines.append(f"  pair {chapter}/{pair_id} passed in the baseline and fails now ({other})")
    was = f"{old.verdict:<9} {_probabilities(old.p_correct, old.p_wrong)}" if old else "ok        (no probabilities recorded)"
    now = entry_of(result)
    lines.append(f"  {result.id}:")
    lines.append(f"    baseline  {was}")
    lines.append(f"    now       {now.verdict:<9} {_probabilities(now.p_correct, now.p_wrong)}")
    if note:
        lines.append(f"  ({note})")
    lines.append("If the change is intended, record it:")
    lines.append(f"  {command}")
    return "\n".join(lines)


def strict_message(result: CaseResult) -> str | None:
    """--gotchas-strict: every scored verdict that is not ok fails its case."""
    if result.status != SCORED or result.verdict == OK:
        return None
    entry = entry_of(result)
    return f"--gotchas-strict: verdict {entry.verdict} is not ok: {_probabilities(entry.p_correct, entry.p_wrong)}"


def _verdict_of(baseline: Baseline, key: str) -> str:
    entry = baseline.verdicts.get(key)
    return entry.verdict if entry else "ok"  # a passing pair's members were ok


def _pct(p: float) -> str:
    return f"{p * 100:.2f}%"


def _probabilities(p_correct: Probability, p_wrong: Probability) -> str:
    if isinstance(p_correct, dict) and isinstance(p_wrong, dict):
        return "  ".join(f"{name}: P(correct) {_pct(p_correct[name])} P(wrong) {_pct(p_wrong.get(name, math.nan))}"
                         for name in p_correct)
    assert not isinstance(p_correct, dict) and not isinstance(p_wrong, dict)
    return f"P(correct) {_pct(p_correct)}  P(wrong) {_pct(p_wrong)}"


def update_command(args: Iterable[str]) -> str:
    """The command that records this run: the same one, with the update flag."""
    args = [a for a in args if a != UPDATE_FLAG]
    return shlex.join(["pytest", *args, UPDATE_FLAG])


# -- comparing a whole run (on the controller) ------------------------------------------------------------------


@dataclass
class PairChange:
    key: str
    old: str | None  # pass | fail | None (not in the baseline)
    new: str | None  # pass | fail | None (not scored in this run)
    members: list[tuple[str, str | None, str | None]]  # (case id, baseline verdict, verdict now)

    def describe(self) -> str:
        parts = []
        for case_id, old, new in self.members:
            if new is None:
                parts.append(f"{case_id} not scored")
            elif old is None or old == new:
                parts.append(f"{case_id} {new}")
            else:
                parts.append(f"{case_id} {old} -> {new}")
        return ", ".join(parts)


@dataclass
class CaseChange:
    key: str
    old: Entry
    new: Entry


@dataclass
class Comparison:
    regressions: list[PairChange] = field(default_factory=list)  # pass -> fail: their members failed
    improvements: list[PairChange] = field(default_factory=list)  # fail -> pass
    unchecked: list[PairChange] = field(default_factory=list)  # passed in the baseline; a member not scored now
    unchanged: int = 0
    new_pairs: list[PairChange] = field(default_factory=list)
    gone_pairs: list[str] = field(default_factory=list)  # their chapter ran, and it no longer has them
    changed_cases: list[CaseChange] = field(default_factory=list)
    new_cases: list[str] = field(default_factory=list)
    gone_cases: list[str] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)  # chapters in the baseline that did not run


def _chapter_of(key: str) -> str:
    return key.split("/", 1)[0]


def compare(baseline: Baseline, results: list[CaseResult]) -> Comparison:
    out = Comparison()
    chapters = rollup(results)
    ran = {c.info.name for c in chapters}
    for chapter in chapters:
        name = chapter.info.name
        for pair in chapter.pairs:
            change = _pair_change(baseline, pair)
            if change.old is None:
                out.new_pairs.append(change)
            elif change.new is None:
                if change.old == PASS:
                    out.unchecked.append(change)
            elif change.old == PASS and change.new == FAIL:
                out.regressions.append(change)
            elif change.old == FAIL and change.new == PASS:
                out.improvements.append(change)
            else:
                out.unchanged += 1
        for case in chapter.cases:
            if case.status != SCORED:
                continue
            old = baseline.verdicts.get(case.key)
            if old is None:
                out.new_cases.append(case.key)
            elif old.verdict != case.verdict:
                out.changed_cases.append(CaseChange(case.key, old, entry_of(case)))
        out.gone_pairs += sorted(k for k in baseline.pairs
                                 if _chapter_of(k) == name and k.split("/", 1)[1] not in chapter.info.pairs)
        out.gone_cases += sorted(k for k in baseline.verdicts
                                 if _chapter_of(k) == name and k.split("/", 1)[1] not in chapter.info.case_ids)
    out.not_run = sorted({_chapter_of(k) for k in [*baseline.pairs, *baseline.verdicts]} - ran)
    return out


def pair_state(pair: PairResult) -> str | None:
    """pass or fail; a pair with a member that did not run is still known to fail when another member is not ok
    (as the per-member gate decides under `-k`); None when it is not known."""
    if pair.passed is not None:
        return PASS if pair.passed else FAIL
    return FAIL if any(v is not None and v != OK for v in pair.verdicts) else None


def _pair_change(baseline: Baseline, pair: PairResult) -> PairChange:
    new = pair_state(pair)
    members = []
    for case_id, verdict in zip(pair.members, pair.verdicts):
        old = baseline.verdicts.get(f"{pair.chapter}/{case_id}")
        members.append((case_id, old.verdict if old else None, verdict))
    return PairChange(pair.key, baseline.pairs.get(pair.key), new, members)


def comparison_lines(comparison: Comparison, baseline: Baseline, command: str, update: bool) -> Iterator[Line]:
    """The summary of a comparison; in update mode the same facts are what was just recorded."""
    c = comparison
    red, green, yellow, plain = {"red": True}, {"green": True}, {"yellow": True}, {}
    for change in c.regressions:
        word = "regression (recorded)" if update else "REGRESSION"
        yield f"  {word} {change.key}: pass -> FAIL ({change.describe()})", (yellow if update else red)
    for change in c.improvements:
        word = "improvement (recorded)" if update else "improvement"
        yield f"  {word} {change.key}: fail -> pass ({change.describe()})", green
    for change in c.unchecked:
        yield f"  not checked {change.key}: passed in the baseline; {change.describe()}", yellow
    for change in c.new_pairs:
        state = change.new or "not scored"
        yield f"  new pair {change.key}: {state} ({change.describe()}), not in the baseline", yellow
    for key in c.gone_pairs:
        yield f"  pair {key} is in the baseline ({baseline.pairs[key]}) but no longer in its chapter", yellow
    for case in c.changed_cases:
        yield (f"  verdict changed {case.key}: {case.old.verdict} -> {case.new.verdict} "
               f"(was {_probabilities(case.old.p_correct, case.old.p_wrong)}; "
               f"now {_probabilities(case.new.p_correct, case.new.p_wrong)})"), yellow
    if c.new_cases:
        yield f"  new cases, not in the baseline: {', '.join(c.new_cases)}", yellow
    if c.gone_cases:
        yield f"  cases in the baseline that are no longer in their chapter: {', '.join(c.gone_cases)}", yellow
    if c.not_run:
        kept = "kept" if update else "not compared"
        yield f"  chapters in the baseline that did not run ({kept}): {', '.join(c.not_run)}", plain
    pairs = (f"{len(c.regressions)} regressed, {len(c.improvements)} improved, {c.unchanged} unchanged, "
             f"{len(c.new_pairs)} new, {len(c.gone_pairs)} gone, {len(c.unchecked)} not checked pairs; "
             f"{len(c.changed_cases)} verdicts changed")
    yield f"  {pairs}", (red if c.regressions and not update else plain) | {"bold": True}
    pending = c.improvements or c.changed_cases or c.new_pairs or c.new_cases or c.gone_pairs or c.gone_cases
    if pending and not update and not c.regressions:
        yield f"  record these changes with: {command}", plain
    elif c.regressions and not update:
        yield f"  if the regressions are intended, record them with: {command}", plain


# -- updating ---------------------------------------------------------------------------------------------------


@dataclass
class UpdateStats:
    pairs: int = 0  # written from this run
    verdicts: int = 0
    changed: int = 0  # pair states and case verdicts that differ from the file's
    removed: int = 0  # entries of pairs and cases their chapter no longer has
    kept: int = 0  # entries of pairs and cases that did not run

    def line(self, path: Path | str, fresh: bool) -> str:
        start = "started afresh, " if fresh else ""
        return (f"baseline {path} written: {start}{self.pairs} pairs and {self.verdicts} verdicts recorded "
                f"({self.changed} changed), {self.removed} removed, {self.kept} kept from cases that did not run")


def update(baseline: Baseline | None, results: list[CaseResult], header: Header) -> tuple[Baseline, UpdateStats]:
    """This run's pairs and verdicts over the old ones: only what ran changes (a `-k` run keeps other chapters);
    entries of pairs and cases that a chapter which ran no longer has are removed."""
    old = baseline or Baseline(None)
    pairs, verdicts = dict(old.pairs), dict(old.verdicts)
    stats = UpdateStats()
    written: set[str] = set()
    for chapter in rollup(results):
        name = chapter.info.name
        for key in [k for k in pairs if _chapter_of(k) == name and k.split("/", 1)[1] not in chapter.info.pairs]:
            del pairs[key]
            stats.removed += 1
        for key in [k for k in verdicts
                    if _chapter_of(k) == name and k.split("/", 1)[1] not in chapter.info.case_ids]:
            del verdicts[key]
            stats.removed += 1
        for pair in chapter.pairs:
            state = pair_state(pair)
            if state is None:
                continue
            stats.changed += pairs.get(pair.key, state) != state
            pairs[pair.key] = state
            stats.pairs += 1
            written.add(pair.key)
        for case in chapter.cases:
            if case.status == UNSCORED and case.key in verdicts:  # deliberately never scored now
                del verdicts[case.key]
                stats.removed += 1
            if case.status != SCORED:
                continue
            entry = entry_of(case)
            before = verdicts.get(case.key)
            stats.changed += before is not None and before.verdict != entry.verdict
            verdicts[case.key] = entry
            stats.verdicts += 1
            written.add(case.key)
    stats.kept = sum(1 for k in [*pairs, *verdicts] if k not in written)
    return Baseline(header, dict(sorted(pairs.items())), dict(sorted(verdicts.items()))), stats


# -- one run's use of its baseline --------------------------------------------------------------------------------


@dataclass
class Gate:
    """What one run does with its baseline; built from the settings by plugin.py, identical on every xdist
    process. The file is found from the device the model actually loaded on (unless a path was given), so it is
    chosen at the first scored result.

    `files` holds every candidate that existed at start, already read (so a corrupt file is a usage error before
    anything runs)."""

    root: Path
    explicit: Path | None
    model: str | None  # --gotchas-model, None = embedded default
    dtype: str
    files: dict[Path, Baseline]
    update: bool = False
    any_model: bool = False
    strict: bool = False
    command: str = f"pytest --gotchas {UPDATE_FLAG}"

    def path_for(self, device: str) -> Path:
        return self.explicit or default_path(self.root, self.model, self.dtype, device)

    def baseline_for(self, device: str) -> tuple[Path, Baseline | None]:
        path = self.path_for(device)
        return path, self.files.get(path)

    def shown(self, path: Path) -> str:
        """The path as reports name it: relative to the rootdir when it is under it, as pytest names files."""
        return _shown(path, self.root)

    def check(self, result: CaseResult) -> tuple[str | None, bool]:
        """(failure message or None, whether the session should stop) for one result, where it ran."""
        header = header_of(result)
        if header is None:
            return None, False
        messages = []
        path, baseline = self.baseline_for(header.device)
        note = None
        if baseline is not None and baseline.header is not None:
            fields = mismatch(baseline.header, header)
            if fields and not self.any_model:
                return refusal(self.shown(path), baseline.header, header.describe(), fields), True
            note = hardware_note(baseline.header, header)
        if baseline is not None and not self.update:
            messages.append(regression_message(baseline, self.shown(path), result, self.command, note))
        if self.strict:
            messages.append(strict_message(result))
        found = [m for m in messages if m]
        return ("\n\n".join(found) if found else None), False

    def finish(self, results: list[CaseResult]) -> tuple[list[Line], tuple[Path, Baseline] | None]:
        """The summary lines, and in update mode what to write (on the controller only)."""
        header = run_header(results)
        if header is None:
            if self.update:
                return [("baseline: nothing was scored, so nothing was recorded", {"yellow": True})], None
            return [], None
        path, baseline = self.baseline_for(header.device)
        shown = self.shown(path)
        lines: list[Line] = []
        fields = mismatch(baseline.header, header) if baseline and baseline.header else []
        if fields and not self.any_model:
            refused = refusal(shown, baseline.header, header.describe(), fields)  # type: ignore[union-attr]
            return [(f"baseline: not used: {refused}", {"red": True})], None
        if baseline is None:
            if not self.update:
                return [(f"baseline: none at {shown}; record one with: {self.command}", {"yellow": True})], None
        else:
            verb = "recorded over" if self.update else "compared with"
            lines.append((f"baseline {shown}: {verb} {baseline.header.describe() if baseline.header else 'no header'}",
                          {"bold": True}))
            if fields:
                lines.append((f"  compared ACROSS MODELS ({ANY_MODEL_FLAG}): they differ in {', '.join(fields)}; "
                              f"this run uses {header.describe()}", {"yellow": True}))
            lines.extend(_notes(baseline.header, header))
            lines.extend(comparison_lines(compare(baseline, results), baseline, self.command, self.update))
        if not self.update:
            return lines, None
        fresh = bool(fields)  # another model's entries are not this model's: start again
        new, stats = update(None if fresh else baseline, results, header)
        lines.append((stats.line(shown, fresh), {"green": True}))
        return lines, (path, new)


def _shown(path: Path, root: Path) -> str:
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return str(path)


def hardware_note(recorded: Header, now: Header) -> str | None:
    """Said wherever a verdict is compared across hardware: measured, other CPU kernels moved bfloat16
    probabilities by up to 3 points and turned exact ties into ok or MISS (docs/determinism.md)."""
    if (recorded.device, recorded.hardware) == (now.device, now.hardware):
        return None
    return (f"recorded on {recorded.hardware}, this run on {now.hardware}: other kernels round differently, so "
            "probabilities move and close verdicts can flip (docs/determinism.md)")


def _notes(recorded: Header | None, now: Header) -> Iterator[Line]:
    if recorded is None:
        return
    note = hardware_note(recorded, now)
    if note:
        yield f"  {note}", {"yellow": True}
    versions = [(name, getattr(recorded, name), getattr(now, name)) for name in ("torch", "transformers")]
    changed = [f"{name} {old} -> {new}" for name, old, new in versions if old != new]
    if changed:
        yield f"  recorded with other library versions: {', '.join(changed)}", {"yellow": True}


def make_gate(root: Path, explicit: Path | None, model: str | None, dtype: str, device: str | None,
              softmax_dtype: str | None, update: bool = False, any_model: bool = False, strict: bool = False,
              command: str | None = None) -> Gate:
    """Read every candidate file that exists; raise BaselineError for one that cannot be used. A relative
    `explicit` path is taken relative to `root`."""
    if explicit is not None and not explicit.is_absolute():
        explicit = Path(root) / explicit
    if explicit is not None:
        candidates = [explicit]
        if not explicit.exists() and not update:
            raise BaselineError(f"baseline {explicit} does not exist; record it with --gotchas-baseline "
                                f"{explicit} {UPDATE_FLAG}")
    else:
        kinds = [device_kind(device)] if device else ["cpu", "cuda"]  # the default device is cuda when there is one
        candidates = [default_path(root, model, dtype, kind) for kind in kinds]
    files = {path: read(path) for path in candidates if path.is_file()}
    for path, baseline in files.items():
        fields = settings_mismatch(baseline.header, dtype, softmax_dtype) if baseline.header else []
        if fields and not any_model:
            now = f"dtype {dtype}, softmax {softmax_dtype or dtype}"
            raise BaselineError(refusal(_shown(path, root), baseline.header, now, fields))  # type: ignore[arg-type]
    return Gate(root=Path(root), explicit=explicit, model=model, dtype=dtype, files=files, update=update,
                any_model=any_model, strict=strict,
                command=command or f"pytest --gotchas {UPDATE_FLAG}")
