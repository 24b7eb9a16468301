"""The HTML view: one self-contained page rendered from a Report with Jinja2 templates (autoescaped).

The page has inline CSS only (templates/report.css): no scripts, fonts, images or any other fetch, so it opens
offline and can be mailed around as one file. The templates compute no verdict, pair or count of their own: they
show what the Report holds.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from .. import __version__
from ..files import write_atomic
from ..results import CaseResult, Run
from ..verdict import NOISE_FLOOR, Status, Verdict
from .data import FORMAT_VERSION, Report
from .terminal import NEGLIGIBLE

CURSOR = "\u2588"  # █, where the model must continue
# Outcomes in the order the summary lists them: the verdicts, then the reasons a case was not scored.
KEYS = (*map(str, Verdict), "crash", "unscored", "excluded", "skipped")
CUT_LABELS = {"healed": "healed cut", "chain": "multi-token cut"}
CUT_WHY = {
    "healed": "the tokenizer merges the text before the cut with the candidates, so the model is read where the "
              "merged tokens start",
    "chain": "from the shared context a candidate takes several tokens; its probability is the product along its "
             "chain",
}


def pct(p: float | None) -> str:
    return "\u2013" if p is None else f"{p * 100:.2f}%"


def width(p: float | None) -> str:
    return f"{min(max(p or 0.0, 0.0), 1.0) * 100:.3f}%"


def shared_tail(runs: list[Run]) -> int:
    """How many trailing lines every primed prompt shares: the case itself; the lines above it are the primer."""
    split = [run.prompt.split("\n") for run in runs]
    n = 0
    while all(len(s) > n for s in split) and len({s[len(s) - 1 - n] for s in split}) == 1:
        n += 1
    return n


def prompt_parts(text: str, tail: int | None) -> tuple[str, str]:
    """(the primer's lines, the case's own lines) of a prompt; the first is empty when nothing is primed."""
    lines = text.split("\n")
    if tail is not None and 0 < tail < len(lines):
        return "\n".join(lines[:len(lines) - tail]) + "\n", "\n".join(lines[len(lines) - tail:])
    return "", text


def interpreters(cases: list[CaseResult]) -> str:
    return ", ".join(sorted({str(c.interpreter).split()[0] for c in cases if c.interpreter}))


@cache
def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("pytest_gotchas.report", "templates"),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined)
    env.filters.update(pct=pct, width=width, token=repr)
    env.globals.update(CURSOR=CURSOR, KEYS=KEYS, NOISE_FLOOR=NOISE_FLOOR, CUT_LABELS=CUT_LABELS, CUT_WHY=CUT_WHY,
                       SCORED=Status.SCORED, PRIME_DEP=Verdict.PRIME_DEP, shared_tail=shared_tail,
                       prompt_parts=prompt_parts, interpreters=interpreters, version=__version__,
                       zip=zip, FORMAT_VERSION=FORMAT_VERSION, NEGLIGIBLE=NEGLIGIBLE)
    return env


def render(report: Report) -> str:
    env = _environment()
    css = env.loader.get_source(env, "report.css")[0]
    return env.get_template("page.html.j2").render(report=report, css=css)


def write(path: Path | str, report: Report) -> None:
    """Atomic: a reader never sees half a page. Readable by others, as a page meant to be shared."""
    write_atomic(path, render(report))
