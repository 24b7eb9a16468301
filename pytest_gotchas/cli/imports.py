"""`gotchas import FILE.jsonl OUT.yaml`: a chapter of pairs from programs users bring.

Each JSON Lines record holds two programs (`a`, `b`: a snippet as `gotchas new` reads one). Both are executed as
collection executes a case (truth/: the interpreter the record names, the sandbox, several runs under other hash
seeds), and cases/imported.py decides what they make: a pair cut where their outputs first part, a twin, nothing, or a
refusal with the record's line and id. With --model every cut is also read by that model's tokenizer, and one it
cannot read is refused. The chapter is collected as it would be written before it is written; a record whose cases
collection would refuse is refused with collection's message.
"""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ..cases import transcript as transcripts
from ..cases import yamlfile
from ..cases.authoring import output_start
from ..cases.chapter import DEFAULT_INTERPRETER, CaseFileError
from ..cases.imported import (MEMBERS, Cut, Made, MadeKind, Member, NotCut, Record, Refusal, make, read_records,
                              unstable)
from ..cases.transcript import CURSOR
from ..results.verdict import Status
from ..errors import ModelUnavailable
from ..settings.options import integer
from ..truth.check import CheckStatus, check
from ..truth.collect import request_for
from ..truth.execute import Request
from ..truth.interpreters import Missing
from .chapterfile import case_entry, install, new_chapter_text, stage, writing
from .errors import CLIError
from .tools import Tools, settings_of, validated

IMPORT_RUNS = 5  # executions of each program: its output must not change across them (and across hash seeds)
ROUNDS = 3  # collections of the chapter, each without the records the last refused (a refusal leaves the rest as is)

EXAMPLE = """\
examples:
  gotchas import examples/import/pairs.jsonl cases/90-imported.yaml
  gotchas import pairs.jsonl imported.yaml --interpreter 3.12 --model default   # cuts read by gemma's tokenizer

a record (one line):
  {"id": "sorted-vs-sort", "a": "x = [3, 1, 2]\\nsorted(x)", "b": "x = [3, 1, 2]\\nx.sort()\\nx", "note": "..."}
"""


def add_parser(commands: argparse._SubParsersAction, shared: argparse.ArgumentParser) -> None:
    found = commands.add_parser(
        "import", parents=[shared], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLE,
        help="write a chapter of pairs from programs in a JSON Lines file",
        description="Read JSON Lines records {\"id\", \"a\", \"b\"} (optional \"interpreter\", \"env\", \"note\", and "
                    "\"wrong\" for programs that print the same), execute both programs as collection does, cut each "
                    "pair where the two outputs first part (each member's wrong candidate is its partner's output "
                    "there) and write a new chapter of them (docs/cases.md, \"Pairs from programs you bring\"). "
                    "Programs that print the same become twins, the same program twice is dropped, and a record that "
                    "cannot be cut is refused with its line, id and reason.")
    found.add_argument("records", metavar="FILE.jsonl", help="the records, one JSON object a line")
    found.add_argument("out", metavar="OUT.yaml", help="the chapter to write (a new file)")
    found.add_argument("--title", metavar="TEXT", help="the chapter's title (default: its name)")
    found.add_argument("--authoring-runs", type=validated(integer(2, 1000)), default=IMPORT_RUNS, metavar="N",
                       help="executions of each program, each under another hash seed unless the record pins one; a "
                            f"program whose output changes between them is refused (default {IMPORT_RUNS})")
    found.set_defaults(run=run_import)


@dataclass
class Imported:
    """The records as they are sorted: what each made, and those dropped or refused."""

    made: dict[str, tuple[Record, Made]]
    dropped: list[Record]
    refused: list[Refusal]


def run_import(args: argparse.Namespace, out: TextIO) -> int:
    source, target = Path(args.records), Path(args.out)
    text = _read(source)
    if target.exists():
        raise CLIError(f"{target} exists: `gotchas import` writes a new chapter (remove it or choose another name)")
    if not target.parent.is_dir():
        raise CLIError(f"{target}: the folder {target.parent} does not exist")
    records, refused = read_records(text, dict(args.env))
    python = args.interpreter or DEFAULT_INTERPRETER
    with tempfile.TemporaryDirectory(prefix="gotchas-import-") as tmp:
        session = Tools(settings_of(args), Path(tmp), target)
        found = _sorted(session, records, refused, python, args.authoring_runs)
        _readable(session, found)
        staged = _collected(session, found, target, args.title, python, Path(tmp))
        if staged is not None:
            writing(target, lambda: install(staged, target))
    _summary(found, source, target if staged is not None else None, bool(session.scorers), out)
    if staged is None:
        raise CLIError(f"no record of {source} makes a pair or a twin: nothing was written")
    return 0


def _read(source: Path) -> str:
    try:
        return source.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise CLIError(f"{source} is not UTF-8 text ({error.reason} at byte {error.start})") from None
    except OSError as error:
        raise CLIError(f"cannot read {source}: {error.strerror or error}") from None


def _sorted(session: Tools, records: list[Record], refused: list[Refusal], python: str, runs: int) -> Imported:
    """Both programs of every record executed `runs` times, and what each record makes."""
    found = Imported({}, [], list(refused))
    planned = []
    for record in records:
        try:
            planned.append((record, [_request(session, record, member, python) for member in range(2)]))
        except NotCut as error:
            found.refused.append(Refusal(record.line, record.id, str(error)))
    requests = [request for _, pair in planned for request, _ in pair]
    executed = iter(session.collector.cache.execute_all(requests, runs, session.collector.limits))
    for record, pair in planned:
        results = [next(executed) for _ in pair]
        try:
            members = tuple(_member(record, m, parsed, found_runs) for m, ((_, parsed), found_runs)
                            in enumerate(zip(pair, results)))
            made = make(record, (members[0], members[1]))
            _stable(record, made, results)
        except NotCut as error:
            found.refused.append(Refusal(record.line, record.id, str(error)))
            continue
        if made.kind == MadeKind.SAME:
            found.dropped.append(record)
        else:
            found.made[record.id] = (record, made)
    return found


def _request(session: Tools, record: Record, member: int, python: str) -> tuple[Request, transcripts.Transcript]:
    snippet = record.snippets[member]
    parsed = transcripts.parse(snippet.session())
    version = (parsed.command.interpreter if parsed.command else None) or record.interpreter or python
    interpreter = session.collector.finder.find(version)
    if isinstance(interpreter, Missing):
        raise NotCut(interpreter.reason(flag="--python", ini=None))
    env = parsed.command.env if parsed.command else tuple(sorted(record.env.items()))
    return request_for(interpreter, parsed, env), parsed


def _member(record: Record, member: int, parsed: transcripts.Transcript, runs: tuple) -> Member:
    problem = check("", None, None, runs)
    if problem.status in (CheckStatus.CRASH, CheckStatus.TIMEOUT):
        raise NotCut(f"program {MEMBERS[member]!r}: {problem.message}")
    text = runs[0].text
    try:
        return Member(text, output_start(text, parsed.repl_input, parsed.command))
    except ValueError as error:
        raise NotCut(f"program {MEMBERS[member]!r}: {error}") from None


def _stable(record: Record, made: Made, results: list[tuple]) -> None:
    """Every run of each member prints what its first run printed, up to the end of its longer candidate."""
    for member, (cut, runs) in enumerate(zip(made.cuts, results)):
        problem = unstable([run.text for run in runs], len(cut.prompt) + max(len(cut.correct), len(cut.wrong)))
        if problem is not None:
            raise NotCut(f"program {MEMBERS[member]!r}: {problem}")


def _readable(session: Tools, found: Imported) -> None:
    """With --model: each cut read by each model's tokenizer (scoring/cut.py), as scoring will read it; a cut one
    cannot read (a divergence inside a token that the tokenizer merges across the cut, an unknown character ...) is
    refused."""
    from ..scoring.cut import CutError, plan_cut

    for scorer in session.scorers:
        try:
            tokenizer = scorer.slot.get().tokenizer
        except ModelUnavailable as error:
            raise CLIError(f"nothing was written: {error}") from None
        for record_id, (record, made) in list(found.made.items()):
            for member, cut in zip(MEMBERS, made.cuts):
                try:
                    plan_cut(tokenizer, cut.prompt, cut.correct, cut.wrong, bos=scorer.config.bos)
                except CutError as error:
                    found.refused.append(Refusal(record.line, record_id, f"model {scorer.model_id} cannot read the "
                                                                         f"cut of {record_id}-{member}: {error}"))
                    del found.made[record_id]
                    break
        scorer.slot.release()


def _fields(record: Record, member: str, cut: Cut, python: str) -> list[tuple[str, object]]:
    fields: list[tuple[str, object]] = [("id", f"{record.id}-{member}"), ("transcript", cut.prompt + CURSOR),
                                        ("correct", cut.correct), ("wrong", cut.wrong)]
    if record.interpreter is not None and record.interpreter != python:
        fields.append(("interpreter", record.interpreter))
    if record.env and record.snippets[MEMBERS.index(member)].command is None:
        fields.append(("env", record.env))
    if record.note:
        fields.append(("note", record.note))
    return fields


def chapter_text(found: Imported, target: Path, title: str | None, python: str) -> str:
    """The chapter of every pair and twin made, in the file's order: each member a case, as `gotchas new` writes."""
    entries = [_fields(record, member, cut, python) for record, made in found.made.values()
               for member, cut in zip(MEMBERS, made.cuts)]
    text = new_chapter_text(target, title, python, entries[0]) + "".join(case_entry("  ", e) for e in entries[1:])
    for kind in (MadeKind.PAIR, MadeKind.TWIN):
        ids = [i for i, (_, made) in found.made.items() if made.kind == kind]
        if ids:
            text += f"{kind}s:\n" + "".join(f"  {i}: [{i}-a, {i}-b]\n" for i in ids)
    return text


def _collected(session: Tools, found: Imported, target: Path, title: str | None, python: str,
               tmp: Path) -> Path | None:
    """The chapter staged beside its target once collection accepts every case of it; a record whose case it
    refuses is refused with collection's words, and the rest collected again. None: nothing left to write."""
    for _ in range(ROUNDS):
        if not found.made:
            return None
        staged = writing(target, lambda: stage(chapter_text(found, target, title, python), target, tmp))
        try:
            plan = session.collector.plan_chapter(staged, str(target))
        except (CaseFileError, yamlfile.YamlFileError) as error:
            staged.unlink()
            raise CLIError(f"the chapter written from the records does not load, nothing was written: "
                           f"{error}") from None
        refusing = {p.case.id.rsplit("-", 1)[0]: p for p in plan.planned
                    if p.refusals or p.status in (Status.CRASH, Status.EXCLUDED)}
        if not refusing:
            return staged
        staged.unlink()
        for record_id, planned in refusing.items():
            record, _ = found.made.pop(record_id)
            why = "; ".join(planned.refusals) or planned.message or str(planned.status)
            found.refused.append(Refusal(record.line, record_id, f"collection refuses it: {why}"))
    raise CLIError(f"collection kept refusing cases after {ROUNDS} rounds, nothing was written")


def _summary(found: Imported, source: Path, written: Path | None, tokenized: bool, out: TextIO) -> None:
    pairs = sum(1 for _, made in found.made.values() if made.kind == MadeKind.PAIR)
    twins = len(found.made) - pairs
    total = pairs + twins + len(found.dropped) + len(found.refused)
    print(f"{source}: {_count(total, 'record')}: {_count(pairs, 'pair')}, {_count(twins, 'twin')}, "
          f"{len(found.dropped)} dropped, {len(found.refused)} refused", file=out)
    if written is not None:
        print(f"wrote {written}: {_count(pairs, 'pair')} and {_count(twins, 'twin')}, "
              f"{_count(2 * (pairs + twins), 'case')}", file=out)
    if found.dropped:
        print("dropped (the same program twice):", file=out)
        for record in found.dropped:
            print(f"  {source}:{record.line}: record {record.id!r}", file=out)
    if found.refused:
        print("refused:", file=out)
        for refusal in sorted(found.refused, key=lambda r: r.line):
            named = f"record {refusal.record!r}: " if refusal.record is not None else ""
            print(f"  {source}:{refusal.line}: {named}{refusal.reason}", file=out)
    if not tokenized:
        print("the cuts were read by no tokenizer: with --model, a cut the model cannot read is refused too",
              file=out)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
