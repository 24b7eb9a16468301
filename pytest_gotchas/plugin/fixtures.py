"""The fixtures: the model under test (session scope, one per model), and a probe for users' own Python tests.

A Python test builds a case from a transcript, or from a snippet and its misreading as `gotchas new` does; its
ground truth is executed by the same executor and cache as the YAML chapters, the session's model scores it, and the
result is the same CaseResult a YAML item produces. `record` puts it in the report's chapter tables, pairs, JSON,
page and baseline, under the chapter and pair the test names. Failing the test stays the test's choice.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest

from ..cases.chapter import CaseFileError
from ..cli.chapterfile import case_entry
from ..cli.snippet import parse_snippet
from ..truth.collect import request_for
from ..truth.check import divergence, natural, output_start
from ..truth.interpreters import Missing
from .nodes import PLUGIN
from ..results.schema import CaseResult
from ..scoring.scorer import GotchasError, Scorer
from ..cases.transcript import CURSOR, PS1, parse
from ..results.verdict import Status

RECORDED = pytest.StashKey[list[CaseResult]]()


@pytest.fixture(scope="session")
def gotchas_model(request: pytest.FixtureRequest) -> Scorer:
    """The model under test, loaded on first use and released at the end of its session (with several
    --gotchas-model, one instance per model, in sequence: one model in memory at a time).

    `.slot.get()` is the loaded model (`.model`, the transformers model; `.tokenizer`); `.score(planned)` scores a
    planned case. Chapter items and the `gotchas` fixture use it; a test rarely needs it directly.
    """
    plugin = request.config.stash[PLUGIN]
    model = getattr(request, "param", plugin.model_ids[0])
    scorer = plugin.scorer(model)
    yield scorer
    scorer.slot.release()


class Probe:
    """What the `gotchas` fixture gives a test: cases built in Python, scored by the session's model."""

    def __init__(self, request: pytest.FixtureRequest, scorer: Scorer) -> None:
        self.request, self.scorer = request, scorer
        self.plugin = request.config.stash[PLUGIN]

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
        if pair:  # the other member is another test's case: the rollup joins them by the pair's id
            result.chapter.pairs = {pair: [case_id]}
        result.chapter.sha256 = None  # the chapter is the test's, not a file's (the temporary file is gone)
        result.chapter.path = str(self.request.node.path.relative_to(self.request.config.rootpath))
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
        self.request.node.stash.setdefault(RECORDED, []).append(result)
        return result


@pytest.fixture
def gotchas(request: pytest.FixtureRequest, gotchas_model: Scorer) -> Probe:
    """Probe the model from a Python test: `gotchas.case(transcript, correct, wrong, id=..., chapter=...,
    pair=...)` or `gotchas.new(snippet, wrong, ...)` return the CaseResult a YAML case would give (`.verdict`,
    `.runs[0].p_correct` ...); `gotchas.record(result)` puts it in the report's tables, JSON, page and baseline.
    Asserting on it is the test's own choice: `assert result.verdict == "ok"`."""
    return Probe(request, gotchas_model)
