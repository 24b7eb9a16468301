"""What the `gotchas` fixture gives a Python test: cases built in Python, their ground truth executed by the same
executor and cache as the YAML chapters, scored by the session's model, each the same CaseResult a YAML item
produces. `record` puts one in the report's chapter tables, pairs, JSON, page and baseline, under the chapter and
pair the test names. Failing the test stays the test's choice.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ..cases.chapter import CaseFileError
from ..cases.transcript import CURSOR, PS1, parse
from ..cli.chapterfile import case_entry
from ..cli.snippet import parse_snippet
from ..results.schema import CaseResult, ChapterInfo
from ..results.verdict import Status
from ..scoring.scorer import GotchasError, Scorer
from ..truth.check import divergence, natural, output_start
from ..truth.collect import request_for
from ..truth.interpreters import Missing
from .state import PLUGIN, RECORDED


class Probe:
    """What the `gotchas` fixture gives a test: cases built in Python, scored by the session's model."""

    def __init__(self, request: pytest.FixtureRequest, scorer: Scorer) -> None:
        self.request, self.scorer = request, scorer
        self.plugin = request.config.stash[PLUGIN]
        self._infos: dict[str, ChapterInfo] = {}  # the chapter of each result this probe made, by result key

    def case(self, transcript: str, correct: str, wrong: str, *, id: str | None = None, chapter: str = "python",
             pair: str | None = None, interpreter: str = "3.11", env: dict[str, str] | None = None,
             note: str | None = None) -> CaseResult:
        """Score a cursor-marked transcript (`>>> ...` lines and output, `█` at the cut), its ground truth
        executed and checked exactly as a chapter's: a prompt Python does not print is an error."""
        case_id = id or self.request.node.name.replace("[", "-").replace("]", "").strip("-")
        fields: list[tuple[str, object]] = [("id", case_id), ("transcript", transcript), ("correct", correct),
                                            ("wrong", wrong), ("interpreter", interpreter)]
        if env:
            fields.append(("env", {k: str(v) for k, v in env.items()}))
        if note:
            fields.append(("note", note))
        text = f"chapter: {chapter}\ntitle: {chapter}\ncases:\n" + case_entry("  ", fields)
        where = f"{self.request.node.nodeid}"
        with tempfile.TemporaryDirectory(prefix="gotchas-probe-") as tmp:
            path = Path(tmp) / "chapter.yaml"
            path.write_text(text, encoding="utf-8")
            try:
                plan = self.plugin.collector.plan_chapter(path, where)
            except CaseFileError as error:
                raise GotchasError(str(error)) from None
        if plan.refused:
            raise GotchasError("ground truth refuses this case:\n" + "\n".join(plan.refused))
        planned = plan.planned[0]
        if planned.status != Status.SCORED:
            raise GotchasError(f"{where}: case {case_id!r} cannot be scored: {planned.message or planned.status}")
        result = self.scorer.score(planned)
        # The chapter is the test's, not a file's (the temporary file is gone); the other member of its pair is
        # another test's case, which the rollup joins by the pair's id.
        self._infos[result.key] = replace(
            planned.info, sha256=None, pairs={pair: [case_id]} if pair else {},
            path=str(self.request.node.path.relative_to(self.request.config.rootpath)))
        return result

    def new(self, snippet: str, wrong: str, **options: Any) -> CaseResult:
        """Execute a snippet (REPL lines, as `gotchas new` reads them), cut where its output and the misreading
        `wrong` (what a careless reader expects its last line to print) first differ, and score that case."""
        interpreter = options.get("interpreter", "3.11")
        found = self.plugin.collector.finder.find(interpreter)
        if isinstance(found, Missing):
            raise GotchasError(found.reason())
        lines = parse_snippet(snippet, {}).repl_lines
        if lines is None:
            raise GotchasError("gotchas.new takes REPL input lines; write a shell case as a transcript with case()")
        collector = self.plugin.collector
        parsed = parse("".join(PS1 + line + "\n" for line in lines) + CURSOR)
        env = tuple(sorted((k, str(v)) for k, v in (options.get("env") or {}).items()))
        request = request_for(found, parsed, env)
        rendered = collector.cache.get_or_execute(request, collector.runs, collector.limits)[0].text
        start = output_start(rendered, parsed.repl_input, None)
        output = rendered[start:]
        expected = wrong + "\n" if output.endswith("\n") and not wrong.endswith("\n") else wrong
        d = divergence(output, expected)
        if d in (len(output), len(expected)):
            raise GotchasError(f"the output {output!r} and the misreading {expected!r} never differ at one character")
        return self.case(rendered[:start + d] + CURSOR, natural(output[d:]), natural(expected[d:]),
                         **{k: v for k, v in options.items() if k != "snippet"})

    def record(self, result: CaseResult) -> CaseResult:
        """Put the result in the report: the chapter tables, pairs, JSON, page and baseline."""
        if result.key not in self._infos:
            raise GotchasError(f"gotchas.record: {result.key} is not a result of this test's gotchas.case or "
                               "gotchas.new")
        self.plugin.know(self._infos[result.key])
        self.request.node.stash.setdefault(RECORDED, []).append(result)
        return result
