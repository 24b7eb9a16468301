"""What the `gotchas` fixture gives a Python test: cases built in Python, their ground truth executed by the same
executor and cache as the YAML chapters, scored by the session's model, each the same CaseResult a YAML item
produces. `record` puts one in the report's chapter tables, pairs, JSON, page and baseline, under the chapter and
pair the test names. Failing the test stays the test's choice.
"""

from __future__ import annotations

from dataclasses import replace
import pytest

from ..cases.authoring import AuthoringError, build_case, chapter_of, cut, output_start, parse_snippet
from ..cases.transcript import CURSOR, parse
from ..results.schema import CaseResult, ChapterInfo
from ..results.verdict import Status
from ..errors import GotchasError
from ..report import wording_collection
from ..scoring.scorer import Scorer
from ..truth.collect import chapter_info, request_for
from ..truth.interpreters import Missing
from .state import SESSION, RECORDED


class Probe:
    """What the `gotchas` fixture gives a test: cases built in Python, scored by the session's model."""

    def __init__(self, request: pytest.FixtureRequest, scorer: Scorer) -> None:
        self.request, self.scorer = request, scorer
        self.gotchas = request.config.stash[SESSION]
        self._infos: dict[str, ChapterInfo] = {}  # the chapter of each result this probe made, by result key

    def case(self, transcript: str, correct: str, wrong: str, *, id: str | None = None, chapter: str = "python",
             pair: str | None = None, interpreter: str = "3.11", env: dict[str, str] | None = None,
             note: str | None = None) -> CaseResult:
        """Score a cursor-marked transcript (`>>> ...` lines and output, `█` at the cut), its ground truth
        executed and checked exactly as a chapter's: a prompt Python does not print is an error."""
        case_id = id or self.request.node.name.replace("[", "-").replace("]", "").strip("-")
        where = self.request.node.nodeid
        try:
            case = build_case(case_id, transcript, str(correct), str(wrong), interpreter=interpreter,
                              env={k: str(v) for k, v in (env or {}).items()}, note=note)
        except AuthoringError as error:
            raise GotchasError(f"{where}: {error}") from None
        path = self.request.node.path
        shown = str(path.relative_to(self.request.config.rootpath))
        # The other member of its pair is another test's case: the rollup joins them by the pair's id.
        built = chapter_of(chapter, path, [case])
        info = replace(chapter_info(built, shown, from_file=False), pairs={pair: [case_id]} if pair else {})
        chapter_plan = self.gotchas.collector.plan(built, replace(info, path=where))
        if chapter_plan.refused:
            raise GotchasError(wording_collection.refused_case(chapter_plan.refused))
        planned = chapter_plan.planned[0]
        if planned.status != Status.SCORED:
            raise GotchasError(f"{where}: case {case_id!r} cannot be scored: {planned.message or planned.status}")
        result = self.scorer.score(planned)
        self._infos[result.key] = info
        return result

    def new(self, snippet: str, wrong: str, *, id: str | None = None, chapter: str = "python",
            pair: str | None = None, interpreter: str = "3.11", env: dict[str, str] | None = None,
            note: str | None = None) -> CaseResult:
        """Execute a snippet (REPL lines, as `gotchas new` reads them), cut where its output and the misreading
        `wrong` (what a careless reader expects its last line to print) first differ, and score that case; the
        keywords are case()'s."""
        found = self.gotchas.collector.finder.find(interpreter)
        if isinstance(found, Missing):
            raise GotchasError(found.reason())
        try:
            parsed_snippet = parse_snippet(snippet)
        except AuthoringError as error:
            raise GotchasError(f"gotchas.new: {error}") from None
        if parsed_snippet.repl_lines is None:
            raise GotchasError("gotchas.new takes REPL input lines; write a shell case as a transcript with case()")
        collector = self.gotchas.collector
        parsed = parse(parsed_snippet.session())
        request = request_for(found, parsed, tuple(sorted((k, str(v)) for k, v in (env or {}).items())))
        rendered = collector.cache.get_or_execute(request, collector.runs, collector.limits)[0].text
        start = output_start(rendered, parsed.repl_input, None)
        try:
            found_cut = cut(rendered[start:], wrong)
        except AuthoringError as error:
            raise GotchasError(f"gotchas.new: {error}") from None
        return self.case(rendered[:start + found_cut.at] + CURSOR, found_cut.correct, found_cut.wrong, id=id,
                         chapter=chapter, pair=pair, interpreter=interpreter, env=env, note=note)

    def record(self, result: CaseResult) -> CaseResult:
        """Put the result in the report: the chapter tables, pairs, JSON, page and baseline."""
        if result.key not in self._infos:
            raise GotchasError(f"gotchas.record: {result.key} is not a result of this test's gotchas.case or "
                               "gotchas.new")
        self.gotchas.know(self._infos[result.key])
        self.request.node.stash.setdefault(RECORDED, []).append(result)
        return result
