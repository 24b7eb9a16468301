"""What a report read back states that no run could have written, field by field. Pure.

Pydantic checks each value's type; results/consistency.py checks the derived fields against the numbers they come
from. Between the two lie values of the right type that no run writes: a level no interval can be computed at, a
probability outside [0, 1], a pair of three cases or of a case its chapter does not list, a scored result of a model
the report does not describe. results/reading.py refuses the first of them, naming its field, for every reader:
`read_report` and `gotchas merge` alike.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from .schema import CaseResult, ChapterInfo, ModelInfo, Invocation
from .stats import MIN_LEVEL, level_computable
from .vocabulary import FamilyKind


# How far past 1 a reading's probability may lie: the text reading sums a softmax row's entries as the model's dtype
# rounded them (each within 2**-9 in bfloat16, 2**-11 in float16), and the sum is rounded again; a run can write
# 1.0009765625 (float16's next value after 1), never 1.02.
SLACK = 2 ** -6


@dataclass(frozen=True)
class OutOfBounds:
    """One field whose value no run writes: its path in the JSON document, and why."""

    field: str  # "run.level", "cases[3].runs[0].readings.text.p_correct", "chapters[0].pairs.p"
    why: str

    def __str__(self) -> str:
        return f"at {self.field}: {self.why}"


def out_of_bounds(run: Invocation, models: list[ModelInfo], chapters: list[ChapterInfo],
                  results: list[CaseResult]) -> Iterator[OutOfBounds]:
    """Every field of a report's data (as its document lists them, in its order) that no run could have written."""
    if not level_computable(run.level):
        yield OutOfBounds("run.level", f"{run.level!r} is not a significance level a run computes at (at least "
                                       f"{MIN_LEVEL:g} and less than 1)")
    for n, chapter in enumerate(chapters):
        yield from _groups(f"chapters[{n}]", chapter)
        yield from _families(f"chapters[{n}]", chapter)
    described = [m.id for m in models]
    for n, result in enumerate(results):
        at = f"cases[{n}]"
        if result.scored and result.model is not None and result.model not in described:
            yield OutOfBounds(f"{at}.model", f"{result.model!r} scored this case, but the report does not describe "
                                             f"that model (its `models`: {', '.join(described) or 'none'})")
        for r, prompt in enumerate(result.runs):
            for name, reading in prompt.readings.items():
                for key in ("p_correct", "p_wrong"):
                    p = getattr(reading, key)
                    if not 0 <= p <= 1 + SLACK:
                        yield OutOfBounds(f"{at}.runs[{r}].readings.{name}.{key}", f"{p!r} is not a probability "
                                                                                    "(from 0 to 1)")


def versioned(info: ChapterInfo) -> bool:
    """Whether a chapter is a chapter file whose hash names its version. A chapter that Python tests record into
    (gotchas.case(...)) is no file, so it has no hash."""
    return info.sha256 is not None and info.path.endswith((".yaml", ".yml"))


def _groups(at: str, chapter: ChapterInfo) -> Iterator[OutOfBounds]:
    """A chapter's pairs and twins, each of cases the chapter lists; in a chapter file, two each (the Python tests
    that record into one pair each add a member, as many as ran)."""
    for kind, groups in (("pair", chapter.pairs), ("twin", chapter.twins)):
        for group, members in groups.items():
            where = f"{at}.{kind}s.{group}"
            if versioned(chapter) and len(members) != 2:
                yield OutOfBounds(where, f"{kind} {group!r} of chapter {chapter.name!r} lists {len(members)} cases; "
                                         f"a {kind} is two")
            for member in members:
                if member not in chapter.case_ids:
                    yield OutOfBounds(where, f"{kind} {group!r} names case {member!r}, which chapter "
                                             f"{chapter.name!r} does not list")


def _families(at: str, chapter: ChapterInfo) -> Iterator[OutOfBounds]:
    """Each family's instances, each a unit of its kind that the chapter lists (the statistics cluster by them)."""
    for family, info in chapter.families.items():
        listed = {FamilyKind.PAIR: chapter.pairs, FamilyKind.TWIN: chapter.twins}.get(info.kind, chapter.case_ids)
        for n, instance in enumerate(info.instances):
            if instance.unit not in listed:
                yield OutOfBounds(f"{at}.families.{family}.instances[{n}].unit",
                                  f"family {family!r} of chapter {chapter.name!r} draws {info.kind} "
                                  f"{instance.unit!r}, which the chapter does not list")
