"""`gotchas new`: write a case from a snippet and its misreading.

It executes the snippet exactly as collection does, shows the transcript, cuts where the true output and the
misreading first diverge, optionally checks that cut against a model's tokenizer and scores it, and prints (or
appends to a chapter file) a case that collection accepts. Every step is the plugin's own: cases.load_chapter reads
what is written, collect.Collector executes and checks it, scoring.Scorer scores it. Nothing is written unless the
chapter that results collects, and unless the cut holds in --authoring-runs executions (20 by default, far more
than collection's 3), so that a flaky snippet is caught while it is written rather than in one collection of four.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

from ..cases import transcript
from ..cases import yamlfile
from ..cases.chapter import CASE_ID, DEFAULT_INTERPRETER, Case, CaseFileError, Chapter, load_chapter
from ..truth.collect import Collector, Planned, request_for
from ..cases.authoring import AuthoringError, Snippet, cut, output_start, parse_snippet, with_lead_in
from ..truth.check import CheckStatus, check
from ..truth.interpreters import Missing
from ..report.wording import pct
from ..results.schema import Run
from ..errors import GotchasError, ModelUnavailable
from ..scoring.scorer import Scorer
from ..cases.transcript import CURSOR
from ..results.verdict import NOISE_FLOOR, Status, Verdict
from .chapterfile import append_entry, case_entry, install, new_chapter_text, stage, writing
from .errors import CLIError
from .snippet import read_snippet
from ..settings.options import integer
from .tools import Tools, settings_of, validated
from ..results.vocabulary import ReadingName

DEFAULT_ID = "new-case"
# A coin flip agrees with itself in 20 runs once in 2**19: collection's 3 runs let it through once in 4.
AUTHORING_RUNS = 20
# A case alone is scored but belongs to no pair, and pairs are what the run counts and the baseline gates.
PARTNER = ("\na case is one test; a pair, which the run counts and CI gates, is two cases that differ in one "
           "construct\nand whose right answers differ: write the partner with `gotchas new` too, then list both under `pairs:` "
           "in the\nchapter (docs/cases.md)")
PROMPTS = (">>>", "...", "$")  # what starts an input line of a transcript: a model that expects one expects no output
PRINTED = "<new case>"  # where messages say a printed case is: line numbers count from its stand-in chapter
READ = {"text": "every token (and chain of tokens) that writes the candidate", "plain": "one token each, at the cut",
        "healed": "one token each, healed (backed off to a clean token boundary)",
        "chain": "a multi-token chain (prefer a cut that tokenizes plainly)"}

EXAMPLE = """\
examples:
  # print a case: the snippet on stdin, the misreading of what its last line prints
  printf 'fs = []\\nfor i in range(3):\\n    fs.append(lambda: i)\\n[f() for f in fs]\\n' \\
    | gotchas new --interpreter 3.11 --wrong '[0, 1, 2]'

  # check the cut against the embedded model, then append the case to a chapter
  gotchas new snippet.py --wrong '[0, 1, 2]' --model default --to cases/my-chapter.yaml --id late-closure

  # a shell command names its interpreter and environment itself
  echo 'PYTHONHASHSEED=0 python3.12 -c "print({str(x) for x in range(5)})"' \\
    | gotchas new --wrong "{'0', '1', '2', '3', '4'}"
"""


def add_parser(commands: argparse._SubParsersAction, shared: argparse.ArgumentParser) -> None:
    new = commands.add_parser(
        "new", parents=[shared], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLE,
        help="write a case from a snippet and its misreading",
        description="Execute a snippet exactly as `pytest --gotchas` collection does, print its transcript, cut it "
                    "where the true output and the misreading first diverge, and print a ready YAML case (or "
                    "append it to a chapter with --to). The case is written only if collection accepts it.\n\n"
                    "The snippet is REPL input (bare lines, or the >>> / ... lines of a pasted transcript) or one "
                    "shell command (python3.X -c \"...\", optionally after `$ `). The misreading is compared with "
                    "what Python prints after the last input line (or after the command).",
    )
    new.add_argument("snippet", nargs="?", default="-", help="file holding the snippet; - or nothing: stdin")
    new.add_argument("--wrong", required=True, metavar="TEXT",
                     help="the output a careless reader expects, e.g. the whole line '[0, 1, 2]'")
    new.add_argument("--to", metavar="CHAPTER.yaml",
                     help="append the case to this chapter file (created if missing) instead of printing it")
    new.add_argument("--id", metavar="ID", help=f"the case id (required with --to; default {DEFAULT_ID})")
    new.add_argument("--lead-in", metavar="CODE",
                     help="REPL lines typed before the snippet, in the same session, whose output the transcript "
                          "shows first: an output the model can continue, where a bare snippet's cut reads as "
                          "waiting for more input (a noise verdict; docs/cases.md, \"A lead-in\")")
    new.add_argument("--note", metavar="TEXT", help="a note stored with the case")
    new.add_argument("--title", metavar="TEXT", help="title of a chapter that --to creates")
    new.add_argument("--authoring-runs", type=validated(integer(2, 1000)), default=AUTHORING_RUNS, metavar="N",
                     help="executions the case must hold in before it is written, far more than collection's --runs "
                          "so that a flaky snippet is caught now (unpinned: a different hash seed each run; "
                          f"default {AUTHORING_RUNS})")
    new.set_defaults(run=run_new)


@dataclass
class Found:
    """The executed snippet, cut where the output and the misreading first diverge."""

    own_prompt: str  # the case's own transcript (after any primer/prelude) up to the cut
    correct: str
    wrong: str
    where: list[tuple[str, object]]  # the case's own `interpreter` / `env` keys


def run_new(args: argparse.Namespace, out: TextIO) -> int:
    if args.to and not args.id:
        raise CLIError("--to needs --id, the new case's id")
    case_id = args.id or DEFAULT_ID
    if not CASE_ID.match(case_id):
        raise CLIError(f"--id {case_id!r}: use letters, digits, `-`, `_` and `.`, starting with a letter or digit")
    if args.wrong == "":
        raise CLIError("--wrong is empty: give the output a careless reader expects")
    env = dict(args.env)
    settings = settings_of(args)
    try:
        snippet = parse_snippet(read_snippet(args.snippet, sys.stdin), env)
        if args.lead_in is not None:
            snippet = with_lead_in(snippet, args.lead_in)
    except AuthoringError as error:
        raise CLIError(str(error)) from None
    target = Path(args.to) if args.to else None
    if target is not None and target.exists() and not target.is_file():
        raise CLIError(f"--to {target}: not a file")
    try:
        base = yamlfile.read_text(target, str(target)) if target is not None and target.exists() else None
    except yamlfile.YamlFileError as error:
        raise CLIError(f"--to {error}") from None
    if target is not None and base is None and not target.parent.is_dir():
        raise CLIError(f"--to {target}: the folder {target.parent} does not exist")
    display = str(target) if target is not None else PRINTED

    with tempfile.TemporaryDirectory(prefix="gotchas-new-") as tmp:
        session = Tools(settings, Path(tmp), target)
        if snippet.ignored:
            print(f"(ignoring {snippet.ignored} pasted output line(s): the output is executed, not copied)", file=out)
        found = _execute(session, snippet, args, env, base, target, Path(tmp), display, out)
        fields = _fields(case_id, found, args.note)
        result_text = _chapter_text(base, target, args.title, args.interpreter, fields, display)
        installed = False
        staged = writing(target, lambda: stage(result_text, target, Path(tmp)))
        try:
            nothing = "nothing was written" if target is not None else "no case was printed"
            planned = _collects(session, staged, display, case_id, nothing, args.authoring_runs)
            _holds_in_every_run(session.collector, planned, args.authoring_runs, nothing, out)
            for scorer in session.scorers:
                _score(scorer, planned, out, nothing, args.lead_in)
            print(PARTNER, file=out)
            if target is None:
                print("\n# the case, ready to paste under `cases:` in a chapter file", file=out)
                out.write(case_entry("  ", fields))
            else:
                writing(target, lambda: install(staged, target))
                installed = True
                print(f"\nwrote case {case_id!r} to {target}:{planned.case.line}", file=out)
        finally:
            if not installed and staged.exists():
                staged.unlink()
    return 0


def _chapter_text(base: str | None, target: Path | None, title: str | None, python: str | None,
                  fields: list[tuple[str, object]], display: str) -> str:
    if base is not None:
        return append_entry(base, fields, display)
    if target is not None:
        return new_chapter_text(target, title, python or DEFAULT_INTERPRETER, fields)
    # Printing only: a stand-in chapter with no defaults of its own, which is what the printed case assumes.
    return "chapter: new\ntitle: new\ncases:\n" + case_entry("  ", fields)


def _placeholder(snippet: Snippet, case_id: str, where: list[tuple[str, object]]) -> list[tuple[str, object]]:
    """An unscored case holding just the snippet: loading it tells how collection frames and runs it."""
    fields: list[tuple[str, object]] = [("id", case_id), ("transcript", snippet.session()),
                                        ("unscored", "placeholder")]
    return fields + where


def _where(snippet: Snippet, python: str | None, env: dict[str, str], chapter_python: str | None,
           chapter_env: dict[str, str]) -> list[tuple[str, object]]:
    """The `interpreter` and `env` keys the case needs beyond its chapter's defaults (None: always write them).
    A shell case carries both on its command line."""
    fields: list[tuple[str, object]] = []
    if snippet.command is not None:
        command = transcript.parse(f"$ {snippet.command}\n{CURSOR}").command
        assert command is not None  # parse_snippet kept it as a command
        named = command.interpreter
        if named is not None and python is not None and named != python:
            raise CLIError(f"the command runs python{named} but --interpreter says {python}; drop one of them")
        if named is None and python is not None and python != chapter_python:
            fields.append(("interpreter", python))
        return fields
    if python is not None and python != chapter_python:
        fields.append(("interpreter", python))
    own_env = {k: v for k, v in env.items() if chapter_env.get(k) != v}
    if own_env:
        fields.append(("env", own_env))
    return fields


def _execute(session: Tools, snippet: Snippet, args: argparse.Namespace, env: dict[str, str],
             base: str | None, target: Path | None, tmp: Path, display: str, out: TextIO) -> Found:
    case_id = args.id or DEFAULT_ID
    # Loaded once without keys of its own, the case shows the chapter's defaults; then with the keys it needs.
    chapter, case = _load_placeholder(snippet, case_id, [], base, target, args, tmp, display)
    if display == PRINTED:  # a printed case may be pasted anywhere: it names what it was run with
        where = _where(snippet, args.interpreter, env, None, {})
    else:
        where = _where(snippet, args.interpreter, env, case.interpreter, dict(case.env))
    if where:
        chapter, case = _load_placeholder(snippet, case_id, where, base, target, args, tmp, display)
    found = session.collector.finder.find(case.interpreter)
    if isinstance(found, Missing):
        raise CLIError(found.reason(flag="--python", ini=None))
    prompt = chapter.prompts(case)[0]
    collector = session.collector
    runs = collector.cache.get_or_execute(request_for(found, prompt.transcript, case.env), collector.runs,
                                         collector.limits)
    text = runs[0].text
    frame = len(prompt.transcript.prompt) - len(case.transcript.prompt)
    own = text[frame:]
    env_shown = " ".join(f"{k}={v}" for k, v in case.env) or "no variables set"
    framing = _framing(chapter, prompt.primer)
    print(f"python {found.version} ({found.path}); {env_shown}; {len(runs)} run(s){framing}", file=out)
    print(own if own.endswith("\n") else own + "\n", end="", file=out)
    problem = check("", None, None, runs)
    if problem.status in (CheckStatus.CRASH, CheckStatus.TIMEOUT):
        limit = f" within --timeout {collector.limits.timeout:g}s" if problem.status == CheckStatus.TIMEOUT else ""
        raise CLIError(f"{problem.message}; a case must run to completion under python {found.version}{limit}")
    if not text.startswith(prompt.transcript.prompt[:frame]):
        raise CLIError(f"the chapter's primer/prelude does not print what {display} shows")
    try:
        start = frame + output_start(own, case.transcript.repl_input, case.transcript.command)
    except ValueError as error:
        raise CLIError(str(error)) from None
    output = text[start:]
    try:
        found_cut = cut(output, args.wrong)
    except AuthoringError as error:
        raise CLIError(str(error)) from None
    d, correct_token, wrong_token = found_cut.at, found_cut.correct, found_cut.wrong
    wrong = args.wrong + "\n" if output.endswith("\n") and not args.wrong.endswith("\n") else args.wrong
    own_prompt = text[frame:start + d]
    last_line = own_prompt.rsplit("\n", 1)[-1]
    print(f"\ncut at line {own_prompt.count(chr(10)) + 1} of the transcript, after {last_line[-40:]!r}:", file=out)
    print(f"  correct {correct_token!r:<12} Python prints   {output[:d + 40]!r}", file=out)
    print(f"  wrong   {wrong_token!r:<12} the misreading  {wrong[:d + 40]!r}", file=out)
    return Found(own_prompt, correct_token, wrong_token, where)


def _holds_in_every_run(collector: Collector, planned: Planned, wanted: int, nothing: str, out: TextIO) -> None:
    """Execute each prompt of the case `wanted` times, far more than collection does, and refuse the case unless
    every run agrees with it."""
    if wanted <= collector.runs:
        return
    case, interpreter = planned.case, planned.interpreter
    assert interpreter is not None and case.correct is not None and case.wrong is not None
    requests = [request_for(interpreter, prompt.transcript, planned.case.env) for prompt in planned.prompts]
    pinned = requests[0].pinned_seed
    seeds = f"PYTHONHASHSEED={pinned}" if pinned is not None else f"PYTHONHASHSEED=1..{wanted}"
    executed = collector.cache.execute_all(requests, wanted, collector.limits)
    for prompt, request, runs in zip(planned.prompts, requests, executed):
        checked = check(prompt.transcript.prompt, case.correct, case.wrong, runs)
        if checked.status == CheckStatus.OK:
            continue
        primer = f"under primer {prompt.primer!r}: " if prompt.primer else ""
        hint = _why_it_varies(collector, planned, wanted) if checked.status == CheckStatus.NONDETERMINISTIC else ""
        raise CLIError(f"the case does not hold in every run, {nothing}: in {len(runs)} runs ({seeds}; "
                       f"--authoring-runs), {primer}{checked.message}{hint}")
    print(f"the cut held in all {wanted} runs ({seeds}; --authoring-runs)", file=out)


def _why_it_varies(collector: Collector, planned: Planned, wanted: int) -> str:
    """A hint for output that changes between runs. Varying hash seeds cannot tell the seed from time or
    randomness, so an unpinned case runs again under one seed; under a pinned seed the message already says."""
    case, interpreter = planned.case, planned.interpreter
    if interpreter is None or "PYTHONHASHSEED" in dict(case.env):
        return ""
    for prompt in planned.prompts:
        request = request_for(interpreter, prompt.transcript, planned.case.env)
        pinned = replace(request, env=tuple(sorted({**dict(request.env), "PYTHONHASHSEED": "0"}.items())))
        again = collector.cache.get_or_execute(pinned, max(wanted, collector.runs), collector.limits)
        end = len(prompt.transcript.prompt) + max(len(case.correct or ""), len(case.wrong or ""))
        if len({run.text[:end] for run in again}) > 1:
            return ("\n(it changes under one hash seed too, PYTHONHASHSEED=0: it depends on something else, such as "
                    "time or randomness; make the snippet deterministic)")
    return "\n(the output changes with the hash seed: pin it with --env PYTHONHASHSEED=0)"


def _load_placeholder(snippet: Snippet, case_id: str, where: list[tuple[str, object]], base: str | None,
                      target: Path | None, args: argparse.Namespace, tmp: Path, display: str) -> tuple[Chapter, Case]:
    text = _chapter_text(base, target, args.title, args.interpreter, _placeholder(snippet, case_id, where), display)
    staged = stage(text, None, tmp)
    try:
        chapter = load_chapter(staged, display)
    except CaseFileError as error:
        raise CLIError(f"collection would refuse this case: {error}") from None
    finally:
        staged.unlink()
    return chapter, next(c for c in chapter.cases if c.id == case_id)  # a duplicate id was refused above


def _framing(chapter: Chapter, primer: str | None) -> str:
    parts = ([f"primer {primer!r}"] if primer else []) + (["the prelude"] if chapter.prelude else [])
    return f"; shown after the chapter's {' and '.join(parts)}" if parts else ""


def _fields(case_id: str, found: Found, note: str | None) -> list[tuple[str, object]]:
    fields: list[tuple[str, object]] = [("id", case_id), ("transcript", found.own_prompt + CURSOR),
                                        ("correct", found.correct), ("wrong", found.wrong)]
    fields += found.where
    if note:
        fields.append(("note", note))
    return fields


def _collects(session: Tools, staged: Path, display: str, case_id: str, nothing: str, wanted: int) -> Planned:
    """Collect the chapter as it would be written: every refusal of collection refuses the write."""
    what = "this case" if display == PRINTED else display
    try:
        plan = session.collector.plan_chapter(staged, display)
    except CaseFileError as error:
        raise CLIError(f"collection would refuse {what}, {nothing}: {error}") from None
    planned = next(p for p in plan.planned if p.case.id == case_id)
    if plan.refused:
        hint = ""
        if any("between runs" in m for m in plan.refused):
            hint = _why_it_varies(session.collector, planned, wanted)
        raise CLIError(f"collection would refuse {what}, {nothing}:\n" + "\n".join(plan.refused) + hint)
    if planned.status in (Status.CRASH, Status.EXCLUDED):
        raise CLIError(f"collection would not score this case, {nothing}: {planned.message}")
    assert planned.status == Status.SCORED, planned.status
    return planned


def _score(scorer: Scorer, planned: Planned, out: TextIO, nothing: str, lead_in: str | None) -> None:
    print(f"\nloading model {scorer.model_id} ...", file=out, flush=True)
    try:
        result = scorer.score(planned)
    except ModelUnavailable as error:
        raise CLIError(f"{nothing}: {error}") from None
    except GotchasError as error:
        raise CLIError(f"this model cannot score the cut, {nothing}: {error}") from None
    finally:
        scorer.slot.release()
    info = scorer.model_info
    assert info is not None  # set by the score above
    print(f"model {info.name} ({info.dtype}, {info.device}):", file=out)
    for run in result.runs:
        label = f"  [{run.primer}]" if run.primer else ""
        for name in (ReadingName.TEXT, ReadingName.TOKEN):
            reading = run.readings.get(name)
            if reading is None:
                continue
            chosen = " (the verdict)" if name == run.main else ""
            how = READ[name] if name == ReadingName.TEXT else READ[reading.kind]
            print(f"  {name} reading{label}{chosen}: {how}", file=out)
            print(f"    P(correct) {pct(reading.p_correct)}  P(wrong) {pct(reading.p_wrong)}  coverage "
                  f"{pct(reading.coverage)}  margin {pct(reading.margin)}  -> {reading.verdict}", file=out)
            for side, shown in (("correct", reading.correct_tokens), ("wrong", reading.wrong_tokens)):
                # the text reading lists its largest contributions; the token reading its chain of tokens
                text = ", ".join(shown) if name == ReadingName.TEXT else "+".join(map(repr, shown))
                print(f"    {side + ':':<8} {text or '-'}", file=out)
        plain = run.readings.get(ReadingName.PLAIN)
        if plain is not None:
            print(f"  plain reading at the full prompt: {pct(plain.p_correct)} / {pct(plain.p_wrong)} "
                  f"({plain.verdict})", file=out)
        print("  top: " + ", ".join(f"{top.token!r} {pct(top.p)}" for top in run.top), file=out)
        as_text, as_token = run.readings.get(ReadingName.TEXT), run.readings[ReadingName.TOKEN]
        if as_text is not None and as_text.verdict != as_token.verdict:
            print(f"  WARNING: the text and token readings disagree ({as_text.verdict} against "
                  f"{as_token.verdict}): a candidate is a prefix of likelier tokens, or the cut heals; "
                  "the text reading counts every token that writes the candidate", file=out)
    print(f"  verdict: {result.verdict}", file=out)
    if result.verdict == Verdict.NOISE and result.runs:
        print(noise_advice(result.runs[0], lead_in), file=out)


def noise_advice(run: Run, lead_in: str | None) -> str:
    """Why a new case is noise and what to do: the model's top token says what it reads at the cut; a lead-in
    (an output shown before the snippet's) is the remedy docs/cases.md gives, and --lead-in adds one."""
    reading = run.readings[run.main]
    top = run.top[0] if run.top else None
    if top is None:
        why = "the model expects neither candidate there"
    elif top.token.strip() and any(marker.startswith(top.token.strip()) for marker in PROMPTS):
        why = (f"the model's top token there is {top.token!r} ({pct(top.p)}): it reads the transcript as waiting "
               "for more input, not as printing an answer")
    else:
        why = f"the model's top token there is {top.token!r} ({pct(top.p)}), neither candidate"
    if lead_in is None:
        what = ("give it an output to continue before the cut: a lead-in, REPL lines typed before the snippet whose "
                "output has the answer's shape (the same code on other values, say). Run this command again with "
                "--lead-in CODE to write the case with one")
    else:
        what = ("the lead-in given did not lift it: show an output closer to the answer's shape (--lead-in), or "
                "cut inside the output, after the part every reader agrees on")
    return (f"  noise: neither candidate reaches {pct(NOISE_FLOOR)} at the cut (P(correct) {pct(reading.p_correct)}, "
            f"P(wrong) {pct(reading.p_wrong)}), so the case says nothing of what the model knows; {why}.\n"
            f"  What to do (docs/cases.md, \"A lead-in\"): {what}.")
