"""Collection's work for one chapter file: load it, execute every prompt under its interpreter, check the ground
truth, and decide for each case whether it is scored, shown unscored, or why not (crash, excluded, skipped).

No model and no pytest here: plugin/hooks.py turns the plan into items, and `gotchas new` uses the same plan to decide
whether a case it wrote would collect.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..cases import yamlfile
from ..cases.chapter import Case, Chapter, Prompt, load_chapter
from ..cases.families import drawn as drawn_instances, family_infos
from .execute import Cache, Executed, Execution, Limits, Request, default_jobs
from .check import Checked, CheckStatus, check
from .twins import twin_problem
from . import instances
from .interpreters import Finder, Interpreter, Missing
from ..results.schema import CaseResult, ChapterInfo, Patching, Run, SeedOutput
from ..cases.transcript import Transcript
from ..results.verdict import Status, Verdict


@dataclass
class Planned:
    """What collection decided for one case: the prompts it verified, or why the case cannot be scored."""

    case: Case
    chapter: Chapter
    info: ChapterInfo
    prompts: list[Prompt]
    status: Status
    message: str | None = None
    interpreter: Interpreter | None = None
    outputs: list[SeedOutput] = field(default_factory=list)
    # Why ground truth refuses the case (one message per prompt it refuses, each naming file, line and case): the
    # case is an item that fails with them, the chapter's other cases run.
    refusals: list[str] = field(default_factory=list)
    verified: bool = False  # its ground truth executed and checked (`Collector.verify`): status and refusals final

    @property
    def where(self) -> str:
        """file:line: case 'id', as every message about this case starts (a drawn case names its family, its
        instance and the slot values it was drawn with)."""
        return f"{self.instance}: case {self.case.id!r}" if self.case.drawn else (
            f"{self.info.path}:{self.case.line}: case {self.case.id!r}")

    @property
    def instance(self) -> str:
        """file:line (the family's): family 'id', instance 'id' (slot values), as a message about a drawn instance
        starts."""
        draw = self.case.drawn
        assert draw is not None
        return f"{self.info.path}:{draw.line}: family {draw.family!r}, instance {draw.unit!r} ({draw.shown})"

    def result(self, model: str | None, scoring: Scoring | None = None) -> CaseResult:
        """The case's result for `model`: what collection decided, and what scoring found where it was scored."""
        interpreter = f"{self.interpreter.version} {self.interpreter.path}" if self.interpreter else None
        found = scoring or Scoring(verdict=None, runs=[])
        return CaseResult(id=self.case.id, chapter=self.info.name, status=self.status, verdict=found.verdict,
                          model=model, runs=found.runs, interpreter=interpreter, outputs=self.outputs,
                          message=self.message, note=self.case.note, qualifiers=found.qualifiers,
                          reading_verdicts=found.reading_verdicts, patching=found.patching)


@dataclass(frozen=True)
class Scoring:
    """What scoring adds to a scored case's result (scoring/scorer.py): the case verdict and its qualifiers, each
    run, the verdict by every reading, and the patching of the pairs it is the last member of."""

    verdict: Verdict | None  # None: not scored (a result with nothing of scoring)
    runs: list[Run]
    qualifiers: list[Verdict] = field(default_factory=list)
    reading_verdicts: dict[str, Verdict] = field(default_factory=dict)
    patching: list[Patching] = field(default_factory=list)


@dataclass
class ChapterPlan:
    chapter: Chapter
    info: ChapterInfo  # what every result of the chapter records of it
    planned: list[Planned]
    refused: list[str]  # messages of cases whose ground truth contradicts them (each case's are its `refusals`)
    warnings: list[tuple[int, str]]  # (line, message) of implementation-defined mismatches


def chapter_info(chapter: Chapter, display: str, from_file: bool = True) -> ChapterInfo:
    """What every result of the chapter records of it, with the sha256 of the file's bytes (which version of the
    chapter it ran) when it is read from a file."""
    return ChapterInfo(
        name=chapter.name, label=chapter.label, title=chapter.title, path=display,
        implementation_defined=chapter.implementation_defined, case_ids=[c.id for c in chapter.cases],
        pairs={p.id: list(p.members) for p in chapter.pairs}, twins={t.id: list(t.members) for t in chapter.twins},
        sha256=hashlib.sha256(yamlfile.read_bytes(Path(chapter.path))[0]).hexdigest() if from_file else None,
        primers=primers_fact(chapter.primers), families=family_infos(chapter),
    )


SHOWN = 32  # characters of a primer's first line in primers_fact's short form


def primers_fact(primers: tuple[tuple[str, str], ...]) -> str:
    """The primers a chapter's prompts start with, as a baseline records them: "none", or the sha256 (16 hex) of
    their names and texts in order, then a short form a reader can recognise (each name and its first line)."""
    if not primers:
        return "none"
    digest = hashlib.sha256(json.dumps([list(p) for p in primers], ensure_ascii=False).encode()).hexdigest()[:16]
    shown = []
    for name, text in primers:
        lines = text.strip("\n").splitlines() or [""]
        first = lines[0] if len(lines[0]) <= SHOWN else lines[0][:SHOWN - 3] + "..."
        shown.append(f"{name}: {first!r}" + (f" +{len(lines) - 1} lines" if len(lines) > 1 else ""))
    return f"sha256 {digest}: {'; '.join(shown)}"


def shown(text: str) -> str:
    """Executed output as reports show it: a byte that was not UTF-8 (kept as a lone surrogate, see execute.py) as
    its escape, which a UTF-8 report can hold."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def request_for(interpreter: Interpreter, transcript: Transcript, env: tuple[tuple[str, str], ...]) -> Request:
    """Everything that can change what a transcript's session prints."""
    command = transcript.command
    return Request(
        interpreter=interpreter,
        repl_input=transcript.repl_input,
        args=command.args if command else None,
        shell_text=command.text if command else None,
        env=env,
    )


def _requests(every_planned: list[Planned]) -> list[tuple[Planned, int, Request]]:
    """What executing the cases' prompts asks, in case and prompt order, with each prompt's index (a case without an
    interpreter asks nothing)."""
    return [(planned, n, request_for(planned.interpreter, prompt.transcript, planned.case.env))
            for planned in every_planned if planned.interpreter is not None
            for n, prompt in enumerate(planned.prompts)]


class Collector:
    """Interpreters and the transcript cache of one process."""

    def __init__(self, finder: Finder, cache: Cache, limits: Limits, runs: int, variants: bool = False,
                 instances: int = 0, jobs: int | None = None) -> None:
        self.finder, self.cache, self.limits, self.runs = finder, cache, limits, runs
        # Whether the run puts the cases' variants to the model. Only what a run scores is executed: without
        # --gotchas-variants a cold run executes none of the library's variants (CI checks them: .ci/run).
        self.variants = variants
        self.instances = instances  # how many instances of each family the run draws (--gotchas-instances)
        self.jobs = jobs or default_jobs()  # snippets executed side by side (--gotchas-jobs)
        self._ahead: dict[Request, Executed] = {}  # what execute_ahead executed, for verify to check

    def load(self, path: Path, display: str) -> Chapter:
        """A chapter file, with the instances of its families the run draws."""
        return drawn_instances(load_chapter(path, display), self.instances)

    def plan_chapter(self, path: Path, display: str) -> ChapterPlan:
        """A chapter file, loaded and planned."""
        chapter = self.load(path, display)
        return self.plan(chapter, chapter_info(chapter, display))

    def plan(self, chapter: Chapter, info: ChapterInfo) -> ChapterPlan:
        """Every case of a chapter executed and checked; `info` is what its results record of it."""
        return self.verify(chapter, info, self.prepare(chapter, info))

    def prepare(self, chapter: Chapter, info: ChapterInfo) -> list[Planned]:
        """Every case of a chapter as planned before anything is executed: its prompts, its interpreter (or why it
        is skipped), scored or not. The plugin makes its items from these, and executes only the selected ones."""
        every_planned: list[Planned] = []
        for case in chapter.cases:
            found = self.finder.find(case.interpreter)
            prompts = chapter.prompts(case, variants=self.variants)
            if isinstance(found, Missing):
                every_planned.append(Planned(case, chapter, info, prompts, Status.SKIPPED, found.reason()))
                continue
            status = Status.SCORED if case.scored else Status.UNSCORED
            every_planned.append(Planned(case, chapter, info, prompts, status, case.unscored, interpreter=found))
        return every_planned

    def execute_ahead(self, chapters: list[list[Planned]], tick: Callable[[int, int], None] | None = None) -> None:
        """The prompts of several chapters' cases executed side by side, `jobs` at a time, in one pool whatever their
        chapter (a chapter's slowest snippet no longer holds the next chapter back), and kept for `verify`, which
        checks them chapter by chapter in the run's order: the transcripts, refusals and messages are those of
        chapters executed one after another. What an execution raised is raised by the verify of its chapter."""
        requests = [request for planned in chapters if planned
                    for request in [r for _, _, r in _requests(planned)]
                    + [r for _, _, r in self._drawn(planned[0].chapter, planned)[1]]]
        self._ahead.update(self.cache.execute_each(requests, self.runs, self.limits, self.jobs, tick))

    def _executed(self, requests: list[Request]) -> list[tuple[Execution, ...]]:
        """Each request's runs, in order: from execute_ahead where it executed them all (the first error among
        them raised, as a pool's map raises it), else executed now."""
        if not requests or any(r not in self._ahead for r in requests):
            return self.cache.execute_all(requests, self.runs, self.limits, self.jobs)
        found = []
        for request in requests:
            result = self._ahead[request]
            if isinstance(result, BaseException):
                raise result
            found.append(result)
        return found

    def verify(self, chapter: Chapter, info: ChapterInfo, every_planned: list[Planned]) -> ChapterPlan:
        """The prompts of `every_planned` (cases of one chapter, from `prepare`) executed and checked, in place: a
        case's status, message, outputs and refusals are set here. A twin is checked where both members are given."""
        requests = _requests(every_planned)
        drawn, partners = self._drawn(chapter, every_planned)
        executed = self._executed([r for _, _, r in requests] + [r for _, _, r in partners])
        refused, warnings = self._cut(chapter, every_planned, drawn, list(zip(requests, executed)),
                                      list(zip(partners, executed[len(requests):]))), []
        after: dict[tuple[str, str | None], str] = {}  # (case, primer) -> what its own transcript printed after the cut
        for (planned, n, _), runs in zip(requests, executed):
            prompt = planned.prompts[n]
            if planned.case.drawn is not None and planned.refusals:
                continue  # refused as it was cut
            checked = check(prompt.transcript.prompt, prompt.correct, prompt.wrong, runs)
            if checked.status == CheckStatus.OK and prompt.variant is None:
                after[(planned.case.id, prompt.primer)] = runs[0].text[len(prompt.transcript.prompt):]
            if planned.status == Status.UNSCORED:
                planned.outputs = [SeedOutput(run.seed, shown(run.text)) for run in runs]
            if checked.status == CheckStatus.OK or planned.status in (Status.CRASH, Status.EXCLUDED):
                continue
            body = self._describe(planned, prompt, checked, runs)
            if checked.status == CheckStatus.CRASH:
                # pytest puts the case's location before a skip reason
                planned.status, planned.message = Status.CRASH, body
            elif chapter.implementation_defined and checked.status in (CheckStatus.MISMATCH,
                                                                       CheckStatus.NONDETERMINISTIC):
                planned.status, planned.message = Status.EXCLUDED, body
                warnings.append((planned.case.line, f"{planned.where}: {body}\n  (implementation-defined chapter: "
                                                 f"the case is left out of scoring)"))
            else:
                refused.append(f"{planned.where}: {body}")
                planned.refusals.append(refused[-1])
        by_id = {planned.case.id: planned for planned in every_planned}
        for members, message in self._twins(chapter, info, after):
            refused.append(message)
            for member in members:  # both spellings fail with the message: neither alone is the twin
                by_id[member].refusals.append(message)
        for planned in every_planned:
            planned.verified = True
        return ChapterPlan(chapter, info, every_planned, refused, warnings)

    def _drawn(self, chapter: Chapter, every_planned: list[Planned]
               ) -> tuple[dict[str, tuple[Case, ...]], list[tuple[Case, Prompt, Request]]]:
        """The drawn instances among `every_planned`'s cases, and the partners' prompts their cuts need executed."""
        drawn = instances.units(chapter, [planned.case for planned in every_planned])
        return drawn, self._partners(chapter, drawn, {planned.case.id for planned in every_planned})

    def _partners(self, chapter: Chapter, drawn: dict[str, tuple[Case, ...]],
                  planned: set[str]) -> list[tuple[Case, Prompt, Request]]:
        """The first prompt of each member of a selected drawn instance that is not itself selected: its output is
        its partner's wrong answer."""
        found = []
        for members in drawn.values():
            for case in members:
                interpreter = self.finder.find(case.interpreter)
                if case.id not in planned and not isinstance(interpreter, Missing):
                    prompt = chapter.prompts(case)[0]
                    found.append((case, prompt, request_for(interpreter, prompt.transcript, case.env)))
        return found

    @staticmethod
    def _cut(chapter: Chapter, every_planned: list[Planned], drawn: dict[str, tuple[Case, ...]],
             own: list[tuple[tuple[Planned, int, Request], tuple[Execution, ...]]],
             partners: list[tuple[tuple[Case, Prompt, Request], tuple[Execution, ...]]]) -> list[str]:
        """Each drawn case of `every_planned` cut where its instance's outputs part (truth/instances.py), in place,
        or refused with its family, instance and slots; returns the refusals."""
        first = {p.case.id: instances.Executed(p.prompts[0].transcript.prompt, runs) for (p, n, _), runs in own
                 if n == 0 and p.case.drawn is not None}
        first.update({c.id: instances.Executed(prompt.transcript.prompt, runs) for (c, prompt, _), runs in partners})
        by_id = {planned.case.id: planned for planned in every_planned}
        refused: list[str] = []
        for members in drawn.values():
            if not all(case.id in first for case in members):
                continue  # an interpreter is missing: the member is skipped, and says why
            cuts = instances.cut_unit(members, first)
            for case in members:
                planned = by_id.get(case.id)
                if planned is None:
                    continue
                made = instances.cut_case(case, cuts[case.id]) if isinstance(cuts, dict) else cuts
                if isinstance(made, str):  # said of the instance: its messages name the cases they are about
                    message = f"{planned.instance}: {made}" if made is cuts else f"{planned.where}: {made}"
                    planned.refusals.append(message)
                    if message not in refused[-1:]:  # listed once, where both members carry it
                        refused.append(message)
                else:
                    planned.case, planned.prompts = made, chapter.prompts(made)
        return refused

    @staticmethod
    def _twins(chapter: Chapter, info: ChapterInfo,
               after: dict[tuple[str, str | None], str]) -> list[tuple[tuple[str, str], str]]:
        """A twin whose members both verified but print different text after the cut is refused; a member that did
        not verify (refused, crashed, skipped) has its own message."""
        problems: list[tuple[tuple[str, str], str]] = []
        for twin in chapter.twins:
            primers: list[str | None] = [name for name, _ in chapter.primers] or [None]
            for primer in primers:
                first, second = (after.get((member, primer)) for member in twin.members)
                if first is None or second is None:
                    continue
                problem = twin_problem(twin.members, (first, second))
                if problem:
                    under = f" under primer {primer!r}" if primer else ""
                    problems.append((twin.members, f"{info.path}:{twin.line}: twin {twin.id!r}{under}: {problem}"))
                    break
        return problems

    def _describe(self, planned: Planned, prompt: Prompt, checked: Checked, runs: tuple[Execution, ...]) -> str:
        interp = planned.interpreter
        assert interp is not None
        env = " ".join(f"{k}={v}" for k, v in planned.case.env) or "no variables set"
        primer = f"under primer {prompt.primer!r}: " if prompt.primer else ""
        primer = (f"variant {prompt.variant!r}: " if prompt.variant else "") + primer
        message = checked.message or ""
        if checked.status == CheckStatus.TIMEOUT:
            message += f"; the limit is {self.limits.timeout:g} s (--gotchas-timeout)"
        return f"{primer}{message}\n  (python {interp.version} at {interp.path}; {env}; {len(runs)} runs)"
