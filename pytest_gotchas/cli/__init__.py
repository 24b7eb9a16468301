"""The `gotchas` command (also `python -m pytest_gotchas`): tools for writing cases and for combining reports. Each
subcommand is a module."""

from __future__ import annotations

import argparse
import sys

from . import imports, merge, new, vary
from ..report.escape import escape
from ..truth.execute import ExecutionError
from .errors import CLIError
from .tools import shared_parser

PROG = "gotchas"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="pytest-gotchas tools. `gotchas new` writes a case: it executes a snippet, finds where its "
                    "true output and a misreading diverge, and prints or appends the case. `gotchas merge` combines "
                    "the JSON reports of several runs (models, chapters, shards) into one report. `gotchas vary` "
                    "proposes variants of a case. `gotchas import` writes a chapter of pairs from programs in a "
                    "JSON Lines file.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    shared = shared_parser()
    new.add_parser(commands, shared)
    vary.add_parser(commands, shared)
    imports.add_parser(commands, shared)
    merge.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "run", None) is None:
        parser.print_help()
        return 2
    try:
        return args.run(args, sys.stdout)
    except (CLIError, ExecutionError) as error:
        sys.stdout.flush()
        # The message may quote a file's names and ids: escaped, as every view shows them.
        print(escape(f"{PROG} {args.command}: error: {error}", lines=True), file=sys.stderr)
        return 1
