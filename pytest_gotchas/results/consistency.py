"""What a report read back states, against what its numbers give. Pure.

A report's verdicts, qualifiers, pair results and rollups are derived from its probabilities by results/verdict.py
and rollup.py. A file can be edited: a MISS written beside P(correct) 0.73 and P(wrong) 0.27, or the two
probabilities swapped under the verdicts they gave. A reader recomputes every derived field from the numbers and names
each one that the file states otherwise, so that such a file is refused instead of merged as written. JSON numbers
out of float range (1e400 reads as infinity) are found here too: no verdict and no written report can hold them.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .schema import CaseResult
from .verdict import NonFiniteProbability, case_verdict, run_verdict


@dataclass(frozen=True)
class Inconsistency:
    """One derived field whose stored value is not what the numbers give."""

    subject: str  # what it belongs to: "case sets/list-reversed" or "pair sets/list-vs-set-reversed"
    model: str | None
    field: str  # its path in the JSON document: "cases[3].runs[0].readings.text.verdict"
    stored: str
    computed: str
    numbers: str = ""  # the numbers it is computed from, when they are one run's two probabilities


def non_finite(data: Any) -> str | None:
    """The path of the first number in JSON values that is not finite (NaN, or out of float range), or None.
    Walked without recursion: the caller has already bounded the depth."""
    pending: list[tuple[str, Any]] = [("", data)]
    while pending:
        path, value = pending.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return path
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > sys.float_info.max:
            return path
        if isinstance(value, dict):
            pending += reversed([(f"{path}.{key}" if path else str(key), child) for key, child in value.items()])
        elif isinstance(value, list):
            pending += reversed([(f"{path}[{n}]", child) for n, child in enumerate(value)])
    return None


def case_inconsistencies(result: CaseResult, at: str) -> Iterator[Inconsistency]:
    """Each derived field of one result (at path `at`) that its probabilities do not give: each reading's verdict,
    the case's verdict and qualifiers, and its verdict by each reading."""
    subject = f"case {result.key}"

    def wrong(field: str, stored: Any, computed: Any, numbers: str = "") -> Inconsistency:
        return Inconsistency(subject, result.model, f"{at}.{field}", str(stored), str(computed), numbers)

    if not result.scored:
        if result.verdict is not None:
            yield wrong("verdict", result.verdict, f"none (the case is {result.status})")
        return
    if not result.runs:
        yield wrong("runs", "none", "at least one run (the case is scored)")
        return
    for n, run in enumerate(result.runs):
        for name, reading in run.readings.items():
            try:
                verdict = run_verdict(reading.p_correct, reading.p_wrong)
            except NonFiniteProbability:
                continue  # non_finite names these before any verdict is read
            if reading.verdict != verdict:
                yield wrong(f"runs[{n}].readings.{name}.verdict", reading.verdict, verdict,
                            f"P(correct) {reading.p_correct!r}, P(wrong) {reading.p_wrong!r}")
    if any(run.main not in run.readings for run in result.runs):
        yield wrong("runs[].main", "a reading the run does not have", "one of its readings")
        return
    judgement = case_verdict([run.judged() for run in result.runs])
    if result.verdict != judgement.verdict:
        yield wrong("verdict", result.verdict, judgement.verdict)
    if tuple(result.qualifiers) != judgement.qualifiers:
        yield wrong("qualifiers", [str(q) for q in result.qualifiers], [str(q) for q in judgement.qualifiers])
    for name, stored in result.reading_verdicts.items():
        if not all(name in run.readings for run in result.runs):
            yield wrong(f"reading_verdicts.{name}", stored, "none (not every run has that reading)")
            continue
        computed = case_verdict([run.judged(name) for run in result.runs]).verdict
        if stored != computed:
            yield wrong(f"reading_verdicts.{name}", stored, computed)


def stated(stored: Any, computed: Any) -> Any:
    """`computed` as far as `stored` states it: the keys of each object that `stored` has at the same place (lists
    entry by entry where their lengths agree). A document of an older format lacks the fields added since to the
    entries of a computed section: they were not recorded, not wrong."""
    if isinstance(stored, dict) and isinstance(computed, dict):
        return {k: stated(stored[k], v) for k, v in computed.items() if k in stored}
    if isinstance(stored, list) and isinstance(computed, list) and len(stored) == len(computed):
        return [stated(a, b) for a, b in zip(stored, computed)]
    return computed


def first_difference(path: str, stored: Any, computed: Any) -> tuple[str, Any, Any]:
    """Where two JSON values first differ: the path of the innermost value that differs, and both values there."""
    while True:
        if isinstance(stored, dict) and isinstance(computed, dict):
            key = next((k for k in dict.fromkeys([*stored, *computed]) if stored.get(k) != computed.get(k)), None)
            if key is None or key not in stored or key not in computed:
                return f"{path}.{key}", stored.get(key, "absent"), computed.get(key, "absent")
            path, stored, computed = f"{path}.{key}", stored[key], computed[key]
        elif isinstance(stored, list) and isinstance(computed, list):
            if len(stored) != len(computed):
                return path, f"{len(stored)} entries", f"{len(computed)} entries"
            n = next(n for n, (a, b) in enumerate(zip(stored, computed)) if a != b)
            path, stored, computed = f"{path}[{n}]", stored[n], computed[n]
        else:
            return path, stored, computed


def subject_of(section: str, path: str, data: Any) -> tuple[str, str | None]:
    """What an entry of a computed section is about: "pair sets/p" and its model, from the entry's own keys."""
    entry: Any = data
    if path.startswith(f"{section}[") and isinstance(data, list):
        index = int(path[len(section) + 1:path.index("]")])
        entry = data[index] if index < len(data) else None
    if isinstance(entry, dict) and isinstance(entry.get("chapter"), str):
        own = entry.get("id", entry.get("family"))
        name = entry["chapter"] + (f"/{own}" if isinstance(own, str) else "")
        kind = {"pairs": "pair", "rollups": "chapter", "comparisons": "comparison", "twin_splits": "twin split",
                "log_ratios": "log ratio difference", "family_shares": "family",
                "effects": "patched chapter"}.get(section, section)
        model = entry.get("model")
        return f"{kind} {name}", model if isinstance(model, str) else None
    return section, None
