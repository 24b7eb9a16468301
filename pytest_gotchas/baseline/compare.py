"""A run against its baseline, pure: what changed, what broke, and the baseline that records the run.

A pair that is `pass` in the baseline and no longer passes is a regression; it is decided per member (broken_pairs)
so that it holds under pytest-xdist, where the two members of a pair may run on different workers. Everything else
that differs (improvements, other verdict changes, new and vanished pairs and cases) is listed, never failed.
Updating rewrites only what ran: a `-k` run keeps every other chapter.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from ..model.kernels import KERNELS
from ..results.baselines import (READ_FIELDS, CaseChange, Comparison, FactChange, Header, MemberChange,
                                 Numerics, PairChange, PrimersChange, UpdateStats, entry_of)
from ..results.hardware import PLAIN_KERNELS
from ..results.rollup import ChapterRollup, PairResult, rollup
from ..results.schema import BackendInfo, CaseResult, ChapterInfo, ModelInfo
from ..results.verdict import Status, Verdict
from .store import HEADER_FIELDS, IDENTITY_FIELDS, OPTIONAL_FIELDS, Baseline, device_kind
from ..results.vocabulary import PairVerdict, ReadingName


def header_of(result: CaseResult, model: ModelInfo | None) -> Header | None:
    """The header a scored result of `model` implies; None for results that were not scored."""
    if not result.scored or model is None or not result.runs:
        return None
    return Header(name=model.name, weights_sha256=model.weights_sha256, dtype=model.dtype,
                  softmax_dtype=result.runs[0].reading.softmax_dtype, device=device_kind(model.device),
                  hardware=model.hardware, numerics=model.numerics, torch=model.torch_version,
                  transformers=model.transformers_version, backend=model.backend.name if model.backend else "",
                  engine=engine_fact(model.backend) if model.backend else "", reading=result.runs[0].main,
                  bos=model.bos, kernels=kernels_of(model.numerics),
                  text_path=str(model.text_path or "") if result.runs[0].main == ReadingName.TEXT else "")


def kernels_of(numerics: str) -> str:
    """The kernel path a fingerprint names (model/numerics.named: "float32-matmul:<hex>"; plain is unnamed)."""
    path = numerics.split(":", 1)[0] if ":" in numerics else PLAIN_KERNELS
    return path if path in KERNELS else PLAIN_KERNELS


def engine_fact(backend: BackendInfo) -> str:
    """The baseline header's engine: what besides the weights decides a backend's numbers, as key=value facts."""
    return (f"{backend.package} {backend.version} platform={backend.platform} tp={backend.tensor_parallel} "
            f"pp={backend.pipeline_parallel} executor={backend.executor or 'default'} "
            f"batch_invariant={'on' if backend.batch_invariant else 'off'}")


def run_header(results: Iterable[CaseResult], model: ModelInfo | None) -> Header | None:
    return next((h for h in (header_of(r, model) for r in results) if h is not None), None)


# Settings an older baseline may not record (not recorded: not known, and said; never taken as a difference).
SETTING_FIELDS = ("reading", "bos", "kernels")
# Facts that move probabilities without making verdicts incomparable: another machine, library or kernel path, or
# another way of computing the text reading's chains (the tree, or steps).
FACT_FIELDS = ("device", "hardware", "torch", "transformers", "backend", "engine", "kernels", "numerics", "text_path")


def bos_effect(bos: str) -> str:
    """What a BOS policy gave ("auto: <bos>" -> "<bos>"): `auto` and `always` that both gave <bos> read alike."""
    return bos.split(": ", 1)[-1]


def mismatch(recorded: Header, now: Header) -> list[str]:
    """The identity fields, and the ways of reading the baseline records, that differ: non-empty means the verdicts
    are not comparable."""
    wrong = [name for name in IDENTITY_FIELDS if getattr(recorded, name) != getattr(now, name)]
    read = {"reading": (recorded.reading, now.reading), "bos": (bos_effect(recorded.bos), bos_effect(now.bos))}
    return wrong + [name for name in READ_FIELDS if getattr(recorded, name) and read[name][0] != read[name][1]]


def settings_mismatch(recorded: Header, dtype: str, softmax_dtype: str | None, checks: str = "",
                      reading: str = "") -> list[str]:
    """What can be checked before the model is loaded: the dtypes, the reading and the checks the run asks for."""
    wrong = ["checks"] if recorded.checks != checks else []
    if recorded.dtype != dtype:
        wrong.append("dtype")
    if recorded.softmax_dtype != (softmax_dtype or dtype):
        wrong.append("softmax_dtype")
    if recorded.reading and reading and recorded.reading != reading:
        wrong.append("reading")
    return wrong


def differences(recorded: Header, now: Header, names: tuple[str, ...] = FACT_FIELDS) -> list[FactChange]:
    """The recorded facts among `names` that this run's header states otherwise (not recorded: not a difference)."""
    return [FactChange(name, getattr(recorded, name), getattr(now, name)) for name in names
            if getattr(recorded, name) and getattr(recorded, name) != getattr(now, name)]


def broken_pairs(baseline: Baseline, result: CaseResult, chapter: ChapterInfo) -> list[str]:
    """Ids of the pairs that passed in the baseline and that this result, a member, no longer lets pass."""
    if not result.scored or result.verdict == Verdict.OK:
        return []
    return [pair_id for pair_id, members in chapter.pairs.items()
            if result.id in members and baseline.pairs.get(f"{chapter.name}/{pair_id}") == PairVerdict.PASS]


def pair_state(pair: PairResult) -> PairVerdict | None:
    """pass or fail; a pair with a member that did not run is still known to fail when another member is not ok
    (as the per-member gate decides under `-k`); None when it is not known."""
    if pair.passed is not None:
        return PairVerdict.PASS if pair.passed else PairVerdict.FAIL
    return PairVerdict.FAIL if any(v is not None and v != Verdict.OK for v in pair.verdicts) else None


def _chapter_of(key: str) -> str:
    return key.split("/", 1)[0]


def _gone(keys: Iterable[str], chapter: ChapterRollup, current: Iterable[str]) -> list[str]:
    """The keys of `chapter` that it no longer has."""
    have = set(current)
    return sorted(k for k in keys if _chapter_of(k) == chapter.info.name and k.split("/", 1)[1] not in have)


def _pair_change(baseline: Baseline, pair: PairResult) -> PairChange:
    members = []
    for case_id, verdict in zip(pair.members, pair.verdicts):
        old = baseline.verdicts.get(f"{pair.chapter}/{case_id}")
        members.append(MemberChange(case_id, old.verdict if old else None, verdict))
    return PairChange(pair.key, baseline.pairs.get(pair.key), pair_state(pair), members)


def compare(baseline: Baseline, results: list[CaseResult], infos: Mapping[str, ChapterInfo]) -> Comparison:
    out = Comparison()
    chapters = rollup(results, infos)
    for chapter in chapters:
        for pair in chapter.pairs:
            change = _pair_change(baseline, pair)
            if change.old is None:
                out.new_pairs.append(change)
            elif change.new is None:
                if change.old == PairVerdict.PASS:
                    out.unchecked.append(change)
            elif change.old == PairVerdict.PASS and change.new == PairVerdict.FAIL:
                out.regressions.append(change)
            elif change.old == PairVerdict.FAIL and change.new == PairVerdict.PASS:
                out.improvements.append(change)
            else:
                out.unchanged += 1
        for case in chapter.cases:
            if not case.scored:
                continue
            old = baseline.verdicts.get(case.key)
            if old is None:
                out.new_cases.append(case.key)
            elif old.verdict != case.verdict:
                out.changed_cases.append(CaseChange(case.key, old, entry_of(case)))
        out.gone_pairs.update((key, baseline.pairs[key]) for key in _gone(baseline.pairs, chapter, chapter.info.pairs))
        out.gone_cases += _gone(baseline.verdicts, chapter, chapter.info.case_ids)
    ran = {c.info.name for c in chapters}
    out.not_run = sorted({_chapter_of(k) for k in [*baseline.pairs, *baseline.verdicts]} - ran)
    return out


def update(baseline: Baseline | None, results: list[CaseResult], infos: Mapping[str, ChapterInfo], header: Header,
           fresh: bool = False) -> tuple[Baseline, UpdateStats]:
    """This run's pairs and verdicts over the old ones (none when `fresh`): only what ran changes (a `-k` run keeps
    other chapters); entries of pairs and cases that a chapter which ran no longer has are removed."""
    old = Baseline(None) if baseline is None or fresh else baseline
    pairs, verdicts = dict(old.pairs), dict(old.verdicts)
    stats = UpdateStats(fresh=fresh, dropped=list(baseline.unreadable) if baseline is not None else [])
    written: set[str] = set()
    for chapter in rollup(results, infos):
        for key in _gone(pairs, chapter, chapter.info.pairs):
            del pairs[key]
            stats.removed += 1
        for key in _gone(verdicts, chapter, chapter.info.case_ids):
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
            if case.status == Status.UNSCORED and case.key in verdicts:  # deliberately never scored now
                del verdicts[case.key]
                stats.removed += 1
            if not case.scored:
                continue
            entry = entry_of(case)
            before = verdicts.get(case.key)
            stats.changed += before is not None and before.verdict != entry.verdict
            verdicts[case.key] = entry
            stats.verdicts += 1
            written.add(case.key)
    kept_keys = [k for k in [*pairs, *verdicts] if k not in written]
    stats.kept = len(kept_keys)
    kept = _kept(old, header, kept_keys)
    stats.mixed = dict(kept)
    # Each chapter's primers: this run's where it wrote the chapter, the old file's for a chapter it kept.
    ran = {_chapter_of(k): infos[_chapter_of(k)].primers for k in written if _chapter_of(k) in infos}
    held = {_chapter_of(k) for k in [*pairs, *verdicts]}
    primers = {c: p for c, p in {**old.primers, **ran}.items() if p and c in held}
    return Baseline(header, dict(sorted(pairs.items())), dict(sorted(verdicts.items())), kept=kept,
                    primers=dict(sorted(primers.items()))), stats


def _kept(old: Baseline, header: Header, kept_keys: list[str]) -> dict[str, dict[str, str]]:
    """Per chapter that keeps entries, what they were recorded with where the new header says otherwise ("": not
    recorded): a file that keeps another run's numbers says so, chapter by chapter."""
    kept = {}
    for chapter in sorted({_chapter_of(k) for k in kept_keys}):
        recorded = old.recorded_with(chapter)
        differ = {} if recorded is None else {name: getattr(recorded, name) for name in HEADER_FIELDS + OPTIONAL_FIELDS
                                               if getattr(recorded, name) != getattr(header, name)}
        if differ:
            kept[chapter] = differ
    return kept


def ulp(p: float, dtype: str) -> float:
    """The spacing of `dtype`'s values at p (bfloat16 keeps 8 significant bits, float16 11, float32 24)."""
    bits = {"bfloat16": 8, "float16": 11}.get(dtype, 24)
    return 2.0 ** (math.floor(math.log2(p)) - bits + 1) if p > 0 else 0.0


def numerics(baseline: Baseline, results: list[CaseResult], recorded: Header, now: Header,
             chapters: Mapping[str, ChapterInfo] | None = None) -> Numerics:
    """Whether the run's probabilities are the baseline's, and what the compared entries were recorded with
    otherwise (each chapter's own header where an update kept it, its primers): the causes a difference can have.
    A chapter read with other primers than the baseline's keeps its differences apart (PrimersChange)."""
    out = Numerics(same_kernels=recorded.numerics == now.numerics)
    for result in results:
        old = baseline.verdicts.get(result.key)
        if not result.scored or old is None:
            continue
        chapter = baseline.recorded_with(result.chapter) or recorded
        out.facts += [change for change in differences(chapter, now) if change not in out.facts]
        out.unrecorded += [name for name in SETTING_FIELDS if not getattr(chapter, name) and name not in out.unrecorded]
        primed = _primers_change(out, baseline, result.chapter, (chapters or {}).get(result.chapter))
        new = entry_of(result)
        if (old.p_correct, old.p_wrong) == (new.p_correct, new.p_wrong):
            continue
        (primed or out).differing.append(result.key)
        if old.verdict != new.verdict:
            (primed or out).changed.append(result.key)
            if primed is not None:
                continue
            runs = result.runs
            if any(r.margin <= 2 * ulp(max(r.p_correct, r.p_wrong), r.reading.softmax_dtype) for r in runs):
                out.within_rounding.append(result.key)
    return out


def _primers_change(out: Numerics, baseline: Baseline, chapter: str, info: ChapterInfo | None
                    ) -> PrimersChange | None:
    """The chapter's PrimersChange in `out` (made on its first case) when its primers now are not those its entries
    were read with; None when they are the same, or when either side does not know them (the baseline's not recorded
    is said once, as "primers" among `out.unrecorded`)."""
    now = info.primers if info is not None else ""
    recorded = baseline.primers.get(chapter, "")
    if not recorded and now and "primers" not in out.unrecorded:
        out.unrecorded.append("primers")
    if not (recorded and now) or recorded == now:
        return None
    for change in out.primers:
        if change.chapter == chapter:
            return change
    out.primers.append(PrimersChange(chapter, recorded, now))
    return out.primers[-1]
