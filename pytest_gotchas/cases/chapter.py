"""Chapter YAML -> Chapter / Case / Pair, with file:line on every error.

A chapter file holds a name and title, defaults for its REPL cases (interpreter, environment), whether it is
implementation-defined, an optional prelude and primers, the cases, the pairs and the twins (the same program
written twice and cut at the same point). docs/cases.md documents the format.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from . import environment, familyfile, transcript
from . import yamlfile
from .familyfile import Draw, Drawn, Family
from .transcript import Transcript, TranscriptError
from .yamlfile import Map

CHAPTER_KEYS = {"chapter", "number", "title", "interpreter", "env", "implementation_defined", "prelude",
                "primers", "cases", "pairs", "twins", "families"}
CASE_KEYS = {"id", "transcript", "correct", "wrong", "unscored", "note", "interpreter", "env", "variants"}
VARIANT_KEYS = {"id", "transcript", "correct", "wrong", "note"}
# `\Z`, not `$`: `$` also matches before a final newline, which let the id "one\n" through.
CASE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")  # case, pair, twin, variant and chapter ids
VERSION = re.compile(r"3\.\d+\Z")
DEFAULT_INTERPRETER = "3.11"  # of a chapter that names none
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_LOOKS_LIKE_CHAPTER = re.compile(r"^(chapter|cases)\s*:", re.MULTILINE)


class CaseFileError(Exception):
    """A user error in a chapter file; the message names the file, the line and the case."""


@dataclass(frozen=True)
class Variant:
    """The case rewritten so that a reader who knows the semantics answers the same way (names, literals, an
    unrelated statement): its own transcript, cut and candidates, under the case's interpreter and environment."""

    id: str
    line: int
    transcript: Transcript
    correct: str
    wrong: str
    note: str | None = None


@dataclass(frozen=True)
class Case:
    id: str
    line: int
    transcript: Transcript  # the case's own transcript (without primer or prelude)
    correct: str | None
    wrong: str | None
    unscored: str | None  # why it is shown but never scored
    note: str | None
    interpreter: str  # "3.11"
    env: tuple[tuple[str, str], ...]  # sorted; for shell cases exactly what the command line sets
    variants: tuple[Variant, ...] = ()
    drawn: Draw | None = None  # a family's drawn member, cut by collection (truth/instances.py)

    @property
    def scored(self) -> bool:
        return self.unscored is None


@dataclass(frozen=True)
class Pair:
    id: str
    members: tuple[str, str]
    line: int


@dataclass(frozen=True)
class Prompt:
    """One prompt the model sees for a case: the case, or one of its variants, under one primer (or none), prelude
    included."""

    case: Case
    primer: str | None
    transcript: Transcript
    variant: str | None = None  # the variant's id; None for the case's own transcript
    correct: str | None = None
    wrong: str | None = None


@dataclass(frozen=True)
class Chapter:
    name: str
    number: int | None
    title: str
    path: Path
    implementation_defined: bool
    primers: tuple[tuple[str, str], ...]
    prelude: str
    cases: tuple[Case, ...]
    pairs: tuple[Pair, ...]
    twins: tuple[Pair, ...]
    families: tuple[Family, ...] = ()
    instances: tuple[Drawn, ...] = ()  # what cases/families.drawn added: its cases, pairs and twins follow the file's

    @property
    def label(self) -> str:
        """The heading reports use: "ch.2 sets: the order you see is the hash table"."""
        return f"ch.{self.number} {self.title}" if self.number is not None else self.title

    def prompts(self, case: Case, variants: bool = False) -> list[Prompt]:
        """The case's own transcript under every primer, then (with `variants`) each variant's."""
        own: list[tuple[str | None, Transcript, str | None, str | None]] = [
            (None, case.transcript, case.correct, case.wrong)]
        if variants:
            own += [(v.id, v.transcript, v.correct, v.wrong) for v in case.variants]
        if case.transcript.command is not None:
            return [Prompt(case, None, text, variant, correct, wrong) for variant, text, correct, wrong in own]
        primers: list[tuple[str | None, str]] = list(self.primers) or [(None, "")]
        return [Prompt(case, name, _combined(primer, self.prelude, text.prompt), variant, correct, wrong)
                for variant, text, correct, wrong in own for name, primer in primers]

    def framed(self, own_prompt: str, primer: str | None = None) -> Transcript:
        """A transcript of the case's own lines after the chapter's primer (the first, by default) and prelude."""
        named = dict(self.primers)
        text = named.get(primer, self.primers[0][1]) if primer is not None and self.primers else (
            self.primers[0][1] if self.primers else "")
        return _combined(text, self.prelude, own_prompt)


def _of(variant: str | None) -> str:
    return f"variant {variant!r}: " if variant else ""


def looks_like_chapter(path: Path) -> bool:
    """Whatever its encoding, so that a chapter saved as Latin-1 or UTF-16 is an error, not silently left out."""
    return bool(_LOOKS_LIKE_CHAPTER.search(yamlfile.sniff(path)))


def _combined(primer: str, prelude: str, own_prompt: str) -> Transcript:
    text = "".join(_block(part) for part in (primer, prelude)) + own_prompt + transcript.CURSOR
    return transcript.parse(text)


def _block(text: str) -> str:
    text = transcript.normalise_prompts(text)
    return text if not text or text.endswith("\n") else text + "\n"


def load_chapter(path: Path, display: str | None = None) -> Chapter:
    """Parse and validate one chapter file; `display` is the path shown in messages (relative to rootdir)."""
    where = display or str(path)
    try:
        data = yamlfile.load(yamlfile.read_text(path, where), where)
    except yamlfile.YamlFileError as error:
        raise CaseFileError(str(error)) from None
    return _Chapter(path, where, data).build()


class _Chapter:
    def __init__(self, path: Path, where: str, data: object) -> None:
        self.path, self.where, self.data = path, where, data

    def fail(self, line: int, message: str, case: str | None = None) -> CaseFileError:
        subject = f"case {case!r}: " if case else ""
        return CaseFileError(f"{self.where}:{line}: {subject}{message}")

    def build(self) -> Chapter:
        data = self.data
        if not isinstance(data, Map):
            raise self.fail(1, "a chapter file is a mapping with `chapter`, `title` and `cases`")
        self._unknown(data, CHAPTER_KEYS, "chapter", None)
        name = data.get("chapter")
        if not isinstance(name, str) or not CASE_ID.fullmatch(name):
            raise self.fail(data.lines.get("chapter", data.line), "`chapter` must be a short name such as `sets`")
        number = data.get("number")
        if number is not None and (not isinstance(number, int) or isinstance(number, bool)):
            raise self.fail(data.lines["number"], "`number` must be an integer")
        title = self._text(data, "title", None) or name
        interpreter = self._version(data, None)
        env = self._env(data, None)
        primers = data.get("primers") or {}
        if not isinstance(primers, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                    for k, v in primers.items()):
            raise self.fail(data.lines.get("primers", data.line), "`primers` maps a primer name to its transcript text")
        prelude = self._text(data, "prelude", None) or ""
        implementation_defined = data.get("implementation_defined", False)
        if not isinstance(implementation_defined, bool):
            raise self.fail(data.lines["implementation_defined"],
                            f"`implementation_defined` is true or false (unquoted), got {implementation_defined!r}")
        raw_cases = data.get("cases")
        if not isinstance(raw_cases, list) or not raw_cases:
            raise self.fail(data.lines.get("cases", data.line), "`cases` must be a non-empty list of cases")
        cases: list[Case] = []
        seen: set[str] = set()  # a set, not a scan of the list: a chapter of 5,000 cases took seconds to load
        for raw in raw_cases:
            case = self._case(raw, interpreter or DEFAULT_INTERPRETER, env, bool(primers or prelude))
            if case.id in seen:
                raise self.fail(case.line, "duplicate case id", case.id)
            seen.add(case.id)
            cases.append(case)
        pairs, twins = self._pairs(data, "pairs", cases), self._pairs(data, "twins", cases)
        chapter = Chapter(
            name=name, number=number, title=str(title), path=self.path,
            implementation_defined=implementation_defined,
            primers=tuple((str(k), v) for k, v in primers.items()), prelude=prelude, cases=tuple(cases),
            pairs=pairs, twins=twins,
            families=familyfile.families(data.get("families"), data.lines.get("families", data.line),
                                         {c.id: c for c in cases}, pairs, twins, self.fail, CASE_ID),
        )
        for case in chapter.cases:  # primer + prelude + case must still parse as one session
            try:
                chapter.prompts(case, variants=True)
            except TranscriptError as error:
                raise self.fail(case.line, f"with its primer/prelude: {error}", case.id) from None
        return chapter

    def _unknown(self, data: Map, allowed: set[str], what: str, case: str | None) -> None:
        for key in data:
            if key not in allowed:
                raise self.fail(data.lines[key], f"unknown {what} key {key!r} (allowed: {', '.join(sorted(allowed))})",
                                case)

    def _version(self, data: Map, case: str | None) -> str | None:
        value = data.text("interpreter")
        if value is None:
            return None
        value = str(value)
        if not VERSION.fullmatch(value):
            raise self.fail(data.lines["interpreter"], f"`interpreter` is a version such as \"3.12\", got {value!r}", case)
        return value

    def _env(self, data: Map, case: str | None) -> dict[str, str]:
        value = data.get("env")
        if value is None:
            return {}
        if not isinstance(value, Map):
            raise self.fail(data.lines["env"], "`env` maps variable names to values", case)
        for name, item in value.items():
            if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
                raise self.fail(value.lines[name], f"`env`: {name!r} is not a variable name", case)
            refused = environment.message(name)
            if refused is not None:
                raise self.fail(value.lines[name], f"`env`: {refused}", case)
            if not isinstance(item, (str, int)) or isinstance(item, bool):
                raise self.fail(value.lines[name],
                                f"`env`: {name} must be a string or a whole number (quote it: \"0\"), got {item!r}",
                                case)
        return {k: str(value.text(k)) for k in value}

    def _text(self, data: Map, key: str, case: str | None) -> str | None:
        """An optional text field; a number written plainly is read as written."""
        value = data.text(key)
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        kind = "mapping" if isinstance(value, dict) else "list" if isinstance(value, list) else type(value).__name__
        raise self.fail(data.lines[key], f"`{key}` is a text, got a {kind}: {value!r}", case)

    def _case(self, raw: object, interpreter: str, env: dict[str, str], framed: bool) -> Case:
        if not isinstance(raw, Map):
            raise self.fail(getattr(raw, "line", 1), "each case is a mapping with `id` and `transcript`")
        case_id = raw.get("id")
        if not isinstance(case_id, str) or not CASE_ID.fullmatch(case_id):
            raise self.fail(raw.line, "every case needs an `id` (letters, digits, `-`, `_`, `.`)")
        self._unknown(raw, CASE_KEYS, "case", case_id)
        text = raw.get("transcript")
        if not isinstance(text, str):
            raise self.fail(raw.line, "`transcript` (the text the model sees, with █ at the cut) is missing", case_id)
        try:
            parsed = transcript.parse(text)
        except TranscriptError as error:
            # Only a `|` block keeps the transcript's lines as the file's lines.
            offset = error.line - 1 if raw.literal.get("transcript") else 0
            raise self.fail(raw.value_lines["transcript"] + offset, str(error), case_id) from None
        if parsed.command is not None and framed:
            raise self.fail(raw.line, "a shell case cannot take the chapter's primers or prelude", case_id)
        unscored = self._text(raw, "unscored", case_id)
        note = self._text(raw, "note", case_id)
        correct, wrong = raw.text("correct"), raw.text("wrong")
        if unscored is not None:
            if correct is not None or wrong is not None:
                raise self.fail(raw.line, "an unscored case has no `correct` or `wrong`", case_id)
            unscored = unscored or "unscored"
        else:
            correct, wrong = self._candidates(raw, case_id)
        if parsed.command is not None:
            version = parsed.command.interpreter or self._version(raw, case_id) or interpreter
            case_env = dict(parsed.command.env)
            if "env" in raw:
                raise self.fail(raw.lines["env"], "a shell case sets its environment on its command line", case_id)
            for name in case_env:
                refused = environment.message(name)
                if refused is not None:
                    raise self.fail(raw.value_lines["transcript"], f"the command line: {refused}", case_id)
        else:
            version = self._version(raw, case_id) or interpreter
            case_env = {**env, **self._env(raw, case_id)}
        variants = self._variants(raw, case_id, parsed, unscored is not None)
        return Case(id=case_id, line=raw.line, transcript=parsed, correct=correct, wrong=wrong, unscored=unscored,
                    note=note, interpreter=version, env=tuple(sorted(case_env.items())), variants=variants)

    def _candidates(self, raw: Map, owner: str, variant: str | None = None) -> tuple[str, str]:
        correct, wrong = raw.text("correct"), raw.text("wrong")
        for key, value in (("correct", correct), ("wrong", wrong)):
            if not isinstance(value, (str, int, float)) or isinstance(value, bool) or str(value) == "":
                what = "Python prints" if key == "correct" else "a misreading expects"
                raise self.fail(raw.lines.get(key, raw.line),
                                f"{_of(variant)}`{key}` must be the non-empty text {what} at the cut (quote it: "
                                "\"True\")", owner)
        correct, wrong = str(correct), str(wrong)
        if correct[0] == wrong[0]:
            raise self.fail(raw.lines["wrong"], f"{_of(variant)}`correct` {correct!r} and `wrong` {wrong!r} start "
                                                "alike; cut where they diverge", owner)
        return correct, wrong

    def _variants(self, raw: Map, case_id: str, own: Transcript, unscored: bool) -> tuple[Variant, ...]:
        items = raw.get("variants")
        if items is None:
            return ()
        if unscored or not isinstance(items, list) or not all(isinstance(v, Map) for v in items):
            why = "an unscored case has no variants" if unscored else "`variants` is a list of variants, each with " \
                  "`id`, `transcript`, `correct` and `wrong`"
            raise self.fail(raw.lines["variants"], why, case_id)
        variants: list[Variant] = []
        for item in items:
            variant_id = item.get("id")
            if not isinstance(variant_id, str) or not CASE_ID.fullmatch(variant_id):
                raise self.fail(item.line, "every variant needs an `id` (letters, digits, `-`, `_`, `.`)", case_id)
            if any(v.id == variant_id for v in variants):
                raise self.fail(item.line, f"duplicate variant id {variant_id!r}", case_id)
            for key in item:
                if key not in VARIANT_KEYS:
                    raise self.fail(item.lines[key], f"variant {variant_id!r}: unknown key {key!r} (allowed: "
                                                     f"{', '.join(sorted(VARIANT_KEYS))}; a variant runs under its "
                                                     "case's interpreter and environment)", case_id)
            text = item.get("transcript")
            if not isinstance(text, str):
                raise self.fail(item.line, f"variant {variant_id!r}: `transcript` is missing", case_id)
            try:
                parsed = transcript.parse(text)
            except TranscriptError as error:
                offset = error.line - 1 if item.literal.get("transcript") else 0
                raise self.fail(item.value_lines["transcript"] + offset, f"variant {variant_id!r}: {error}",
                                case_id) from None
            if parsed.kind != own.kind:
                raise self.fail(item.line, f"variant {variant_id!r}: a {parsed.kind} transcript for a {own.kind} case",
                                case_id)
            for name, _ in parsed.command.env if parsed.command else ():
                refused = environment.message(name)
                if refused is not None:
                    raise self.fail(item.value_lines["transcript"], f"variant {variant_id!r}: {refused}", case_id)
            correct, wrong = self._candidates(item, case_id, variant_id)
            variants.append(Variant(variant_id, item.line, parsed, correct, wrong, self._text(item, "note", case_id)))
        return tuple(variants)

    def _pairs(self, data: Map, key: str, cases: list[Case]) -> tuple[Pair, ...]:
        raw = data.get(key)
        if raw is None:
            return ()
        if not isinstance(raw, Map):
            raise self.fail(data.lines.get(key, data.line), f"`{key}` maps an id to two case ids: `id: [a, b]`")
        ids = {c.id: c for c in cases}
        pairs: list[Pair] = []
        named: set[str] = set()
        for pair_id, members in raw.items():
            line = raw.lines[pair_id]
            name = str(pair_id) if isinstance(pair_id, int) and not isinstance(pair_id, bool) else pair_id
            if not isinstance(name, str) or not CASE_ID.fullmatch(name):
                # Baselines key a pair as "<chapter>/<id>": an id with `/` (or a control character) could not be
                # read back from the baseline this run records.
                raise self.fail(line, f"{key[:-1]} id {pair_id!r} must be letters, digits, `-`, `_` and `.` (it "
                                      f"names the {key[:-1]} in reports and baselines)")
            if name in named:
                raise self.fail(line, f"duplicate {key[:-1]} id {name!r}")
            named.add(name)
            if not isinstance(members, list) or len(members) != 2:
                raise self.fail(line, f"{key[:-1]} {pair_id!r} must list exactly two case ids")
            for member in members:
                if member not in ids:
                    raise self.fail(line, f"{key[:-1]} {pair_id!r} names unknown case {member!r}")
                if not ids[member].scored:
                    raise self.fail(line, f"{key[:-1]} {pair_id!r} names unscored case {member!r}")
            first, second = ids[members[0]], ids[members[1]]
            if key == "twins" and (first.correct, first.wrong) != (second.correct, second.wrong):
                # One program written twice is cut at the same point: the same text is right, the same is wrong there.
                raise self.fail(line, f"twin {name!r} is cut at different points: {first.id!r} has `correct` "
                                      f"{first.correct!r} and `wrong` {first.wrong!r}, {second.id!r} has "
                                      f"{second.correct!r} and {second.wrong!r}")
            pairs.append(Pair(id=name, members=(members[0], members[1]), line=line))
        return tuple(pairs)
