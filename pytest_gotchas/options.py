"""Command-line options, each mirrored by an ini option, read into one typed Settings object."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .interpreters import parse_mapping

DTYPES = ("bfloat16", "float16", "float32")

# (flag, ini name, ini type, default, help); flags without a value are booleans.
OPTIONS: list[tuple[str, str, str, Any, str]] = [
    ("--gotchas", "gotchas", "bool", False,
     "collect chapter YAML files as gotcha cases (the plugin is inert without it)"),
    ("--gotchas-model", "gotchas_model", "string", None,
     "model to probe: a hub id, a local folder or a .gguf file (default: the embedded gemma-3-270m)"),
    ("--gotchas-dtype", "gotchas_dtype", "string", "bfloat16", "dtype the model runs in (default bfloat16, as in the spec)"),
    ("--gotchas-device", "gotchas_device", "string", None,
     "cpu, cuda or cuda:N (default: cuda when available, else cpu; under -n N each worker gets its own GPU); "
     "auto: device_map=\"auto\", one model spread over every GPU (for a model too large for one)"),
    ("--gotchas-softmax-dtype", "gotchas_softmax_dtype", "string", None,
     "dtype of the softmax at the cut (default: the model's dtype, as in the spec; float32 for finer probabilities)"),
    ("--gotchas-top-k", "gotchas_top_k", "string", "5", "how many top alternatives to record at the cut"),
    ("--gotchas-batch-size", "gotchas_batch_size", "string", "1",
     "group up to N prompts of equal token length in one forward pass (never padded); default 1"),
    ("--gotchas-python", "gotchas_python", "linelist", [],
     "VERSION=PATH: the interpreter to use for python VERSION (repeatable)"),
    ("--gotchas-runs", "gotchas_runs", "string", "3",
     "executions of each snippet; each must give the same answer (unpinned hash seeds vary per run)"),
    ("--gotchas-timeout", "gotchas_timeout", "string", "10", "seconds one snippet run may take before it is killed"),
    ("--gotchas-cache-dir", "gotchas_cache_dir", "string", None,
     "where converted models are kept (default: $XDG_CACHE_HOME/pytest-gotchas or ~/.cache/pytest-gotchas)"),
    ("--gotchas-json", "gotchas_json", "string", None, "write every number behind the report to this JSON file"),
    ("--gotchas-html", "gotchas_html", "string", None, "write a self-contained HTML report to this file"),
    ("--gotchas-baseline", "gotchas_baseline", "string", None,
     "baseline YAML to compare pair verdicts with (default: baselines/<model>-<dtype>-<device>.yaml under rootdir, when it exists)"),
    ("--gotchas-update-baseline", "gotchas_update_baseline", "bool", False,
     "record this run's verdicts in the baseline (only what ran is changed)"),
    ("--gotchas-baseline-any-model", "gotchas_baseline_any_model", "bool", False,
     "compare with a baseline recorded with another model or dtype"),
    ("--gotchas-strict", "gotchas_strict", "bool", False, "fail the run on every verdict that is not ok"),
]


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("gotchas", "probe a language model with executed Python transcripts")
    for flag, ini, kind, default, help_text in OPTIONS:
        dest = ini
        if kind == "bool":
            group.addoption(flag, action="store_true", default=None, dest=dest, help=help_text)
            parser.addini(ini, help_text, type="bool", default=default)
        elif kind == "linelist":
            group.addoption(flag, action="append", default=None, dest=dest, metavar="VERSION=PATH", help=help_text)
            parser.addini(ini, help_text, type="linelist", default=default)
        else:
            group.addoption(flag, action="store", default=None, dest=dest, help=help_text)
            parser.addini(ini, help_text, type="string", default=default)


def value(config: pytest.Config, name: str) -> Any:
    """The command line wins over the ini file."""
    given = config.getoption(name)
    return given if given is not None else config.getini(name)


@dataclass(frozen=True)
class Settings:
    enabled: bool
    model: str | None
    dtype: str
    device: str | None
    softmax_dtype: str | None
    top_k: int
    batch_size: int
    python: dict[str, str] = field(default_factory=dict)
    runs: int = 3
    timeout: float = 10.0
    cache_dir: Path = Path("~/.cache/pytest-gotchas")
    json: Path | None = None
    html: Path | None = None
    baseline: Path | None = None
    update_baseline: bool = False
    baseline_any_model: bool = False
    strict: bool = False


def read(config: pytest.Config) -> Settings:
    def text(name: str) -> str | None:
        raw = value(config, name)
        return str(raw).strip() or None if raw is not None else None

    def number(name: str, cast: type, minimum: float) -> Any:
        raw = text(name)
        try:
            result = cast(raw)
        except (TypeError, ValueError):
            raise pytest.UsageError(f"{_flag(name)} expects a number, got {raw!r}") from None
        if result < minimum:
            raise pytest.UsageError(f"{_flag(name)} must be at least {minimum}, got {raw}")
        return result

    def path(name: str) -> Path | None:
        raw = text(name)
        return Path(raw).expanduser() if raw else None

    for name in ("gotchas_dtype", "gotchas_softmax_dtype"):
        if text(name) is not None and text(name) not in DTYPES:
            raise pytest.UsageError(f"{_flag(name)} must be one of {', '.join(DTYPES)}, got {text(name)!r}")
    try:
        python = parse_mapping(list(value(config, "gotchas_python") or []))
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None
    default_cache = Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "pytest-gotchas"
    return Settings(
        enabled=bool(value(config, "gotchas")),
        model=text("gotchas_model"),
        dtype=text("gotchas_dtype") or "bfloat16",
        device=text("gotchas_device"),
        softmax_dtype=text("gotchas_softmax_dtype"),
        top_k=number("gotchas_top_k", int, 1),
        batch_size=number("gotchas_batch_size", int, 1),
        python=python,
        runs=number("gotchas_runs", int, 2),
        timeout=number("gotchas_timeout", float, 0.1),
        cache_dir=path("gotchas_cache_dir") or default_cache,
        json=path("gotchas_json"),
        html=path("gotchas_html"),
        baseline=path("gotchas_baseline"),
        update_baseline=bool(value(config, "gotchas_update_baseline")),
        baseline_any_model=bool(value(config, "gotchas_baseline_any_model")),
        strict=bool(value(config, "gotchas_strict")),
    )


def _flag(ini_name: str) -> str:
    return "--" + ini_name.replace("_", "-")
