"""`gotchas merge`'s options for many models or checkpoints: the level of the merged report's tests, a new name for
one input's model (one model in two dtypes, or checkpoints that all call themselves the same), and an order along
which the page draws each chapter's count and mean log ratio (training steps, checkpoint names).

    gotchas merge step100.json step200.json --rename step100.json=ckpt-100 --rename step200.json=ckpt-200 \\
        --order ckpt-100=100 --order ckpt-200=200 --html series.html
"""

from __future__ import annotations

import argparse
from typing import Any

from ..settings.options import OptionError, level
from ..results.merging import NotOneModel, rename_model
from ..results.report import Report
from ..results.schema import ModelLabel
from .errors import CLIError


def add_arguments(merge: argparse.ArgumentParser) -> None:
    merge.add_argument("--level", type=_level, metavar="ALPHA",
                       help="significance level of the merged report's tests, Holm-corrected over all of them "
                            "(default: the inputs' level when they agree, else 0.05)")
    merge.add_argument("--rename", action="append", default=[], metavar="REPORT.json=ID",
                       help="call the one model of REPORT.json ID in the merged report (repeatable): one model run "
                            "in two dtypes, or checkpoints that share a name, become models of their own")
    merge.add_argument("--order", action="append", default=[], metavar="ID=LABEL",
                       help="place model ID at LABEL along an order (a training step, a checkpoint), in the order "
                            "given (repeatable): the table lists the models so and the page draws each chapter's "
                            "count and mean log ratio across it")


def _level(raw: str) -> float:
    """--gotchas-level's own validation, as argparse reports it."""
    try:
        return level(raw)
    except OptionError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _pair(raw: str, flag: str, shape: str) -> tuple[str, str]:
    key, sep, value = raw.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise CLIError(f"{flag} expects {shape}, got {raw!r}")
    return key.strip(), value.strip()


def rename(names: list[str], data: list[dict[str, Any]], renames: list[str]) -> None:
    """Give the one model of each named input its new id, in the input's JSON data, before anything reads it."""
    for raw in renames:
        file, new = _pair(raw, "--rename", "REPORT.json=ID")
        if file not in names:
            raise CLIError(f"--rename names {file!r}, which is not one of the reports to merge ({', '.join(names)})")
        try:
            rename_model(data[names.index(file)], new)
        except NotOneModel as refusal:
            raise CLIError(f"--rename {raw}: {file} holds {refusal.models} models; only a report of one model can be "
                           "renamed") from None


def place(report: Report, level: float, orders: list[str]) -> None:
    """Set the merged report's level and order (before anything computed from them is read)."""
    labels = [ModelLabel(*_pair(raw, "--order", "ID=LABEL")) for raw in orders]
    for label in labels:
        if label.model not in report.model_ids:
            raise CLIError(f"--order names model {label.model!r}, which no report to merge holds (models: "
                           f"{', '.join(report.model_ids) or 'none'})")
    seen = [label.model for label in labels]
    twice = sorted({m for m in seen if seen.count(m) > 1})
    if twice:
        raise CLIError(f"--order places model {twice[0]!r} twice: give each model one label")
    report.run.level = level
    report.run.order = labels


def command_words(args: argparse.Namespace) -> list[str]:
    words = [] if args.level is None else ["--level", f"{args.level:g}"]
    for flag in ("rename", "order"):
        for value in getattr(args, flag):
            words += [f"--{flag}", value]
    return words
