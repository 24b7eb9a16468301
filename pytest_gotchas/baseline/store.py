"""The baseline file, pure (no torch, no pytest): its format, reading it with a clear error, writing it.

A baseline stores what one model, at one dtype, answered: each pair's `pass`/`fail` and each scored case's verdict
and probabilities. The file is small, sorted and diff-friendly, one line per pair and per case:

    format: 2
    count: {pairs: 19, verdicts: 46}
    model: {bos: "auto: <bos>", device: cpu, dtype: bfloat16, kernels: plain, name: ..., reading: text,
            softmax_dtype: bfloat16, text_path: tree, torch: ..., transformers: ..., weights_sha256: ...}
                                                 (a block mapping in the file)
    kept:                                        (only when an update kept chapters recorded otherwise)
      aliasing: {transformers: 5.24.0}
    primers:                                     (the primers each chapter's entries were read with)
      sets: "sha256 0b1c...: list-first: '>>> xs = [3, 1, 2]' +1 lines"
    pairs:
      sets/list-vs-set-reversed: fail
    verdicts:
      floats/exact-sum: {p_correct: {False-first: 0.4296875, True-first: 0.45703125}, p_wrong: {...}, verdict: ok}
      sets/list-reversed: {p_correct: 0.0498046875, p_wrong: 0.134765625, verdict: MISS}

Probabilities are stored exactly (the shortest repr that reads back to the same float); a case run under several
primer orders stores one probability per primer. `model` says what the entries were recorded with; an update that
ran some chapters keeps the others, and where what they were recorded with differs from the new header, `kept` says
so per chapter (the header's fields that differ, with the values they were recorded with), so that a reviewer of the
diff sees a mixed file and a comparison knows what each chapter's numbers came from. `primers` records, per chapter,
the primers its prompts started with (their sha256 and a short form; absent in a file written before: not recorded,
and said so when compared). There is no top-level `cases:`
or `chapter:` key, so the file is never collected as a chapter even when it sits among the chapter files.

A run that compares refuses a file with any entry it cannot read. A run that records reads it leniently: an entry it
cannot read (a key such as `demo/a/b` that an older version wrote, a probability of .nan) is dropped and named, and
every other entry is kept, so that one bad line never costs the other chapters their baseline.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from collections.abc import Callable
from enum import StrEnum
from typing import Any, TypeVar

import yaml

from ..cases.chapter import CASE_ID
from ..cases.yamlfile import MAX_DEPTH, TooDeep, safe_load
from ..files import NotARegularFile, TooLarge, read_regular, remove_stale_temporaries, write_atomic
from ..results.baselines import UPDATE_FLAG, Entry, Header, Probability
from ..results.verdict import Verdict
from ..results.vocabulary import PairVerdict

FORMAT = 5  # 2: a count of the entries, so that a file cut short is told apart from one with fewer pairs. 3: the
# header records the reading, BOS and kernels, and `kept:` what an update kept from other runs. 4: `primers:`, each
# chapter's primers (an older version refuses the key rather than compare without it). 5: the header's `text_path`,
# how the text reading's chains were computed (tree, steps or contexts)
READS = (2, 3, 4, 5)  # an older file reads as one whose header does not record those (said as such)
# What every version that wrote format 4 computed the text reading's chains as: steps on the KV cache through
# transformers (one-pass scoring came before that format, the tree after it), prompts of their own through vLLM. So a
# format-4 file of the text reading reads with that `text_path`, and a comparison names the tree as the cause.
FORMAT_4_TEXT_PATH = {"": "steps", "vllm": "contexts"}
TOP_KEYS = ("format", "count", "model", "kept", "primers", "pairs", "verdicts")
DEFAULT_DIR = "baselines"
HEADER_FIELDS = ("name", "weights_sha256", "dtype", "softmax_dtype", "device", "hardware", "numerics", "torch",
                 "transformers")
# Written only when set: the opt-in checks the verdicts were computed with (absent: none, the write-up's method).
# The backend (absent: transformers) and its engine's description (backends/vllm.py).
# How the numbers were read: the reading, the BOS policy and what it gave, the kernel path (absent: an older file that
# did not record them; compare.py says so instead of guessing).
OPTIONAL_FIELDS = ("checks", "backend", "engine", "reading", "bos", "kernels", "text_path")
# A different value in one of these makes the verdicts incomparable: the comparison is refused.
IDENTITY_FIELDS = ("weights_sha256", "dtype", "softmax_dtype", "checks", "backend")
COMMENT = """\
# pytest-gotchas baseline: the pair verdicts `pytest --gotchas` compares every run with.
# A pair that is `pass` here and no longer passes fails the run. Record intended changes with
# --gotchas-update-baseline (only the pairs and cases that ran are rewritten).
"""

T = TypeVar("T")
# Bytes a baseline file may hold, read no further (as chapters and reports are): one is about 130 bytes a case (the
# shipped gemma-3-270m baseline: 47 kB for 373 cases), so this is some 500,000 cases.
MAX_BYTES = 64 << 20


class BaselineError(Exception):
    """A baseline file that cannot be used; the message names the file and says what to do."""


@dataclass
class Baseline:
    header: Header | None
    pairs: dict[str, PairVerdict] = field(default_factory=dict)  # "<chapter>/<pair id>" -> its verdict
    verdicts: dict[str, Entry] = field(default_factory=dict)  # "<chapter>/<case id>" -> Entry
    unreadable: list[str] = field(default_factory=list)  # read leniently: the entries dropped, each with why
    kept: dict[str, dict[str, str]] = field(default_factory=dict)  # chapter -> header fields it was recorded with
    primers: dict[str, str] = field(default_factory=dict)  # chapter -> the primers it was read with; absent: unknown

    def recorded_with(self, chapter: str) -> Header | None:
        """The header a chapter's entries were recorded with: the file's, with what `kept` says of that chapter."""
        if self.header is None:
            return None
        return replace(self.header, **self.kept.get(chapter, {}))


# -- where it lives ---------------------------------------------------------------------------------------------


def device_kind(device: str) -> str:
    """"cuda:1" -> "cuda"; "auto:cuda:0,cuda:1" -> "auto"."""
    return device.split(":", 1)[0]


def checks_of(precision_check: bool, variants: bool) -> str:
    """The opt-in checks that add qualifiers to verdicts (precision-dep, surface-dep), as a baseline records them:
    verdicts computed with other checks are not comparable, so each combination has its own file."""
    return ",".join(name for name, on in (("precision-check", precision_check), ("variants", variants)) if on)


def default_path(root: Path, model: str, dtype: str, device: str, checks: str = "") -> Path:
    """baselines/<model's short name>-<dtype>-<device kind>[+<check>...].yaml under the rootdir."""
    suffix = "".join(f"+{name}" for name in checks.split(",") if name)
    return Path(root) / DEFAULT_DIR / f"{model}-{dtype}-{device_kind(device)}{suffix}.yaml"


# -- reading and writing ----------------------------------------------------------------------------------------


def read(path: Path, lenient: bool = False) -> Baseline:
    """The baseline at `path`; `lenient` (recording): entries that cannot be read are dropped into `unreadable`."""
    try:
        text = read_regular(path, MAX_BYTES).decode("utf-8")
    except (NotARegularFile, TooLarge) as error:  # a FIFO would block the run, /dev/zero never end
        raise BaselineError(f"cannot read baseline {path}: {error.strerror}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise BaselineError(f"cannot read baseline {path}: {error}") from None
    return loads(text, str(path), lenient)


def loads(text: str, source: str = "<baseline>", lenient: bool = False) -> Baseline:
    def bad(where: str, problem: str) -> BaselineError:
        return BaselineError(
            f"baseline {source} is not a pytest-gotchas baseline: {where}: {problem}. Fix or delete the file, "
            f"then record it again with {UPDATE_FLAG}."
        )

    unreadable: list[str] = []

    def bad_entry(where: str, problem: str) -> BaselineError | _Skip:
        """An entry that cannot be read: refused when comparing; when recording, dropped (the others are kept)."""
        if lenient:
            unreadable.append(f"{where}: {problem}")
            return _Skip()
        return BaselineError(
            f"baseline {source} is not a pytest-gotchas baseline: {where}: {problem}. Fix or delete that entry, or "
            f"record again with {UPDATE_FLAG}, which drops the entries it cannot read and keeps every other."
        )

    data = _top_level(text, bad)
    count = data["count"]
    header = _read_header(data.get("model"), bad)
    if data["format"] == 4 and header is not None and header.reading == "text" and not header.text_path:
        header = replace(header, text_path=FORMAT_4_TEXT_PATH.get(header.backend, ""))
    kept = _read_kept(data.get("kept"), bad)
    primers = _read_primers(data.get("primers"), bad)
    raw_pairs = _mapping(data.get("pairs"), "pairs", bad)
    pairs = {}
    for key, value in raw_pairs.items():
        try:
            _check_key(key, "pairs", bad_entry)
            if value not in (PairVerdict.PASS, PairVerdict.FAIL):
                raise bad_entry(f"pairs: {key}", f"expected pass or fail, got {value!r}")
        except _Skip:
            continue
        pairs[key] = PairVerdict(value)
    raw_verdicts = _mapping(data.get("verdicts"), "verdicts", bad)
    verdicts = {}
    for key, value in raw_verdicts.items():
        try:
            _check_key(key, "verdicts", bad_entry)
            verdicts[key] = _read_entry(value, f"verdicts: {key}", bad_entry)
        except _Skip:
            continue
    if (len(raw_pairs), len(raw_verdicts)) != (count["pairs"], count["verdicts"]):
        raise bad("count", f"the file says {count['pairs']} pairs and {count['verdicts']} verdicts but holds "
                           f"{len(raw_pairs)} pairs and {len(raw_verdicts)} verdicts: it was cut short or edited by "
                           "hand")
    return Baseline(header, dict(pairs), verdicts, unreadable, kept, primers)


def _top_level(text: str, bad: Callable[[str, str], BaselineError]) -> dict[Any, Any]:
    """The parsed file, its top-level keys, format and counts checked."""
    try:
        data = safe_load(text)
    except TooDeep as error:
        raise bad(f"line {error.line}", f"it nests more than {MAX_DEPTH} levels deep (a baseline needs 5)") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "the file"
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise bad(where, f"invalid YAML ({problem})") from None
    if not isinstance(data, dict):
        raise bad("the file", f"expected a mapping with keys {', '.join(TOP_KEYS)}; got {_kind(data)}")
    unknown = sorted(str(k) for k in data if k not in TOP_KEYS)
    if unknown:
        raise bad("top level", f"unknown key(s) {', '.join(unknown)} (expected {', '.join(TOP_KEYS)})")
    if data.get("format") not in READS:
        raise bad("format", f"expected {' or '.join(map(str, READS))}, got {data.get('format')!r}")
    count = data.get("count")
    if not isinstance(count, dict) or set(count) != {"pairs", "verdicts"} or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in count.values()):
        raise bad("count", f"expected {{pairs: N, verdicts: N}}, got {count!r}")
    return data


class _Skip(Exception):
    """An entry dropped by a lenient read."""


def _kind(value: Any) -> str:
    return "nothing (an empty file)" if value is None else f"a {type(value).__name__}"


def _mapping(value: Any, where: str, bad: Any) -> dict[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise bad(where, f"expected a mapping, got {_kind(value)}")
    return value


def _check_key(key: Any, where: str, bad: Any) -> None:
    if not isinstance(key, str) or key.count("/") != 1 or not all(CASE_ID.fullmatch(part) for part in key.split("/")):
        raise bad(f"{where}: {key!r}", "keys are \"<chapter>/<id>\", each of letters, digits, `-`, `_` and `.`")


def _read_header(value: Any, bad: Any) -> Header | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise bad("model", f"expected a mapping, got {_kind(value)}")
    missing = [name for name in HEADER_FIELDS if not isinstance(value.get(name), str)]
    if missing:
        raise bad("model", f"missing or not a string: {', '.join(missing)}")
    extra = sorted(str(k) for k in value if k not in HEADER_FIELDS + OPTIONAL_FIELDS)
    if extra:
        raise bad("model", f"unknown key(s) {', '.join(extra)}")
    wrong = [name for name in OPTIONAL_FIELDS if name in value and not isinstance(value[name], str)]
    if wrong:
        raise bad("model", f"not a string: {', '.join(wrong)}")
    return Header(**{name: value[name] for name in HEADER_FIELDS + OPTIONAL_FIELDS if name in value})


def _read_kept(value: Any, bad: Any) -> dict[str, dict[str, str]]:
    kept = {}
    for chapter, fields in _mapping(value, "kept", bad).items():
        if not isinstance(chapter, str) or not CASE_ID.fullmatch(chapter):
            raise bad(f"kept: {chapter!r}", "keys are chapter names")
        if not isinstance(fields, dict) or not all(k in HEADER_FIELDS + OPTIONAL_FIELDS and isinstance(v, str)
                                                   for k, v in fields.items()):
            raise bad(f"kept: {chapter}", f"expected a mapping of model fields ({', '.join(HEADER_FIELDS)} ...) to "
                                          f"strings, got {fields!r}")
        kept[chapter] = dict(fields)
    return kept


def _read_primers(value: Any, bad: Any) -> dict[str, str]:
    primers = {}
    for chapter, fact in _mapping(value, "primers", bad).items():
        if not isinstance(chapter, str) or not CASE_ID.fullmatch(chapter):
            raise bad(f"primers: {chapter!r}", "keys are chapter names")
        if not isinstance(fact, str) or not fact:
            raise bad(f"primers: {chapter}", f"expected the primers' sha256 and short form, got {fact!r}")
        primers[chapter] = fact
    return primers


def _read_entry(value: Any, where: str, bad: Any) -> Entry:
    if not isinstance(value, dict) or set(value) != {"verdict", "p_correct", "p_wrong"}:
        raise bad(where, "expected {verdict: ..., p_correct: ..., p_wrong: ...}")
    if value["verdict"] not in list(Verdict):
        raise bad(where, f"verdict {value['verdict']!r} is not one of {', '.join(Verdict)}")
    probabilities = []
    for name in ("p_correct", "p_wrong"):
        p = value[name]
        numbers = list(p.values()) if isinstance(p, dict) and p else [p]
        if not all(_is_probability(x) for x in numbers) or (isinstance(p, dict) and not all(
                isinstance(k, str) for k in p)):
            raise bad(where, f"{name} must be a probability or a mapping from primer to probability, got {p!r}")
        probabilities.append(dict(p) if isinstance(p, dict) else float(p))
    return Entry(Verdict(value["verdict"]), probabilities[0], probabilities[1])


def _is_probability(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and 0 <= x <= 1


class _Flow(dict):  # type: ignore[type-arg]
    """A mapping written on one line."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Flow, lambda dumper, data: dumper.represent_mapping(
    "tag:yaml.org,2002:map", data, flow_style=True))
# A closed set's member is written as its value (SafeDumper knows str, not its subclasses).
_Dumper.add_multi_representer(StrEnum, lambda dumper, data: dumper.represent_str(str(data)))


def _sorted(value: Probability) -> Probability:
    return dict(sorted(value.items())) if isinstance(value, dict) else value


def dumps(baseline: Baseline) -> str:
    data: dict[str, Any] = {"format": FORMAT,
                            "count": _Flow(pairs=len(baseline.pairs), verdicts=len(baseline.verdicts))}
    if baseline.header is not None:
        data["model"] = {name: getattr(baseline.header, name) for name in sorted(HEADER_FIELDS + OPTIONAL_FIELDS)
                         if name in HEADER_FIELDS or getattr(baseline.header, name)}
    if baseline.kept:
        data["kept"] = {chapter: _Flow(sorted(fields.items())) for chapter, fields in sorted(baseline.kept.items())}
    if baseline.primers:
        data["primers"] = dict(sorted(baseline.primers.items()))
    data["pairs"] = dict(sorted(baseline.pairs.items()))
    data["verdicts"] = {key: _Flow(p_correct=_sorted(e.p_correct), p_wrong=_sorted(e.p_wrong), verdict=e.verdict)
                        for key, e in sorted(baseline.verdicts.items())}
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True,
                     width=100_000)
    return COMMENT + body


def obtained_path(path: Path) -> Path:
    """Where a run that regressed writes the baseline as it would record it: beside the shipped one, with `.obtained`
    before its suffix (pytest-regressions' habit), so that a CI job can upload it and a reviewer diff the two. Not a
    baseline any run reads (.gitignore has *.obtained.yaml)."""
    return path.with_suffix(".obtained" + path.suffix)


def write(path: Path, baseline: Baseline) -> None:
    """Atomic: the file is the old one or the new one, never half of either."""
    write_atomic(path, dumps(baseline), durable=True)


def rewrite(path: Path, change: Callable[[Baseline | None], tuple[Baseline, T]]) -> T:
    """Read the file as it is now, change it and write it, holding its lock throughout, so that two runs that
    record different chapters of one file at once both land (the second reads what the first wrote). A baseline that
    is a symbolic link is written through: the file it names is replaced and the link kept (replacing the link by a
    plain file left the file it named, perhaps shared by several projects, as it was: docs/ci.md)."""
    from filelock import FileLock

    path = Path(os.path.realpath(path))  # the lock and the write are the named file's, whichever link leads to it
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):
        # Every writer of this file holds its lock: a temporary file of it found now is a killed writer's.
        remove_stale_temporaries(path)
        new, outcome = change(read(path, lenient=True) if path.exists() else None)
        write(path, new)
    return outcome
