"""What the command-line tools share with the plugin: the options marked `cli` in options.py (spelled without the
`gotchas-` prefix), the snippet's interpreter and environment, and the collection and scoring steps built from them."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from ..cases import environment
from ..cases.chapter import VERSION
from ..model import names
from ..model.ref import ModelRef, short_ids
from .. import compat
from ..settings import wiring
from ..truth import sandbox
from .errors import CLIError
from ..settings.options import OPTIONS, OptionError, OptionKind, Settings, settings
from ..scoring.rows import softmax_refusal
from ..scoring.slot import Clock

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def validated(parse: Any) -> Any:
    def check(raw: str) -> Any:
        try:
            return parse(raw)
        except OptionError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return check


def _version(raw: str) -> str:
    if not VERSION.match(raw):
        raise argparse.ArgumentTypeError(f"expects a version such as 3.12, got {raw!r}")
    return raw


def _env(raw: str) -> tuple[str, str]:
    name, sep, value = raw.partition("=")
    if not sep or not _ENV_NAME.match(name):
        raise argparse.ArgumentTypeError(f"expects NAME=VALUE (e.g. PYTHONHASHSEED=0), got {raw!r}")
    refused = environment.message(name)
    if refused is not None:
        raise argparse.ArgumentTypeError(refused)
    return name, value


def shared_parser() -> argparse.ArgumentParser:
    """The options every tool takes: the snippet's interpreter and environment, and the plugin's `cli` options."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--interpreter", metavar="VERSION", type=_version,
                        help="the snippet's interpreter, e.g. 3.12 (default: the chapter's, else 3.11; a python3.X "
                             "command names its own)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", type=_env,
                        help="environment variable for the snippet, e.g. PYTHONHASHSEED=0 (repeatable)")
    for option in OPTIONS:
        if not option.cli:
            continue
        if option.kind == OptionKind.FLAG:
            parser.add_argument(option.cli_flag, dest=option.name, action="store_true", default=None, help=option.help)
            continue
        default = f" (default {option.shown_default or option.default})" if option.kind != OptionKind.LIST else ""
        action = "append" if option.kind == OptionKind.LIST else "store"
        parser.add_argument(option.cli_flag, dest=option.name, metavar=option.metavar, choices=option.choices,
                            type=validated(option.parse), action=action, help=option.help + default)
    return parser


def settings_of(args: argparse.Namespace) -> Settings:
    values = {option.name: getattr(args, option.name, None) for option in OPTIONS if option.cli}
    values["models"] = values.get("models") or []
    return settings(values)


def project_root(chapter: Path | None) -> Path:
    """The rootdir pytest would use to collect `chapter` (None: the current folder) from the current folder, by
    pytest's own rule (ini files, then setup.py, up from there; compat.py), so that a tool run from a
    subfolder such as cases/ hides the same project that collection hides."""
    where = [] if chapter is None else [str(chapter if chapter.exists() else chapter.parent)]  # a new file: its folder
    return compat.rootdir(where, Path.cwd())


class Tools:
    """Collection and scoring as the plugin wires them (settings/wiring.py), with the transcript cache in a folder of
    the caller's. One scorer per --model, in the order given, each model released before the next is loaded."""

    def __init__(self, settings: Settings, scratch: Path, chapter: Path | None = None) -> None:
        self.settings = settings
        refs = [ModelRef.parse(model) for model in settings.models]
        refused = [r for r in (*(names.refusal(ref, flag="--") for ref in refs),
                               softmax_refusal(settings.softmax_dtype, settings.dtype, flag="--")) if r]
        if refused:
            raise CLIError("\n".join(refused))
        try:  # as the plugin does: strong unless --isolation weak, hiding the rootdir pytest would collect it under
            self.isolation = sandbox.choose(settings.isolation, project=project_root(chapter))
        except sandbox.Unavailable as error:
            raise CLIError(str(error)) from None
        self.collector = wiring.collector(settings, scratch / "transcripts", self.isolation)
        self.scorers = [wiring.scorer(settings, model_id, ref, Clock(), None, flag="--")
                        for ref, model_id in zip(refs, short_ids(refs))]
