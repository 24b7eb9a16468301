"""`gotchas vary`: propose variants of a case, each executed and cut like the case.

For each rewriting of the case's REPL input (cli/rewrite.py: names renamed, integers shifted, an unrelated line
added) it executes the variant under the case's interpreter and environment (and the chapter's primer and prelude),
derives the variant's misreading by rewriting the case's misreading the same way, cuts where the variant's output
and that misreading first differ (the rule `gotchas new` uses), and keeps the variant only if its cut verifies as
collection would verify it (and, with --model, only if the model's tokenizer can represent it). It prints the
variants, or adds them to the case in the chapter file with --to, leaving the file's comments and layout alone.
"""

from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path
from typing import TextIO

from ..cases.chapter import Case, CaseFileError, Chapter, load_chapter
from ..truth.collect import request_for
from ..cases.authoring import AuthoringError, cut, output_start
from ..truth.check import CheckStatus, check
from ..truth.interpreters import Missing
from ..errors import GotchasError, ModelUnavailable
from ..cases.transcript import CURSOR, PS1, PS2
from ..results.verdict import Status
from .chapterfile import case_entry, install, stage, writing
from .errors import CLIError
from .rewrite import KINDS, Rewrite, rewrites
from .tools import Tools, settings_of

EXAMPLE = """\
examples:
  # propose four variants of a case and print them
  gotchas vary cases/0-pep289.yaml --id genexp-first-element -n 4

  # keep those the embedded model's tokenizer can read, and add them to the case
  gotchas vary cases/0-pep289.yaml --id genexp-first-element --model default --to cases/0-pep289.yaml
"""


def add_parser(commands: argparse._SubParsersAction, shared: argparse.ArgumentParser) -> None:
    vary = commands.add_parser(
        "vary", parents=[shared], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLE,
        help="propose variants of a case: the same semantics, written otherwise",
        description="Rewrite a case's REPL input (rename the names it binds, shift its integers, add an unrelated "
                    "statement), execute each variant, cut it where its output and the case's misreading (rewritten "
                    "the same way) diverge, and keep the variants whose cut verifies. Prints them, or adds them to "
                    "the case with --to.")
    vary.add_argument("chapter", metavar="CHAPTER.yaml", help="the chapter file that holds the case")
    vary.add_argument("--id", required=True, metavar="ID", help="the case to vary")
    vary.add_argument("-n", type=int, default=4, metavar="N", help="how many variants to try (default 4)")
    vary.add_argument("--kinds", type=_kinds, default=KINDS, metavar="KIND,...",
                      help=f"the rewritings to try, of {', '.join(KINDS)} (default: all). integers and strings "
                           "change values: leave them out where the answer depends on the exact value")
    vary.add_argument("--to", metavar="CHAPTER.yaml", help="add the variants to the case in this file (the same "
                                                           "chapter file)")
    vary.set_defaults(run=run_vary)


def run_vary(args: argparse.Namespace, out: TextIO) -> int:
    path = Path(args.chapter)
    if args.to is not None and Path(args.to).resolve() != path.resolve():
        raise CLIError(f"--to {args.to}: variants are added to their case, in {path} itself")
    try:
        chapter = load_chapter(path, str(path))
    except CaseFileError as error:
        raise CLIError(str(error)) from None
    case = next((c for c in chapter.cases if c.id == args.id), None)
    if case is None:
        raise CLIError(f"{path}: no case {args.id!r} (cases: {', '.join(c.id for c in chapter.cases)})")
    if case.transcript.repl_input is None or not case.scored:
        raise CLIError(f"{path}:{case.line}: case {case.id!r}: only scored REPL cases can be varied (a shell case's "
                       "program is one quoted argument)")
    with tempfile.TemporaryDirectory(prefix="gotchas-vary-") as tmp:
        tools = Tools(settings_of(args), Path(tmp), path)
        taken = {v.id for v in case.variants}
        found = []
        for rewrite in rewrites(case.transcript.repl_input, args.n, args.kinds):
            if rewrite.id in taken:
                continue
            variant = _variant(tools, chapter, case, rewrite, out)
            if variant is not None:
                found.append(variant)
        found = [v for v in found if _readable(tools, path, chapter, case, v, out)]
        if not found:
            raise CLIError(f"no variant of {case.id!r} verifies; nothing was written")
        fields = [_fields(*v) for v in found]
        if args.to is None:
            print(f"\n# {len(found)} variant(s), ready to paste under `variants:` in case {case.id!r}", file=out)
            for entry in fields:
                out.write(case_entry("  ", entry))
            return 0
        text = add_variants(path.read_text(encoding="utf-8"), case.id, fields, str(path))
        installed = False
        staged = writing(path, lambda: stage(text, path, Path(tmp)))
        try:
            plan = tools.collector.plan_chapter(staged, str(path))
            if plan.refused:
                raise CLIError(f"collection would refuse {path}, nothing was written:\n" + "\n".join(plan.refused))
            writing(path, lambda: install(staged, path))
            installed = True
        except CaseFileError as error:
            raise CLIError(f"collection would refuse {path}, nothing was written: {error}") from None
        finally:
            if not installed and staged.exists():
                staged.unlink()
        print(f"\nadded {len(found)} variant(s) to case {case.id!r} in {path}", file=out)
    return 0


def _kinds(text: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise argparse.ArgumentTypeError(f"unknown kind(s) {', '.join(unknown) or '(none given)'}; "
                                         f"choose from {', '.join(KINDS)}")
    return kinds


def _variant(tools: Tools, chapter: Chapter, case: Case, rewrite: Rewrite, out: TextIO
             ) -> tuple[str, str, str, str] | None:
    """(id, transcript, correct, wrong) of the variant, if its cut verifies; says why not otherwise."""
    found = tools.collector.finder.find(case.interpreter)
    if isinstance(found, Missing):
        raise CLIError(found.reason(flag="--python", ini=None))
    own = "".join((PS2 if line[:1].isspace() or line == "" else PS1) + line + "\n" for line in rewrite.lines)
    framed = chapter.framed(own)
    collector = tools.collector
    runs = collector.cache.get_or_execute(request_for(found, framed, case.env), collector.runs, collector.limits)
    frame = len(framed.prompt) - len(own)
    rendered = runs[0].text[frame:]
    try:
        start = output_start(rendered, rewrite.lines, None)
        original = case.transcript.prompt
        said = original[output_start(original, case.transcript.repl_input, None):]  # the case's output to the cut
        misread = rewrite.text(said + str(case.wrong))
    except ValueError as error:
        print(f"  {rewrite.id}: skipped: {error}", file=out)
        return None
    output = rendered[start:]
    if rewrite.keeps_values:
        printed = rewrite.text(said + str(case.correct))
        if not output.startswith(printed):
            print(f"  {rewrite.id}: skipped: it prints {output!r}, not what the case prints rewritten alike "
                  f"({printed!r}...): the rewriting changed the program", file=out)
            return None
    try:
        found_cut = cut(output, misread, whole=False)
    except AuthoringError as error:
        print(f"  {rewrite.id}: skipped: {error}", file=out)
        return None
    prompt = rendered[:start + found_cut.at]
    correct, wrong = found_cut.correct, found_cut.wrong
    checked = check(runs[0].text[:frame] + prompt, correct, wrong, runs)
    if checked.status != CheckStatus.OK:
        print(f"  {rewrite.id}: skipped: {checked.message}", file=out)
        return None
    print(f"  {rewrite.id}: cut after {prompt.rsplit(chr(10), 1)[-1][-30:]!r}: correct {correct!r}, wrong {wrong!r}",
          file=out)
    return rewrite.id, prompt + CURSOR, correct, wrong


def _readable(tools: Tools, path: Path, chapter: Chapter, case: Case, variant: tuple[str, str, str, str],
              out: TextIO) -> bool:
    """Whether every --model can read the variant's cut (scored as collection would plan it)."""
    if not tools.scorers:
        return True
    from ..truth.collect import Planned, chapter_info
    from ..cases.transcript import parse

    variant_id, text, correct, wrong = variant
    prompts = [p for p in chapter.prompts(case) if p.variant is None]
    framed = [type(p)(case, p.primer, chapter.framed(parse(text).prompt, p.primer), variant_id, correct, wrong)
              for p in prompts]
    planned = Planned(case, chapter, chapter_info(chapter, str(path)), framed, Status.SCORED)
    for scorer in tools.scorers:
        try:
            result = scorer.score(planned)
        except (GotchasError, ModelUnavailable) as error:
            print(f"  {variant_id}: skipped for {scorer.model_id}: {error}", file=out)
            return False
        print(f"  {variant_id}: {scorer.model_id}: {result.verdict} "
              + ", ".join(f"{r.p_correct * 100:.2f}% / {r.p_wrong * 100:.2f}%" for r in result.runs), file=out)
    return True


def _fields(variant_id: str, transcript: str, correct: str, wrong: str) -> list[tuple[str, object]]:
    return [("id", variant_id), ("transcript", transcript), ("correct", correct), ("wrong", wrong)]


def add_variants(text: str, case_id: str, entries: list[list[tuple[str, object]]], where: str) -> str:
    """The chapter text with `entries` added at the end of the case's `variants:` list (made if missing)."""
    lines = text.split("\n")
    head = next((i for i, ln in enumerate(lines) if re.match(rf"^(\s*)- id: [\"']?{re.escape(case_id)}[\"']?\s*$", ln)),
                None)
    if head is None:
        raise CLIError(f"{where}: cannot find `- id: {case_id}` to add variants to")
    indent = lines[head][:len(lines[head]) - len(lines[head].lstrip())]
    inner = indent + "  "
    end = head + 1
    while end < len(lines) and (not lines[end].strip() or lines[end].startswith(inner) or lines[end].startswith(
            indent + "  #")):
        end += 1
    while end > head + 1 and not lines[end - 1].strip():
        end -= 1
    has_list = any(ln == f"{inner}variants:" for ln in lines[head:end])
    block = [] if has_list else [f"{inner}variants:"]
    for entry in entries:
        block += case_entry(inner + "  ", entry).rstrip("\n").split("\n")
    return "\n".join(lines[:end] + block + lines[end:])
