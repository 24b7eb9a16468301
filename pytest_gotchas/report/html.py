"""The HTML view: one self-contained page rendered from a Report with Jinja2 templates (autoescaped).

The page has inline CSS only (templates/report.css): no scripts, fonts, images or any other fetch, so it opens
offline and can be mailed around as one file. What it shows is built in Python first (report/page.py, the view
model: one layout for any number of models, one model being the case N = 1); the templates (page.html.j2 and its
includes) only lay that out, with the `pct` and `width` filters for numbers. Autoescaping makes text safe as HTML;
every text the page shows also goes through report/escape.py (the environment's `finalize`), so that a control or
bidirectional character from a chapter or a snippet's output is shown as its escape, not obeyed.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from ..files import write_atomic
from ..results.report import Report
from .escape import escape
from .page import build_page
from .page_runs import pct, width


@cache
def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("pytest_gotchas.report", "templates"),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined, finalize=_shown)
    env.filters.update(pct=pct, width=width)
    return env


def _shown(value: Any) -> Any:
    """Every `{{ }}` of the page, before autoescaping: text with its control characters escaped (newlines stay,
    for the blocks of output). Markup (the CSS) stays markup: escapes add no HTML."""
    if isinstance(value, str):
        return type(value)(escape(str(value), lines=True))
    return value


def render(report: Report) -> str:
    env = _environment()
    css = env.loader.get_source(env, "report.css")[0]
    return env.get_template("page.html.j2").render(page=build_page(report), css=css)


def write(path: Path | str, report: Report) -> None:
    """Atomic: a reader never sees half a page. Readable by others, as a page meant to be shared."""
    write_atomic(path, render(report))
