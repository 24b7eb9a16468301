"""One process's gotchas state: interpreters, the transcript cache, the model (loaded lazily, once) and the
results. It wires the steps together so that plugin.py only translates between pytest and these calls."""

from __future__ import annotations

import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import cases as cases_mod
from .cases import Case, Chapter, Prompt
from .execute import Cache, Limits, Request, Run
from .groundtruth import Checked, check
from .interpreters import Finder, Interpreter, Missing
from .options import Settings
from .results import CRASH, EXCLUDED, SCORED, SKIPPED, UNSCORED, CaseResult, ChapterInfo, RunResult
from .verdict import case_verdict, run_verdict


class GotchasError(Exception):
    """A user-facing error: shown as its message alone, never as a traceback."""


class ModelUnavailable(GotchasError):
    """The model could not be loaded: the run stops after the first case that needed it."""


@dataclass
class Planned:
    """What collection decided for one case: the prompts it verified, or why the case cannot be scored."""

    case: Case
    chapter: Chapter
    info: ChapterInfo
    prompts: list[Prompt]
    status: str  # SCORED | UNSCORED | CRASH | EXCLUDED | SKIPPED
    message: str | None = None
    interpreter: Interpreter | None = None
    outputs: list[list[str]] = field(default_factory=list)

    def result(self, **values: Any) -> CaseResult:
        interpreter = f"{self.interpreter.version} {self.interpreter.path}" if self.interpreter else None
        base = dict(id=self.case.id, chapter=self.info, status=self.status, verdict=None, interpreter=interpreter,
                    outputs=self.outputs, message=self.message, note=self.case.note)
        return CaseResult(**{**base, **values})


@dataclass
class ChapterPlan:
    chapter: Chapter
    planned: list[Planned]
    refused: list[str]  # messages of cases whose ground truth contradicts them: the file fails to collect
    warnings: list[tuple[int, str]]  # (line, message) of implementation-defined mismatches


def chapter_info(chapter: Chapter, display: str) -> ChapterInfo:
    return ChapterInfo(
        name=chapter.name, label=chapter.label, title=chapter.title, path=display,
        implementation_defined=chapter.implementation_defined, case_ids=[c.id for c in chapter.cases],
        pairs={p.id: list(p.members) for p in chapter.pairs}, twins={t.id: list(t.members) for t in chapter.twins},
    )


PHASES = ("collection", "model_load", "tokenizer_load", "cuts", "forward", "report")


class GotchasSession:
    def __init__(self, settings: Settings, cache_dir: Path | None, worker_id: str | None = None,
                 cuts_dir: Path | None = None) -> None:
        self.settings = settings
        self.finder = Finder(overrides=settings.python)
        self.cache = Cache(cache_dir)
        self.limits = Limits(timeout=settings.timeout)
        self.worker_id = worker_id
        self.cuts_dir = cuts_dir  # None: no cache of cut plans, and the tokenizer is loaded with the model
        self._cut_cache: Any = None
        self._loaded: Any = None
        self._load_error: str | None = None
        self.results: list[CaseResult] = []
        # Wall seconds of this process per phase (plugin.py adds collection and report); see timings().
        self.seconds = dict.fromkeys(PHASES, 0.0)
        self.forward_passes = self.forward_calls = self.prompt_tokens = 0

    # -- collection: load, execute, check ---------------------------------------------------------------------

    def plan_chapter(self, path: Path, display: str) -> ChapterPlan:
        chapter = cases_mod.load_chapter(path, display)
        info = chapter_info(chapter, display)
        planned: list[Planned] = []
        requests: list[tuple[Planned, Prompt, Request]] = []
        for case in chapter.cases:
            found = self.finder.find(case.interpreter)
            prompts = chapter.prompts(case)
            if isinstance(found, Missing):
                planned.append(Planned(case, chapter, info, prompts, SKIPPED, found.reason()))
                continue
            plan = Planned(case, chapter, info, prompts, UNSCORED if not case.scored else SCORED, case.unscored,
                           interpreter=found)
            planned.append(plan)
            for prompt in prompts:
                requests.append((plan, prompt, _request(found, prompt)))
        executed = self.cache.execute_all([r for _, _, r in requests], self.settings.runs, self.limits)
        refused, warnings = [], []
        for (plan, prompt, _), runs in zip(requests, executed):
            checked = check(prompt.transcript.prompt, plan.case.correct, plan.case.wrong, runs)
            if plan.status == UNSCORED:
                plan.outputs = [[run.seed, run.text] for run in runs]
            if checked.status == "ok" or plan.status in (CRASH, EXCLUDED):
                continue
            where = f"{display}:{plan.case.line}: case {plan.case.id!r}"
            body = _describe(plan, prompt, checked, runs, self.limits)
            if checked.status == "crash":
                plan.status, plan.message = CRASH, body  # pytest puts the case's location before a skip reason
            elif chapter.implementation_defined and checked.status in ("mismatch", "nondeterministic"):
                plan.status, plan.message = EXCLUDED, body
                warnings.append((plan.case.line, f"{where}: {body}\n  (implementation-defined chapter: "
                                                 f"the case is left out of scoring)"))
            else:
                refused.append(f"{where}: {body}")
        return ChapterPlan(chapter, planned, refused, warnings)

    # -- scoring ----------------------------------------------------------------------------------------------

    def model(self) -> Any:
        """The model, loaded on first use; a failure is remembered so that it is reported once, not per case."""
        if self._loaded is None and self._load_error is None:
            from .model import ModelLoadError, ModelSpec, load_model, resolve_device

            started = time.perf_counter()  # before resolve_device, which imports torch
            auto = self.settings.device == "auto"  # device_map="auto": one model over every GPU
            spec = ModelSpec(name=self.settings.model, dtype=self.settings.dtype, device_map_auto=auto,
                             device=None if auto else resolve_device(self.settings.device, self.worker_id))
            try:
                self._loaded = load_model(spec, self.settings.cache_dir, log=_notice,
                                          lazy_tokenizer=self.cuts_dir is not None)
            except ModelLoadError as error:
                self._load_error = str(error)
            tokenizer = self._loaded.tokenizer_seconds if self._loaded is not None else 0.0
            self.seconds["model_load"] += time.perf_counter() - started - tokenizer
        if self._load_error is not None:
            raise ModelUnavailable(self._load_error)
        return self._loaded

    def score(self, plan: Planned) -> CaseResult:
        from .cutcache import CutCache
        from .model import ModelLoadError
        from .score import CutError, forward_contexts, forward_groups, plan_cut, score_batch

        loaded = self.model()
        case = plan.case
        if self._cut_cache is None:
            self._cut_cache = CutCache(self.cuts_dir, loaded.tokenizer_key)
        texts = [(p.transcript.prompt, case.correct, case.wrong) for p in plan.prompts]
        started = self._clock(loaded)
        cached = [self._cut_cache.get(*t) for t in texts]
        decoded: dict[int, str] = {}  # token id -> text, for the top-k
        for hit in cached:
            decoded.update(hit[1] if hit else {})
        known = len(decoded)
        try:  # the tokenizer (lazy) is loaded here only if a cut or a top-k token is not in the cache
            cuts = [hit[0] if hit else plan_cut(loaded.tokenizer, *t) for hit, t in zip(cached, texts)]
            started = self._tick("cuts", started, loaded)
            scores = score_batch(loaded, cuts, softmax_dtype=self.settings.softmax_dtype, top_k=self.settings.top_k,
                                 batch_size=self.settings.batch_size, decoded=decoded)
            self._tick("forward", started, loaded)
        except CutError as error:
            raise GotchasError(f"{plan.info.path}:{case.line}: case {case.id!r}: {error}") from None
        except ModelLoadError as error:
            self._load_error = str(error)
            raise ModelUnavailable(self._load_error) from None
        if None in cached or len(decoded) > known:
            for t, cut in zip(texts, cuts):
                self._cut_cache.put(*t, cut, decoded)
        contexts = forward_contexts(cuts)
        self.forward_passes += len(contexts)
        self.forward_calls += len(forward_groups(list(contexts), self.settings.batch_size))
        self.prompt_tokens += sum(len(c) for c in contexts)
        runs = []
        for prompt, s in zip(plan.prompts, scores):
            plain = None if s.plain_p_correct is None else run_verdict(s.plain_p_correct, s.plain_p_wrong)
            runs.append(RunResult(
                primer=prompt.primer, prompt=prompt.transcript.prompt, correct=case.correct, wrong=case.wrong,
                p_correct=s.p_correct, p_wrong=s.p_wrong, coverage=s.p_correct + s.p_wrong,
                margin=abs(s.p_correct - s.p_wrong), verdict=run_verdict(s.p_correct, s.p_wrong), reading=s.kind,
                correct_tokens=list(s.correct_tokens), wrong_tokens=list(s.wrong_tokens),
                top=[[t, p] for t, p in s.top], plain_p_correct=s.plain_p_correct, plain_p_wrong=s.plain_p_wrong,
                plain_verdict=plain, softmax_dtype=s.softmax_dtype, batch_size=self.settings.batch_size,
                forward_passes=s.forward_passes, other_softmax_dtype=s.other_softmax_dtype,
                other_p_correct=s.other_p_correct, other_p_wrong=s.other_p_wrong,
                other_verdict=None if s.other_p_correct is None else run_verdict(s.other_p_correct, s.other_p_wrong),
            ))
        other = [r.other_verdict for r in runs]
        return plan.result(verdict=case_verdict([r.verdict for r in runs]), runs=runs, model=_model_info(loaded),
                           other_verdict=case_verdict(other) if None not in other else None)

    @staticmethod
    def _clock(loaded: Any) -> tuple[float, float]:
        return time.perf_counter(), loaded.tokenizer_seconds

    def _tick(self, phase: str, started: tuple[float, float], loaded: Any) -> tuple[float, float]:
        """Add the time since ``started`` to ``phase``, less any tokenizer load in between (its own phase)."""
        now = self._clock(loaded)
        self.seconds[phase] += (now[0] - started[0]) - (now[1] - started[1])
        return now

    def timings(self) -> dict[str, Any]:
        """What this process spent, as plain values for the JSON report's run section: cheap counters only."""
        if self._loaded is not None:
            self.seconds["tokenizer_load"] = self._loaded.tokenizer_seconds
        cuts = self._cut_cache
        return {
            "seconds": {k: round(v, 4) for k, v in self.seconds.items()},
            "forward_passes": self.forward_passes,  # contexts run
            "forward_calls": self.forward_calls,  # model calls: fewer when --gotchas-batch-size grouped some
            "prompt_tokens": self.prompt_tokens,
            "tokenizer_loaded": bool(self._loaded is not None and self._loaded.tokenizer_loaded),
            "torch_threads": sys.modules["torch"].get_num_threads() if "torch" in sys.modules else None,
            "transcript_cache": {"hits": self.cache.hits, "misses": self.cache.misses},
            "cut_cache": {"hits": cuts.hits if cuts else 0, "misses": cuts.misses if cuts else 0},
        }


def _notice(line: str) -> None:
    """Before slow one-time work (converting a GGUF), say why the run is waiting; stderr reaches the terminal
    from xdist workers too."""
    sys.stderr.write(f"gotchas: {line}\n")
    sys.stderr.flush()


def _model_info(loaded: Any) -> dict[str, Any]:
    from dataclasses import asdict

    # Plain values only: the dict travels to the xdist controller inside the report, and torch.__version__ is a
    # str subclass (TorchVersion) that execnet cannot serialize.
    info = {k: str(v) if isinstance(v, str) else v for k, v in asdict(loaded.info).items()}
    info["hardware"] = _hardware(info["device"])  # the baseline records it: kernels round differently per ISA
    return info


def _hardware(device: str) -> str:
    """What decides how bfloat16 kernels round (docs/determinism.md): the GPU, or the CPU's vector capability."""
    import torch

    if "cuda" in device and torch.cuda.is_available():
        match = re.search(r"cuda:(\d+)", device)
        index = int(match[1]) if match else torch.cuda.current_device()
        major, minor = torch.cuda.get_device_capability(index)
        return f"{torch.cuda.get_device_name(index)} (sm_{major}{minor})"
    if device.startswith("cpu"):
        return f"cpu {torch.backends.cpu.get_cpu_capability()}"
    return device


def _request(interpreter: Interpreter, prompt: Prompt) -> Request:
    command = prompt.transcript.command
    return Request(
        interpreter=interpreter,
        repl_input=prompt.transcript.repl_input,
        args=command.args if command else None,
        shell_text=command.text if command else None,
        env=prompt.case.env,
    )


def _describe(plan: Planned, prompt: Prompt, checked: Checked, runs: tuple[Run, ...], limits: Limits) -> str:
    interp = plan.interpreter
    env = " ".join(f"{k}={v}" for k, v in plan.case.env) or "no variables set"
    primer = f"under primer {prompt.primer!r}: " if prompt.primer else ""
    message = checked.message
    if checked.status == "timeout":
        message += f"; the limit is {limits.timeout:g} s (--gotchas-timeout)"
    return f"{primer}{message}\n  (python {interp.version} at {interp.path}; {env}; {len(runs)} runs)"


def worker_id() -> str | None:
    return os.environ.get("PYTEST_XDIST_WORKER")
